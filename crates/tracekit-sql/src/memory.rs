//! How much memory a query may hold: `--memory-limit` and its default.
//!
//! DataFusion's operators that hold rows (sort, hash join and aggregate
//! state, window partitions) reserve memory from one pool of this size; a
//! sort or an aggregation that cannot grow spills to the engine's private
//! spill directory, and what cannot spill (a join's build side, a cross
//! join) fails with DataFusion's "Resources exhausted" error. The pool
//! counts those operators' buffers, not every allocation (batches in
//! flight, the producers' own state), so the process can use somewhat more.

use std::path::Path;

/// What the default limit is a share of, and a percentage is taken of:
/// the physical memory, or the memory limit of this process's cgroup
/// where that is lower (a container's limit is where the OOM killer acts).
pub fn available_memory() -> Option<u64> {
    let physical = physical_memory();
    let cgroup = cgroup_limit();
    match (physical, cgroup) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

/// Used when the machine's memory cannot be read (not Linux).
pub const FALLBACK_LIMIT: u64 = 2 << 30;

/// The default limit: half of [`available_memory`], or [`FALLBACK_LIMIT`].
pub fn default_limit() -> u64 {
    available_memory().map_or(FALLBACK_LIMIT, |m| m / 2)
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The lowest memory limit of this process's cgroups, from its own up to
/// the hierarchy's root: `memory.max` (cgroup v2, at `/sys/fs/cgroup` or,
/// on hybrid systems, `/sys/fs/cgroup/unified`) and `memory.limit_in_bytes`
/// (v1's memory controller); `None` where nothing is limited.
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_limit_in(&own, Path::new("/sys/fs/cgroup"))
}

/// [`cgroup_limit`] from the text of `/proc/self/cgroup` and the cgroup
/// file systems' mount point.
fn cgroup_limit_in(own: &str, sys: &Path) -> Option<u64> {
    let mut lowest: Option<u64> = None;
    for line in own.lines() {
        // hierarchy-ID:controllers:path
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (root, file) = if controllers.is_empty() {
            let unified = sys.join("unified");
            let root = if unified.is_dir() {
                unified
            } else {
                sys.to_path_buf()
            };
            (root, "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (sys.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = root.join(path.trim().trim_start_matches('/'));
        loop {
            if let Some(v) = read_limit(&dir.join(file)) {
                lowest = Some(lowest.map_or(v, |l| l.min(v)));
            }
            if dir == root || !dir.pop() || !dir.starts_with(&root) {
                break;
            }
        }
    }
    lowest
}

/// A limit file's value; `max` and v1's "unlimited" (near `i64::MAX`) are none.
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// Parses a memory limit as users write it: bytes (`1000000`), a size
/// with a binary unit (`512M`, `512MiB`, `2G`, `1.5g`, `64K`, `1T`), or a
/// percentage of [`available_memory`] (`25%`).
pub fn parse_limit(s: &str) -> Result<u64, String> {
    let bad =
        || format!("{s:?} is not a memory size (e.g. 512M, 2G, 1.5G, 25% of the machine's memory)");
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(pct > 0.0 && pct <= 100.0) {
            return Err(format!(
                "{s:?}: a percentage is more than 0 and at most 100"
            ));
        }
        let total = available_memory()
            .ok_or_else(|| format!("{s:?}: this machine's memory size is unknown; give a size"))?;
        return Ok((total as f64 * pct / 100.0) as u64);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let bytes = n * (1u64 << shift) as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// `bytes` as people read it (`512 MiB`, `1.5 GiB`).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_users_write_them() {
        assert_eq!(parse_limit("512M"), Ok(512 << 20));
        assert_eq!(parse_limit("512MiB"), Ok(512 << 20));
        assert_eq!(parse_limit("2G"), Ok(2 << 30));
        assert_eq!(parse_limit("1.5g"), Ok(3 << 29));
        assert_eq!(parse_limit("64k"), Ok(64 << 10));
        assert_eq!(parse_limit("1000000"), Ok(1_000_000));
        for bad in ["", "M", "12X", "-1G", "0", "1..5G", "50%%", "0%", "101%"] {
            assert!(parse_limit(bad).is_err(), "{bad:?}");
        }
        if let Some(total) = available_memory() {
            assert_eq!(parse_limit("50%"), Ok(total / 2));
            assert_eq!(default_limit(), total / 2);
        }
    }

    #[test]
    fn the_lowest_cgroup_limit_counts() {
        let sys = tempfile::tempdir().unwrap();
        let put = |rel: &str, v: &str| {
            let p = sys.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        // v2: the job's limit is below its parent's; the root has none.
        put("a/memory.max", "8589934592\n");
        put("a/job/memory.max", "1073741824\n");
        assert_eq!(cgroup_limit_in("0::/a/job\n", sys.path()), Some(1 << 30));
        put("a/job/memory.max", "max\n");
        assert_eq!(cgroup_limit_in("0::/a/job\n", sys.path()), Some(8 << 30));
        // v1 (here beside v2 on a hybrid system): "unlimited" is none.
        put("memory/p/memory.limit_in_bytes", "9223372036854771712\n");
        let v1 = "4:memory:/p\n1:cpu:/\n";
        assert_eq!(cgroup_limit_in(v1, sys.path()), None);
        put("memory/p/memory.limit_in_bytes", "536870912\n");
        assert_eq!(cgroup_limit_in(v1, sys.path()), Some(512 << 20));
        assert_eq!(cgroup_limit_in("", sys.path()), None);
    }

    #[test]
    fn sizes_print_as_people_read_them() {
        assert_eq!(human(512 << 20), "512 MiB");
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(100), "100 B");
    }
}
