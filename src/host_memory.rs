//! The memory this process may use: the machine's RAM, or its cgroup's limit when lower.

use std::path::Path;

/// Bytes of memory this process may use: `MemTotal` of `/proc/meminfo`, lowered to the
/// cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`) limit when one is set. `None` where
/// neither file can be read (not Linux).
pub fn available_bytes() -> Option<u64> {
    let total = read(Path::new("/proc/meminfo")).and_then(|t| mem_total(&t));
    let limit = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| read(Path::new(p)).and_then(|t| cgroup_limit(&t)));
    match (total, limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `MemTotal` in bytes from the text of `/proc/meminfo` (`MemTotal:   24567890 kB`).
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => kib.checked_mul(1024),
        Some(_) => None,
    }
}

/// A cgroup memory limit in bytes; `max` (v2) and the v1 "unlimited" value (near 2^63) are no
/// limit.
fn cgroup_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes > 0 && bytes < 1 << 62).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_total_in_kib() {
        let text = "MemTotal:       24567892 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total(text), Some(24567892 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total("MemTotal: 5 MB\n"), None);
    }

    #[test]
    fn cgroup_max_and_v1_unlimited_are_no_limit() {
        assert_eq!(cgroup_limit("max\n"), None);
        assert_eq!(cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(cgroup_limit("0\n"), None);
        assert_eq!(cgroup_limit("2147483648\n"), Some(2 << 30));
    }

    #[test]
    fn this_machine_reports_some_memory() {
        if cfg!(target_os = "linux") {
            let bytes = available_bytes().expect("Linux has /proc/meminfo");
            assert!(bytes >= 64 << 20, "{bytes} bytes");
        }
    }
}
