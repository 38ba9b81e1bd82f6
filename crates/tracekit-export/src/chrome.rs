//! Streaming writer for the Chrome Trace Event format.
//!
//! Timestamps are microseconds (the format's unit). Process and thread ids
//! are whatever numbers the caller uses; names are attached with
//! [`ChromeWriter::process_name`] and [`ChromeWriter::thread_name`].

use std::io::{self, Write};

use crate::json::{write_f64, write_i64, write_str};

/// A value in an event's `args`: the timeline model's typed value
/// (`Json` is written verbatim; the caller guarantees it is valid).
pub use tracekit_core::timeline::Value as Arg;

/// Which end of a flow a flow event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowPhase {
    Start,
    Step,
    Finish,
}

/// Scope of an instant event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Process,
    Thread,
}

/// Each event is built in a reusable line buffer and handed to the sink
/// in one `write_all` (a sink behind `dyn Write` costs a call per write;
/// no extra buffering is needed for speed, and a sink error leaves whole
/// events behind).
pub struct ChromeWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    first: bool,
    events: u64,
    closed: bool,
}

impl<W: Write> ChromeWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        Ok(ChromeWriter {
            out,
            line: Vec::with_capacity(256),
            first: true,
            events: 0,
            closed: false,
        })
    }

    /// How many events were written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Starts the next event in the line buffer.
    fn open(&mut self, ph: &str, pid: i64, tid: i64) -> io::Result<()> {
        self.line.clear();
        if !self.first {
            self.line.extend_from_slice(b",\n");
        }
        self.line.extend_from_slice(b"{\"ph\":\"");
        self.line.extend_from_slice(ph.as_bytes());
        self.line.extend_from_slice(b"\",\"pid\":");
        write_i64(&mut self.line, pid)?;
        self.line.extend_from_slice(b",\"tid\":");
        write_i64(&mut self.line, tid)
    }

    /// Closes the event in the line buffer and writes it out.
    fn emit(&mut self, tail: &[u8]) -> io::Result<()> {
        self.line.extend_from_slice(tail);
        self.out.write_all(&self.line)?;
        self.first = false;
        self.events += 1;
        Ok(())
    }

    fn key(&mut self, key: &str) {
        self.line.extend_from_slice(b",\"");
        self.line.extend_from_slice(key.as_bytes());
        self.line.extend_from_slice(b"\":");
    }

    fn field_str(&mut self, key: &str, v: &[u8]) -> io::Result<()> {
        self.key(key);
        write_str(&mut self.line, v)
    }

    fn field_f64(&mut self, key: &str, v: f64) -> io::Result<()> {
        self.key(key);
        write_f64(&mut self.line, v)
    }

    fn args(&mut self, args: &[(&str, Arg<'_>)]) -> io::Result<()> {
        if args.is_empty() {
            return Ok(());
        }
        let line = &mut self.line;
        line.extend_from_slice(b",\"args\":{");
        for (i, (k, v)) in args.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            write_str(line, k.as_bytes())?;
            line.push(b':');
            match v {
                Arg::Str(s) => write_str(line, s)?,
                Arg::Int(n) => write_i64(line, *n)?,
                Arg::UInt(n) => line.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
                Arg::Float(f) => write_f64(line, *f)?,
                Arg::Bool(b) => line.extend_from_slice(if *b { b"true" } else { b"false" }),
                Arg::Json(j) => line.extend_from_slice(j),
            }
        }
        line.push(b'}');
        Ok(())
    }

    /// A slice with a known duration (`ph: X`).
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        pid: i64,
        tid: i64,
        ts_us: f64,
        dur_us: f64,
        name: &[u8],
        cat: &[u8],
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.open("X", pid, tid)?;
        self.field_f64("ts", ts_us)?;
        self.field_f64("dur", dur_us.max(0.0))?;
        self.field_str("name", name)?;
        if !cat.is_empty() {
            self.field_str("cat", cat)?;
        }
        self.args(args)?;
        self.emit(b"}")
    }

    /// The start of a slice whose end comes later (`ph: B`).
    pub fn begin(
        &mut self,
        pid: i64,
        tid: i64,
        ts_us: f64,
        name: &[u8],
        cat: &[u8],
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.open("B", pid, tid)?;
        self.field_f64("ts", ts_us)?;
        self.field_str("name", name)?;
        if !cat.is_empty() {
            self.field_str("cat", cat)?;
        }
        self.args(args)?;
        self.emit(b"}")
    }

    /// The end of the innermost open slice on that thread (`ph: E`).
    pub fn end(
        &mut self,
        pid: i64,
        tid: i64,
        ts_us: f64,
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.open("E", pid, tid)?;
        self.field_f64("ts", ts_us)?;
        self.args(args)?;
        self.emit(b"}")
    }

    /// A point in time (`ph: i`).
    #[allow(clippy::too_many_arguments)]
    pub fn instant(
        &mut self,
        pid: i64,
        tid: i64,
        ts_us: f64,
        name: &[u8],
        cat: &[u8],
        scope: Scope,
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.open("i", pid, tid)?;
        self.field_f64("ts", ts_us)?;
        self.field_str("name", name)?;
        if !cat.is_empty() {
            self.field_str("cat", cat)?;
        }
        let s: &[u8] = match scope {
            Scope::Global => b"g",
            Scope::Process => b"p",
            Scope::Thread => b"t",
        };
        self.field_str("s", s)?;
        self.args(args)?;
        self.emit(b"}")
    }

    /// A counter sample (`ph: C`): each series becomes a line in the track
    /// named `name`.
    pub fn counter(
        &mut self,
        pid: i64,
        ts_us: f64,
        name: &[u8],
        series: &[(&str, f64)],
    ) -> io::Result<()> {
        self.open("C", pid, 0)?;
        self.field_f64("ts", ts_us)?;
        self.field_str("name", name)?;
        let line = &mut self.line;
        line.extend_from_slice(b",\"args\":{");
        for (i, (k, v)) in series.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            write_str(line, k.as_bytes())?;
            line.push(b':');
            write_f64(line, *v)?;
        }
        self.emit(b"}}")
    }

    /// Names a process track.
    pub fn process_name(&mut self, pid: i64, name: &[u8]) -> io::Result<()> {
        self.open("M", pid, 0)?;
        self.field_str("name", b"process_name")?;
        self.args(&[("name", Arg::Str(name))])?;
        self.emit(b"}")
    }

    /// Names a thread track.
    pub fn thread_name(&mut self, pid: i64, tid: i64, name: &[u8]) -> io::Result<()> {
        self.open("M", pid, tid)?;
        self.field_str("name", b"thread_name")?;
        self.args(&[("name", Arg::Str(name))])?;
        self.emit(b"}")
    }

    /// Orders thread tracks within a process (lower first).
    pub fn thread_sort_index(&mut self, pid: i64, tid: i64, index: i64) -> io::Result<()> {
        self.open("M", pid, tid)?;
        self.field_str("name", b"thread_sort_index")?;
        self.args(&[("sort_index", Arg::Int(index))])?;
        self.emit(b"}")
    }

    /// Orders process tracks (lower first).
    pub fn process_sort_index(&mut self, pid: i64, index: i64) -> io::Result<()> {
        self.open("M", pid, 0)?;
        self.field_str("name", b"process_sort_index")?;
        self.args(&[("sort_index", Arg::Int(index))])?;
        self.emit(b"}")
    }

    /// One end of a flow arrow (`ph` `s` start, `t` step, `f` finish),
    /// bound to the slice enclosing `ts` on that thread (`bp: e`).
    pub fn flow(
        &mut self,
        ph: FlowPhase,
        pid: i64,
        tid: i64,
        ts_us: f64,
        id: u64,
    ) -> io::Result<()> {
        let ph = match ph {
            FlowPhase::Start => "s",
            FlowPhase::Step => "t",
            FlowPhase::Finish => "f",
        };
        self.open(ph, pid, tid)?;
        self.field_f64("ts", ts_us)?;
        self.field_str("name", b"flow")?;
        self.field_str("cat", b"flow")?;
        self.key("id");
        self.line
            .extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        self.field_str("bp", b"e")?;
        self.emit(b"}")
    }

    /// Closes the JSON document (once) and flushes the sink.
    pub fn close(&mut self) -> io::Result<()> {
        if !self.closed {
            self.closed = true;
            self.out.write_all(b"\n]}\n")?;
        }
        self.out.flush()
    }

    /// Closes the JSON document and returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.close()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_json() {
        let mut w = ChromeWriter::new(Vec::new()).unwrap();
        w.process_name(1, b"git").unwrap();
        w.thread_name(1, 2, b"main").unwrap();
        w.complete(
            1,
            2,
            0.5,
            10.0,
            b"region",
            b"cat",
            &[("k", Arg::Str(b"v")), ("n", Arg::Int(3))],
        )
        .unwrap();
        w.begin(1, 2, 1.0, b"b", b"", &[]).unwrap();
        w.end(1, 2, 2.0, &[]).unwrap();
        w.instant(
            1,
            2,
            3.0,
            b"err\"x",
            b"error",
            Scope::Thread,
            &[("raw", Arg::Json(b"{\"a\":1}"))],
        )
        .unwrap();
        w.counter(1, 4.0, b"c", &[("value", 2.0)]).unwrap();
        assert_eq!(w.events(), 7);
        let out = w.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.len(), 7);
        assert_eq!(evs[2]["dur"], 10.0);
        assert_eq!(evs[5]["name"], "err\"x");
        assert_eq!(evs[5]["args"]["raw"]["a"], 1);
    }

    /// Counts the writes a sink receives.
    struct CountingSink(Vec<u8>, usize);

    impl Write for CountingSink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.1 += 1;
            self.0.extend_from_slice(b);
            Ok(b.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn one_sink_write_per_event() {
        let mut w = ChromeWriter::new(CountingSink(Vec::new(), 0)).unwrap();
        w.thread_name(1, 2, b"main").unwrap();
        w.begin(1, 2, 1.0, b"f\"n", b"c", &[("args", Arg::Json(b"[1,2]"))])
            .unwrap();
        w.end(1, 2, 2.5, &[]).unwrap();
        let sink = w.finish().unwrap();
        // The header, three events, the closing.
        assert_eq!(sink.1, 5);
        let v: serde_json::Value = serde_json::from_slice(&sink.0).unwrap();
        assert_eq!(v["traceEvents"][1]["name"], "f\"n");
        assert_eq!(v["traceEvents"][1]["args"]["args"][1], 2);
        assert_eq!(v["traceEvents"][2]["ts"], 2.5);
    }

    #[test]
    fn empty_trace_is_valid_json() {
        let out = ChromeWriter::new(Vec::new()).unwrap().finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v["traceEvents"].as_array().unwrap().is_empty());
    }
}
