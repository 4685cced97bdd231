//! The free-space guard: writes are refused while the data directory's file system has less
//! than the configured free space, before fjall would hit ENOSPC (which poisons it for good).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::StorageError;

/// How often free space is measured, in milliseconds (one `statvfs` call).
const CHECK_EVERY_MS: u64 = 100;

/// Measures free space at most every [`CHECK_EVERY_MS`] and answers whether writes may go on.
pub(crate) struct DiskGuard {
    dir: PathBuf,
    /// Refuse writes below this many free bytes; 0 disables the guard.
    min_free: u64,
    /// The coarse monotonic clock's millisecond ([`coarse_ms`]) after which the next write
    /// measures again.
    next_check_ms: AtomicU64,
    /// Free bytes at the last measurement.
    free: AtomicU64,
}

impl DiskGuard {
    /// A guard for `dir` refusing writes below `min_free` bytes (0: never).
    pub(crate) fn new(dir: PathBuf, min_free: u64) -> DiskGuard {
        DiskGuard {
            dir,
            min_free,
            next_check_ms: AtomicU64::new(0),
            free: AtomicU64::new(u64::MAX),
        }
    }

    /// Free bytes on the file system now (one `statvfs`; 0 when it cannot be measured) and
    /// the threshold below which writes are refused.
    pub(crate) fn free_bytes(&self) -> (u64, u64) {
        let free =
            rustix::fs::statvfs(&self.dir).map_or(0, |st| st.f_bavail.saturating_mul(st.f_frsize));
        (free, self.min_free)
    }

    /// Ok while the file system has at least `min_free` bytes available to this process.
    ///
    /// # Errors
    /// [`StorageError::DiskFull`] below the threshold. A failed measurement keeps the last
    /// one (the write itself will report a real I/O error).
    pub(crate) fn check(&self) -> Result<(), StorageError> {
        if self.min_free == 0 {
            return Ok(());
        }
        let now = coarse_ms();
        if now >= self.next_check_ms.load(Ordering::Relaxed) {
            self.next_check_ms
                .store(now.saturating_add(CHECK_EVERY_MS), Ordering::Relaxed);
            match rustix::fs::statvfs(&self.dir) {
                Ok(st) => {
                    let free = st.f_bavail.saturating_mul(st.f_frsize);
                    let was = self.free.swap(free, Ordering::Relaxed);
                    if free < self.min_free && was >= self.min_free {
                        tracing::error!(
                            free,
                            min_free = self.min_free,
                            dir = %self.dir.display(),
                            "free disk space below min_free_disk_bytes: refusing writes until space returns"
                        );
                    } else if free >= self.min_free && was < self.min_free {
                        tracing::warn!(free, "free disk space is back: accepting writes");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot measure free disk space"),
            }
        }
        let free = self.free.load(Ordering::Relaxed);
        if free < self.min_free {
            return Err(StorageError::DiskFull {
                free,
                min_free: self.min_free,
            });
        }
        Ok(())
    }
}

/// Milliseconds on the kernel's coarse monotonic clock: a read of a value the kernel keeps,
/// cheaper than a precise clock (each write asks it), and precise to a few milliseconds.
pub(crate) fn coarse_ms() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let ms = u64::try_from(t.tv_nsec).unwrap_or(0) / 1_000_000;
    secs.saturating_mul(1000).saturating_add(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_writes_only_below_the_threshold() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(DiskGuard::new(dir.path().into(), 0).check().is_ok());
        assert!(DiskGuard::new(dir.path().into(), 1).check().is_ok());
        match DiskGuard::new(dir.path().into(), u64::MAX).check() {
            Err(StorageError::DiskFull { free, min_free }) => {
                assert_eq!(min_free, u64::MAX);
                assert!(free > 0 && free < u64::MAX);
            }
            other => panic!("expected DiskFull, got {other:?}"),
        }
    }
}
