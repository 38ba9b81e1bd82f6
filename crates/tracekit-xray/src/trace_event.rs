//! `convert -output-format=trace_event`: llvm-xray's Chrome trace JSON
//! (B/E events with stack-frame ids shared by identical call paths across
//! threads), streamed: memory holds the call-path trie, not the events.

use crate::fxhash::FxMap as HashMap;
use std::io::{self, Write};

use crate::densemap;
use crate::header::FileHeader;
use crate::record::Record;

struct Frame {
    func_id: i32,
    parent: Option<usize>,
    children: HashMap<i32, usize>,
}

/// Streams llvm-xray's trace_event JSON.
pub struct TraceEventWriter<W: Write> {
    out: W,
    header: FileHeader,
    frames: Vec<Frame>,
    roots: HashMap<i32, usize>,
    cursors: HashMap<u32, Option<usize>>,
    written: u64,
    line: Vec<u8>,
}

impl<W: Write> TraceEventWriter<W> {
    pub fn new(mut out: W, header: FileHeader) -> io::Result<Self> {
        out.write_all(b"{\n  \"traceEvents\": [\n")?;
        Ok(TraceEventWriter {
            out,
            header,
            frames: Vec::new(),
            roots: HashMap::default(),
            cursors: HashMap::default(),
            written: 0,
            line: Vec::with_capacity(256),
        })
    }

    fn child(&mut self, parent: Option<usize>, func_id: i32) -> usize {
        let existing = match parent {
            None => self.roots.get(&func_id).copied(),
            Some(p) => self.frames[p].children.get(&func_id).copied(),
        };
        if let Some(n) = existing {
            return n;
        }
        self.frames.push(Frame {
            func_id,
            parent,
            children: HashMap::default(),
        });
        let n = self.frames.len() - 1;
        match parent {
            None => {
                self.roots.insert(func_id, n);
            }
            Some(p) => {
                self.frames[p].children.insert(func_id, n);
            }
        }
        n
    }

    fn event(&mut self, name: &str, ph: &str, r: &Record<'_>, frame: usize) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        if self.written > 0 {
            l.extend_from_slice(b",\n");
        }
        self.written += 1;
        let ts = 1_000_000f64 / self.header.cycle_frequency as f64 * r.tsc as f64;
        if self.header.version >= 3 {
            let _ = write!(
                l,
                "    {{ \"name\" : \"{name}\", \"ph\" : \"{ph}\", \"tid\" : \"{}\", \"pid\" : \"{}\", \"ts\" : \"{ts:.4}\", \"sf\" : \"{frame}\" }}",
                r.tid, r.pid
            );
        } else {
            let _ = write!(
                l,
                "    {{ \"name\" : \"{name}\", \"ph\" : \"{ph}\", \"tid\" : \"{}\", \"pid\" : \"1\", \"ts\" : \"{ts:.3}\", \"sf\" : \"{frame}\" }}",
                r.tid
            );
        }
        self.out.write_all(l)
    }

    /// Adds one record (time order); `name` names function ids.
    pub fn record(
        &mut self,
        r: &Record<'_>,
        name: &mut dyn FnMut(i32) -> String,
    ) -> io::Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        let cursor = self.cursors.get(&r.tid).copied().flatten();
        if r.kind.is_entry() {
            let n = self.child(cursor, r.func_id);
            self.cursors.insert(r.tid, Some(n));
            let nm = name(r.func_id);
            return self.event(&nm, "B", r, n);
        }
        let Some(mut cur) = cursor else {
            return Ok(());
        };
        loop {
            let f = self.frames[cur].func_id;
            let nm = name(f);
            self.event(&nm, "E", r, cur)?;
            let parent = self.frames[cur].parent;
            if f == r.func_id || parent.is_none() {
                self.cursors.insert(r.tid, parent);
                return Ok(());
            }
            cur = parent.unwrap_or(cur);
        }
    }

    pub fn finish(mut self, name: &mut dyn FnMut(i32) -> String) -> io::Result<W> {
        self.out
            .write_all(b"\n  ],\n  \"displayTimeUnit\": \"ns\",\n  \"stackFrames\": {")?;
        let hashes: Vec<u32> = (0..self.frames.len())
            .map(|i| densemap::hash_u32(i as u32))
            .collect();
        for (k, i) in densemap::iteration_order(&hashes).into_iter().enumerate() {
            self.out.write_all(if k == 0 { b"\n" } else { b",\n" })?;
            let f = &self.frames[i];
            write!(
                self.out,
                "    \"{i}\" : {{ \"name\" : \"{}\"",
                name(f.func_id)
            )?;
            if let Some(p) = f.parent {
                write!(self.out, ", \"parent\": \"{p}\"")?;
            }
            self.out.write_all(b" }")?;
        }
        self.out.write_all(b"\n  }\n}\n")?;
        Ok(self.out)
    }
}
