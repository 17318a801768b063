//! A deliberate background load: busy threads that spin until dropped, to
//! show how the noise floor follows contention.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Busy threads that spin until dropped: a deliberate background load.
pub struct BusyLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyLoad {
    pub fn start(n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ i as u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..4096 {
                            x = std::hint::black_box(
                                x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                            );
                        }
                    }
                })
            })
            .collect();
        BusyLoad { stop, threads }
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
