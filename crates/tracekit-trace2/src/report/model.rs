//! The report's output model: what `--json` prints and [`write_text`](super::write_text) renders.

use super::*;

/// The result of a report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Input names, indexed by [`SourceId`].
    pub sources: Vec<String>,
    pub events: u64,
    pub processes: u64,
    pub sessions: u64,
    /// Processes with no `exit`, `atexit`, `signal` or `exec`: crashed,
    /// killed, still running, or cut off by the end of the input.
    pub unfinished_processes: u64,
    /// Processes that arrived after their session had been folded; they are
    /// counted as a session of their own.
    pub late_processes: u64,
    /// Structural oddities: `region_leave` without `region_enter`, regions
    /// still open at process end, `child_exit` without `child_start`.
    pub anomalies: Anomalies,
    /// Per command (name and mode), by total time.
    pub commands: Vec<CommandStats>,
    /// Regions by total time (over every process).
    pub regions: Vec<RegionTotal>,
    /// Errors grouped by format, most frequent first.
    pub errors: Vec<ErrorGroup>,
    /// Detail of the slowest `top` sessions, in order of appearance.
    pub sessions_shown: Vec<SessionReport>,
    /// `top` as given to the builder.
    pub top: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Anomalies {
    pub unmatched_region_leave: u64,
    pub unclosed_regions: u64,
    pub unmatched_child_exit: u64,
    pub events_without_process: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommandStats {
    pub name: String,
    pub mode: Option<String>,
    pub count: u64,
    /// Ended with a non-zero exit code or a signal.
    pub failed: u64,
    /// Never ended (no duration known).
    pub unfinished: u64,
    pub p50_s: Option<f64>,
    pub p90_s: Option<f64>,
    pub p99_s: Option<f64>,
    pub max_s: Option<f64>,
    pub total_s: f64,
    /// This command's costliest regions (by total time, at most
    /// [`REGIONS_PER_COMMAND`]).
    pub top_regions: Vec<RegionTotal>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegionTotal {
    pub category: String,
    pub label: String,
    pub count: u64,
    pub total_s: f64,
    /// Total minus the time of regions nested in it.
    pub self_s: f64,
    pub max_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorGroup {
    /// `fmt` if git gave one, else the message.
    pub format: String,
    pub count: u64,
    /// The first message of this group.
    pub example: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// The first SID component, shared by every process of the session.
    pub session: String,
    /// UTC start (from the SID), when known.
    pub start: Option<String>,
    /// Elapsed time of the top process, or the span of all processes when
    /// the top process did not end.
    pub elapsed_s: Option<f64>,
    /// Processes whose parent is not in the trace (normally one: the
    /// top-level git command).
    pub processes: Vec<ProcessReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessReport {
    pub sid: String,
    /// 0 (left out) for the process that made the SID; n for the n-th
    /// process that went on under it after the previous one ended: a child
    /// forked by git's `daemonize()` (`maintenance run --detach`).
    #[serde(skip_serializing_if = "is_zero")]
    pub fork: u32,
    pub source: String,
    /// From the SID's `P` part (a forked process has none: the SID names
    /// its parent's).
    pub pid: Option<u32>,
    pub version: Option<String>,
    pub argv: Vec<String>,
    pub cmd_name: Option<String>,
    pub hierarchy: Option<String>,
    pub cmd_mode: Option<String>,
    pub alias: Option<AliasReport>,
    /// `exit`, `signal`, `exec` or `none` (crash, kill, still running).
    pub end: &'static str,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    pub elapsed_s: Option<f64>,
    pub children: Vec<ChildReport>,
    pub children_omitted: u64,
    /// Processes this one `exec()`'d into (same pid, SID one level down).
    pub exec: Vec<ProcessReport>,
    /// The process forked from this one that went on under its SID after
    /// it ended (left out when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forked: Vec<ProcessReport>,
    /// Traced descendants not matched to a `child_start` (e.g. git run by a
    /// shell alias: the grandchild of this process).
    pub descendants: Vec<ProcessReport>,
    /// Region trees, one per thread that had regions.
    pub threads: Vec<ThreadRegions>,
    pub data: Vec<DataItem>,
    pub data_omitted: u64,
    pub counters: Vec<CounterItem>,
    pub timers: Vec<TimerItem>,
    pub errors: Vec<String>,
    pub errors_omitted: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AliasReport {
    pub alias: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChildReport {
    pub child_id: i64,
    pub class: Option<String>,
    pub hook: Option<String>,
    pub argv: Vec<String>,
    pub pid: Option<i64>,
    /// -1 when it could not be started.
    pub exit_code: Option<i64>,
    /// As the parent measured it (fork to waitpid).
    pub elapsed_s: Option<f64>,
    /// The child's own trace, when it was traced.
    pub process: Option<Box<ProcessReport>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadRegions {
    pub thread: String,
    pub regions: Vec<RegionNode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegionNode {
    pub category: String,
    pub label: String,
    /// How many times it was entered at this place of the tree.
    pub count: u64,
    pub total_s: f64,
    pub self_s: f64,
    /// Share of the parent region (of the process for top-level regions).
    pub share: Option<f64>,
    pub children: Vec<RegionNode>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DataItem {
    pub thread: String,
    pub nesting: i64,
    pub category: String,
    pub key: String,
    /// A string for `data`, JSON text for `data_json`.
    pub value: String,
    pub json: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CounterItem {
    pub thread: String,
    pub category: String,
    pub name: String,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimerItem {
    pub thread: String,
    pub category: String,
    pub name: String,
    pub intervals: i64,
    pub total_s: f64,
    pub min_s: f64,
    pub max_s: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
