//! A global allocator that can shift every heap block by a random number of
//! cache lines: heap layout randomisation for worker processes.
//!
//! A fresh process already re-randomises where the heap, stack, libraries
//! and code land (ASLR); inside one process, glibc hands freed chunks back
//! at the same addresses, so the engine's data structures sit at the same
//! offsets relative to each other every time. Padding each block by 0 to 63
//! cache lines (Curtsinger and Berger's Stabilizer does the like) samples
//! those offsets too. It was measured to spread, not remove, the per-process
//! bias on its own, which is why epochs of fresh processes come first.
//!
//! Every block carries its offset in the word before it, padded or not, so
//! blocks allocated before [`enable`] free correctly after it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The offset header: the distance from the system block to the user block.
const HEADER: usize = 16;
/// Cache lines a block may be shifted by, at most (exclusive).
const MAX_LINES: u64 = 64;

/// 0: padding off; otherwise the state of a xorshift generator.
static STATE: AtomicU64 = AtomicU64::new(0);

/// Shift every block allocated from now on by a draw from `seed`.
pub fn enable(seed: u64) {
    STATE.store(seed | 1, Ordering::Relaxed);
}

/// The next padding in cache lines (0 while off).
fn next_lines() -> u64 {
    let mut s = STATE.load(Ordering::Relaxed);
    if s == 0 {
        return 0;
    }
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    // Racing threads may draw the same value: harmless, it is only layout.
    STATE.store(s, Ordering::Relaxed);
    s % MAX_LINES
}

/// The loopbench binary's allocator (see the module docs).
pub struct PaddingAllocator;

fn front(layout: &Layout, lines: u64) -> (usize, usize) {
    let align = layout.align().max(HEADER);
    // A multiple of `align`, so the user block keeps its alignment.
    let step = align.max(64);
    (align + lines as usize * step, align)
}

// SAFETY: every block is a System block of `front + size` bytes aligned to
// `align`; the user pointer is `front` bytes in, `front` a multiple of
// `align` and at least 16, and the word before it holds `front`.
unsafe impl GlobalAlloc for PaddingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (front, align) = front(&layout, next_lines());
        let Some(total) = front.checked_add(layout.size()) else {
            return std::ptr::null_mut();
        };
        let Ok(sys) = Layout::from_size_align(total, align) else {
            return std::ptr::null_mut();
        };
        let base = unsafe { System.alloc(sys) };
        if base.is_null() {
            return base;
        }
        unsafe {
            let user = base.add(front);
            (user as *mut usize).sub(1).write(front);
            user
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe {
            let front = (ptr as *mut usize).sub(1).read();
            let align = layout.align().max(HEADER);
            let sys = Layout::from_size_align_unchecked(front + layout.size(), align);
            System.dealloc(ptr.sub(front), sys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size and alignment keep their alignment, hold their
    /// bytes and free correctly, padded or not, including blocks allocated
    /// before padding was turned on.
    #[test]
    fn blocks_are_aligned_intact_and_freed() {
        let a = PaddingAllocator;
        let mut blocks = Vec::new();
        for round in 0..2 {
            if round == 1 {
                enable(0x5eed);
            }
            for align in [1usize, 8, 16, 32, 64, 128, 4096] {
                for size in [1usize, 7, 64, 1000, 70_000] {
                    let l = Layout::from_size_align(size, align).unwrap();
                    let p = unsafe { a.alloc(l) };
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    unsafe { std::ptr::write_bytes(p, 0xAB, size) };
                    blocks.push((p, l));
                }
            }
        }
        for (p, l) in blocks {
            let bytes = unsafe { std::slice::from_raw_parts(p, l.size()) };
            assert!(bytes.iter().all(|&b| b == 0xAB));
            unsafe { a.dealloc(p, l) };
        }
        STATE.store(0, Ordering::Relaxed);
    }
}
