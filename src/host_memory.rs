//! The memory this process may use: the machine's RAM, or its cgroup's limit when lower.

use std::path::Path;

/// Bytes of memory this process may use: `MemTotal` of `/proc/meminfo`, lowered to its
/// cgroup's limit when one is set (v2 `memory.max`, v1 `memory.limit_in_bytes`, of the cgroup
/// `/proc/self/cgroup` names, or at the mount's root as inside a container). `None` where
/// none of these can be read (not Linux).
pub fn available_bytes() -> Option<u64> {
    let total = read(Path::new("/proc/meminfo")).and_then(|t| mem_total(&t));
    let own = read(Path::new("/proc/self/cgroup")).unwrap_or_default();
    let root = Path::new("/sys/fs/cgroup");
    let v2 = cgroup_path(&own, None).map(|p| root.join(p).join("memory.max"));
    let v1 = cgroup_path(&own, Some("memory"))
        .map(|p| root.join("memory").join(p).join("memory.limit_in_bytes"));
    let limit = v2
        .into_iter()
        .chain(v1)
        .chain([
            root.join("memory.max"),
            root.join("memory/memory.limit_in_bytes"),
        ])
        .find_map(|p| read(&p).and_then(|t| cgroup_limit(&t)));
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

/// This process's cgroup path, relative to its hierarchy's mount, from the text of
/// `/proc/self/cgroup`: the v2 line (`0::/a/b`) for `None`, else the v1 line whose controller
/// list holds `v1_controller` (`4:memory:/a/b`). The root cgroup gives `None`.
fn cgroup_path(text: &str, v1_controller: Option<&str>) -> Option<String> {
    let path = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = match v1_controller {
            None => id == "0" && controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        wanted.then_some(path)
    })?;
    let relative = path.trim().trim_start_matches('/');
    (!relative.is_empty() && !relative.split('/').any(|c| c == "..")).then(|| relative.into())
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
    fn finds_the_cgroup_of_this_process() {
        let v2 = "0::/system.slice/ringdb.service\n";
        assert_eq!(
            cgroup_path(v2, None).as_deref(),
            Some("system.slice/ringdb.service")
        );
        assert_eq!(cgroup_path(v2, Some("memory")), None);
        let v1 = "5:devices:/\n4:memory:/process_api/7b05\n0::/\n";
        assert_eq!(
            cgroup_path(v1, Some("memory")).as_deref(),
            Some("process_api/7b05")
        );
        assert_eq!(cgroup_path(v1, None), None, "the root cgroup");
        assert_eq!(
            cgroup_path("3:cpu,memory:/a\n", Some("memory")).as_deref(),
            Some("a")
        );
        assert_eq!(cgroup_path("0::/../etc\n", None), None);
    }

    #[test]
    fn this_machine_reports_some_memory() {
        if cfg!(target_os = "linux") {
            let bytes = available_bytes().expect("Linux has /proc/meminfo");
            assert!(bytes >= 64 << 20, "{bytes} bytes");
        }
    }
}
