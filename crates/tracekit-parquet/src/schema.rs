//! The tables and their columns: one schema for every dialect.
//!
//! Every table starts with the three source columns (`file`, `host`,
//! `dialect`), so that tables written from many inputs and machines
//! concatenate: ids (`track_id`, `slice_id`, `backtrace_id`, ...) are unique
//! within one `file` only, and joins go through `file` too.
//!
//! Times: `*_ns` columns are INT64 nanoseconds relative to the trace's own
//! tick 0 (always present); `*_time` columns are TIMESTAMP(NANOS, UTC) and
//! only set where the trace is anchored to Unix time (never guessed).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The type of a column, as the row builders know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Str,
    I64,
    U64,
    I32,
    F64,
    Bool,
    /// TIMESTAMP(NANOS) in UTC.
    Time,
}

impl ColType {
    pub fn data_type(self) -> DataType {
        match self {
            ColType::Str => DataType::Utf8,
            ColType::I64 => DataType::Int64,
            ColType::U64 => DataType::UInt64,
            ColType::I32 => DataType::Int32,
            ColType::F64 => DataType::Float64,
            ColType::Bool => DataType::Boolean,
            ColType::Time => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        }
    }

    /// The SQL spelling shown by `--schema` and the docs.
    pub fn sql_name(self) -> &'static str {
        match self {
            ColType::Str => "VARCHAR",
            ColType::I64 => "BIGINT",
            ColType::U64 => "BIGINT UNSIGNED",
            ColType::I32 => "INT",
            ColType::F64 => "DOUBLE",
            ColType::Bool => "BOOLEAN",
            ColType::Time => "TIMESTAMP(ns, UTC)",
        }
    }
}

/// One column: name, type, whether it may be null, what it holds.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColType,
    pub nullable: bool,
    pub doc: &'static str,
}

const fn col(name: &'static str, ty: ColType, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: false,
        doc,
    }
}

const fn opt(name: &'static str, ty: ColType, doc: &'static str) -> Column {
    Column {
        name,
        ty,
        nullable: true,
        doc,
    }
}

use ColType::*;

/// The source columns every table starts with.
pub const SOURCE_COLUMNS: [Column; 3] = [
    col("file", Str, "the input as named on the command line"),
    opt(
        "host",
        Str,
        "the machine that recorded it, where the trace says",
    ),
    col("dialect", Str, "trace2, xray, kwinject, rtrace or posix"),
];

/// Every table, generic ones first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Processes,
    Threads,
    Slices,
    Instants,
    Counters,
    Flows,
    Trace2Processes,
    BuildProcesses,
    XrayCalls,
    RtraceAllocations,
    RtraceBacktraces,
}

impl Table {
    pub const ALL: [Table; 11] = [
        Table::Processes,
        Table::Threads,
        Table::Slices,
        Table::Instants,
        Table::Counters,
        Table::Flows,
        Table::Trace2Processes,
        Table::BuildProcesses,
        Table::XrayCalls,
        Table::RtraceAllocations,
        Table::RtraceBacktraces,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Processes => "processes",
            Table::Threads => "threads",
            Table::Slices => "slices",
            Table::Instants => "instants",
            Table::Counters => "counters",
            Table::Flows => "flows",
            Table::Trace2Processes => "trace2_processes",
            Table::BuildProcesses => "build_processes",
            Table::XrayCalls => "xray_calls",
            Table::RtraceAllocations => "rtrace_allocations",
            Table::RtraceBacktraces => "rtrace_backtraces",
        }
    }

    /// The tables every dialect's timeline fills.
    pub fn is_generic(self) -> bool {
        self <= Table::Flows
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// What one row is.
    pub fn doc(self) -> &'static str {
        match self {
            Table::Processes => "one row per process track of the timeline",
            Table::Threads => "one row per thread or lane (a custom track under a process)",
            Table::Slices => {
                "one row per slice (begin/end paired per track, complete slices as they are)"
            }
            Table::Instants => "one row per instant event",
            Table::Counters => "one row per counter sample",
            Table::Flows => "one row per flow end carried by a slice",
            Table::Trace2Processes => {
                "Git Trace2: one row per git process (a session is the processes sharing the SID's first component)"
            }
            Table::BuildProcesses => {
                "kwinject build traces: one row per traced process, with its compile units and outputs"
            }
            Table::XrayCalls => {
                "LLVM XRay: one row per function call that has both its entry and its exit"
            }
            Table::RtraceAllocations => {
                "sp-rtrace: one row per allocation call, with whether its block was freed or leaked"
            }
            Table::RtraceBacktraces => "sp-rtrace: one row per frame of each distinct backtrace",
        }
    }

    /// The table's own columns (after the source columns).
    pub fn own_columns(self) -> &'static [Column] {
        match self {
            Table::Processes => {
                const C: &[Column] = &[
                    col("track_id", U64, "the process track's id"),
                    col("pid", I64, "process id (as the producer numbers it)"),
                    opt("name", Str, "process name"),
                    opt("sort_index", I64, "display order among processes"),
                ];
                C
            }
            Table::Threads => {
                const C: &[Column] = &[
                    col("track_id", U64, "the track's id"),
                    opt("parent_track_id", U64, "its process track"),
                    col("pid", I64, "process id"),
                    col("tid", I64, "thread id, or the lane's number"),
                    col("kind", Str, "thread or lane"),
                    opt("name", Str, "thread or lane name"),
                    opt("sort_index", I64, "display order"),
                ];
                C
            }
            Table::Slices => {
                const C: &[Column] = &[
                    col("slice_id", U64, "unique within the file, in start order"),
                    col("track_id", U64, "the track the slice is on"),
                    col("pid", I64, "process id of the track"),
                    opt("tid", I64, "thread id (or lane) of the track"),
                    col("name", Str, "slice name"),
                    opt(
                        "name_key",
                        U64,
                        "the producer's key of the name (XRay: the function id)",
                    ),
                    opt("category", Str, "category, where the dialect has one"),
                    col("start_ns", I64, "start, ns from the trace's tick 0"),
                    opt(
                        "start_time",
                        Time,
                        "start, where the trace is anchored to Unix time",
                    ),
                    col("dur_ns", I64, "duration in ns"),
                    col("depth", I32, "nesting depth on its track (0 = outermost)"),
                    opt("parent_slice_id", U64, "the enclosing slice on the track"),
                    opt("args", Str, "arguments as a JSON object"),
                ];
                C
            }
            Table::Instants => {
                const C: &[Column] = &[
                    col("track_id", U64, "the track"),
                    col("pid", I64, "process id of the track"),
                    opt("tid", I64, "thread id (or lane) of the track"),
                    col("name", Str, "event name"),
                    opt("category", Str, "category"),
                    col("scope", Str, "thread, process or global"),
                    col("ts_ns", I64, "time, ns from tick 0"),
                    opt("time", Time, "time, where anchored to Unix time"),
                    opt("args", Str, "arguments as a JSON object"),
                ];
                C
            }
            Table::Counters => {
                const C: &[Column] = &[
                    col("track_id", U64, "the counter track"),
                    col("pid", I64, "process id"),
                    opt("counter", Str, "the counter's name"),
                    col("series", Str, "the value's name"),
                    col("ts_ns", I64, "time, ns from tick 0"),
                    opt("time", Time, "time, where anchored to Unix time"),
                    col("value", F64, "the value from this time on"),
                ];
                C
            }
            Table::Flows => {
                const C: &[Column] = &[
                    col("flow_id", U64, "the flow, unique within the file"),
                    col("slice_id", U64, "the slice that carries this end"),
                    col("track_id", U64, "the slice's track"),
                    col("ts_ns", I64, "the slice's start"),
                    col(
                        "terminating",
                        Bool,
                        "this slice ends the flow (else it starts or continues it)",
                    ),
                ];
                C
            }
            Table::Trace2Processes => {
                const C: &[Column] = &[
                    col("session", Str, "the SID's first component"),
                    col(
                        "sid",
                        Str,
                        "the process's SID (or a stand-in for PERF/NORMAL)",
                    ),
                    opt("parent_sid", Str, "the parent git process's SID"),
                    opt("pid", I64, "process id, where the SID or child_exit says"),
                    col("command", Str, "the command as `tracekit report` groups it"),
                    opt("mode", Str, "cmd_mode"),
                    col("argv", Str, "argv as a JSON array"),
                    opt("version", Str, "git version"),
                    opt("start_time", Time, "start"),
                    opt(
                        "elapsed_ns",
                        I64,
                        "elapsed time (exit's t_abs), null when unfinished",
                    ),
                    opt("exit_code", I64, "exit code"),
                    opt("signal", I64, "the signal that ended it"),
                    col(
                        "end",
                        Str,
                        "how it ended (exit, atexit, signal, unfinished, ...)",
                    ),
                    col(
                        "fork",
                        I64,
                        "0; n for the n-th process that went on under the SID after the previous one ended \
                         (a child forked by git's daemonize(), e.g. maintenance run --detach)",
                    ),
                ];
                C
            }
            Table::BuildProcesses => {
                const C: &[Column] = &[
                    col("record", I64, "0-based index of the record in the trace"),
                    col("id", I64, "process id"),
                    opt("parent_id", I64, "parent process id"),
                    opt("parent_record", I64, "the parent's record"),
                    col("executable", Str, "the executable"),
                    col("argv", Str, "arguments as a JSON array"),
                    col("cwd", Str, "working directory"),
                    opt("start_ns", I64, "start, ns after the build's first start"),
                    opt("start_time", Time, "start"),
                    opt("dur_ns", I64, "duration"),
                    opt("exit_code", I64, "exit code"),
                    opt("signal", I64, "the signal that ended it"),
                    col(
                        "is_compile",
                        Bool,
                        "a compiler call with at least one source",
                    ),
                    opt("source", Str, "the first compiled source"),
                    opt("compile_units", Str, "compiled sources, as a JSON array"),
                    opt(
                        "outputs",
                        Str,
                        "output files of the compile, as a JSON array",
                    ),
                ];
                C
            }
            Table::XrayCalls => {
                const C: &[Column] = &[
                    col("pid", I64, "process id"),
                    col("tid", I64, "thread id"),
                    col("function_id", I32, "XRay function id"),
                    col("function", Str, "function name (the id when unnamed)"),
                    col(
                        "start_ns",
                        I64,
                        "entry, ns from the trace's earliest record",
                    ),
                    col("dur_ns", I64, "exit minus entry, in ns"),
                    col("start_tsc", U64, "entry's TSC"),
                    col("dur_tsc", U64, "exit minus entry, in TSC ticks"),
                    col("depth", I32, "stack depth at entry (0 = outermost)"),
                    col(
                        "closed_by_parent",
                        Bool,
                        "ended by the exit of an enclosing call (llvm-xray account -d)",
                    ),
                    opt("args", Str, "call arguments as a JSON array"),
                ];
                C
            }
            Table::RtraceAllocations => {
                const C: &[Column] = &[
                    opt("pid", I64, "the traced process (header)"),
                    col(
                        "resource",
                        Str,
                        "resource type (memory, file descriptor, ...)",
                    ),
                    col("call_index", I64, "the call's index in the trace"),
                    col("function", Str, "the allocating function"),
                    col("size", I64, "size (handles count 1 each)"),
                    opt(
                        "address",
                        U64,
                        "the block's address or the handle's value (null: a heap block freed soon after, recorded without --addresses)",
                    ),
                    opt(
                        "ts_ns",
                        I64,
                        "time, ns after midnight of the recorder's clock (unwrapped)",
                    ),
                    col(
                        "backtrace_id",
                        U64,
                        "the backtrace (rtrace_backtraces), within the file",
                    ),
                    col(
                        "new_block",
                        Bool,
                        "false for a reference added to a live refcounted block",
                    ),
                    opt("freed_index", I64, "the call that freed the block"),
                    col("leaked", Bool, "the block was never freed"),
                ];
                C
            }
            Table::RtraceBacktraces => {
                const C: &[Column] = &[
                    col("backtrace_id", U64, "the backtrace, within the file"),
                    col("frame", I32, "0 = innermost"),
                    col("address", U64, "return address"),
                    opt(
                        "text",
                        Str,
                        "what the trace wrote after the address, if anything",
                    ),
                ];
                C
            }
        }
    }

    /// Every column, source columns first.
    pub fn columns(self) -> impl Iterator<Item = &'static Column> {
        SOURCE_COLUMNS.iter().chain(self.own_columns())
    }

    pub fn schema(self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns()
                .map(|c| Field::new(c.name, c.ty.data_type(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }
}
