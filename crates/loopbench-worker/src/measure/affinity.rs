//! Pinning the timing thread to one core.
//!
//! Hygiene, not a cure: pinned, no migration lands inside a rep, but the
//! layout bias between processes stays (it was measured pinned too; see
//! DESIGN.md rule 11). Every arm of a session pins to the same core, and the
//! results record which.

/// The cores this process may run on, ascending.
pub fn allowed() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getaffinity fills one cpu_set_t through a valid pointer.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            return (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect();
        }
    }
    (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
}

/// Pin the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<(), super::MeasureError> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t with one bit set, passed by pointer.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut set) };
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(super::MeasureError::Pin {
                cpu,
                source: std::sync::Arc::new(std::io::Error::last_os_error()),
            });
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(super::MeasureError::PinUnsupported { cpu })
    }
}
