//! `.ninja_log`: the time of every command ninja ran.
//!
//! ```text
//! # ninja log v5
//! 1<TAB>3721<TAB>1795914234196066730<TAB>CMakeFiles/expat.dir/lib/xmlrole.c.o<TAB>7f3fd8b00fa2cd55
//! ```
//! After the header, one line per output of every command ninja ran, with
//! five tab-separated fields: start and end in milliseconds since that
//! ninja run started, the output's mtime as ninja recorded it, the output,
//! and a hash of the command (hexadecimal; MurmurHash2 up to v6,
//! rapidhash in v7). Every run appends; ninja reads the file keeping the
//! **last** entry of each output (`BuildLog::Load`), and so does this.
//! v5 (ninja ≤ 1.11), v6 (1.12) and v7 (1.13) share the line format; v4
//! and older hold the command itself in the last field. ninja rewrites
//! ("recompacts") the log when it holds too many stale lines, keeping the
//! last entry of each live output in no particular order.

use std::collections::HashMap;

use tracekit_core::{Error, Position, Warnings};

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub start_ms: u64,
    pub end_ms: u64,
    /// The mtime field as written (nanoseconds on Linux since ninja 1.10's
    /// high-resolution stat; 0 when ninja did not stat the output).
    pub mtime: i64,
    pub output: String,
    /// The command-hash field as written (hex), or the command (v4).
    pub hash: String,
    /// 1-based line.
    pub line: usize,
}

/// A `.ninja_log` read whole.
#[derive(Debug, Clone, Default)]
pub struct NinjaLog {
    pub version: u32,
    pub entries: Vec<LogEntry>,
    /// Lines that are not five fields with numbers where numbers go
    /// (ninja skips them silently; here each is a warning).
    pub warnings: Warnings,
    pub lines: usize,
}

/// What ran to make one or more outputs: the last entries of outputs that
/// share start, end and command hash (one ninja edge with several outputs,
/// as ninjatracing groups them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub outputs: Vec<String>,
    pub start_ms: u64,
    pub end_ms: u64,
    pub hash: String,
    /// Which run of ninja wrote it: runs are told apart as ninjatracing
    /// does (an entry that ends before the one above it starts a new run),
    /// numbered from 0.
    pub run: usize,
    /// Line of its first entry.
    pub line: usize,
}

impl Target {
    pub fn duration_ms(&self) -> u64 {
        self.end_ms.saturating_sub(self.start_ms)
    }

    /// Its outputs joined by `, ` (ninjatracing's name for it).
    pub fn name(&self) -> String {
        self.outputs.join(", ")
    }
}

/// Does `head` start like a `.ninja_log`?
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(b"# ninja log v")
}

/// Reads a `.ninja_log`. Fails only without the `# ninja log vN` header;
/// malformed lines are warnings (ninja skips them), a version other than
/// 5, 6 or 7 is read with a warning.
pub fn read_log(bytes: &[u8]) -> Result<NinjaLog, Error> {
    let text = tracekit_core::lossy(bytes);
    let mut lines = text.split('\n');
    let header = lines.next().unwrap_or("");
    let version = header
        .strip_prefix("# ninja log v")
        .and_then(|v| v.trim_end_matches('\r').trim().parse::<u32>().ok())
        .ok_or_else(|| {
            Error::malformed(
                Position::Line(1),
                "not a .ninja_log: the first line is not \"# ninja log vN\"",
            )
        })?;
    let mut log = NinjaLog {
        version,
        ..Default::default()
    };
    if !(5..=7).contains(&version) {
        log.warnings.push(
            Position::Line(1),
            format!(
                "ninja log v{version}: this reader knows v5, v6 and v7 (ninja 1.10 to 1.13); read \
                 as they are"
            ),
        );
    }
    log.lines = 1;
    for (k, line) in lines.enumerate() {
        let lineno = k + 2;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        log.lines = lineno;
        let fields: Vec<&str> = line.splitn(5, '\t').collect();
        let parsed = match fields.as_slice() {
            [s, e, m, out, hash] if !out.is_empty() => {
                match (s.parse::<u64>(), e.parse::<u64>(), m.parse::<i64>()) {
                    (Ok(s), Ok(e), Ok(m)) => Some(LogEntry {
                        start_ms: s,
                        end_ms: e,
                        mtime: m,
                        output: out.to_string(),
                        hash: hash.to_string(),
                        line: lineno,
                    }),
                    _ => None,
                }
            }
            _ => None,
        };
        match parsed {
            Some(e) => log.entries.push(e),
            None => log.warnings.push(
                Position::Line(lineno as u64),
                "not a log entry (start, end, mtime, output, hash separated by tabs)",
            ),
        }
    }
    Ok(log)
}

impl NinjaLog {
    /// How many runs of ninja the entries come from.
    pub fn runs(&self) -> usize {
        self.run_of_entries().last().map_or(0, |r| r + 1)
    }

    fn run_of_entries(&self) -> Vec<usize> {
        let mut run = 0;
        let mut last_end = 0;
        self.entries
            .iter()
            .map(|e| {
                if e.end_ms < last_end {
                    run += 1;
                }
                last_end = e.end_ms;
                run
            })
            .collect()
    }

    /// The targets as ninja sees them: the last entry of each output,
    /// outputs of one command grouped, in start order (then log order).
    pub fn targets(&self) -> Vec<Target> {
        let runs = self.run_of_entries();
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            last.insert(e.output.as_str(), i);
        }
        let mut keep: Vec<usize> = last.into_values().collect();
        keep.sort_unstable();
        let mut index: HashMap<(usize, u64, u64, &str), usize> = HashMap::new();
        let mut targets: Vec<Target> = Vec::new();
        for i in keep {
            let e = &self.entries[i];
            let key = (runs[i], e.start_ms, e.end_ms, e.hash.as_str());
            match index.get(&key) {
                Some(&t) => targets[t].outputs.push(e.output.clone()),
                None => {
                    index.insert(key, targets.len());
                    targets.push(Target {
                        outputs: vec![e.output.clone()],
                        start_ms: e.start_ms,
                        end_ms: e.end_ms,
                        hash: e.hash.clone(),
                        run: runs[i],
                        line: e.line,
                    });
                }
            }
        }
        targets.sort_by_key(|t| (t.run, t.start_ms, t.line));
        targets
    }
}

/// Lanes for targets that overlap in time, as ninjatracing makes them:
/// each target goes to the first lane free at its start (in start order).
pub fn lanes(targets: &[&Target]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..targets.len()).collect();
    order.sort_by_key(|&i| (targets[i].start_ms, targets[i].end_ms));
    let mut free_at: Vec<u64> = Vec::new();
    let mut lane = vec![0; targets.len()];
    for i in order {
        let t = targets[i];
        match free_at.iter().position(|&end| end <= t.start_ms) {
            Some(k) => {
                free_at[k] = t.end_ms.max(t.start_ms);
                lane[i] = k;
            }
            None => {
                free_at.push(t.end_ms.max(t.start_ms));
                lane[i] = free_at.len() - 1;
            }
        }
    }
    lane
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_entry_wins_and_outputs_group() {
        let text = "# ninja log v5\n1\t10\t0\ta.o\taa\n2\t30\t0\tb.o\tbb\n30\t40\t0\tlib.so.1\tcc\n30\t40\t0\tlib.so\tcc\nbad line\n5\t8\t0\ta.o\tdd\n";
        let log = read_log(text.as_bytes()).unwrap();
        assert_eq!(log.version, 5);
        assert_eq!(log.entries.len(), 5);
        assert_eq!(log.warnings.total(), 1);
        assert_eq!(log.warnings.kept()[0].position, Position::Line(6));
        assert_eq!(log.runs(), 2);
        let t = log.targets();
        let got: Vec<(String, u64, usize)> = t
            .iter()
            .map(|t| (t.name(), t.duration_ms(), t.run))
            .collect();
        assert_eq!(
            got,
            [
                ("b.o".to_string(), 28, 0),
                ("lib.so.1, lib.so".to_string(), 10, 0),
                ("a.o".to_string(), 3, 1)
            ]
        );
        assert!(read_log(b"1\t2\t3\tx\ty\n").is_err());
        let v4 = read_log(b"# ninja log v4\n").unwrap();
        assert_eq!(v4.warnings.total(), 1);
    }

    #[test]
    fn lanes_reuse_the_first_free() {
        let mk = |s, e| Target {
            outputs: vec![],
            start_ms: s,
            end_ms: e,
            hash: String::new(),
            run: 0,
            line: 0,
        };
        let ts = [mk(0, 10), mk(1, 5), mk(5, 12), mk(10, 11)];
        let refs: Vec<&Target> = ts.iter().collect();
        assert_eq!(lanes(&refs), [0, 1, 1, 0]);
    }
}
