//! `convert -output-format=trace_event`: llvm-xray's Chrome trace JSON
//! (B/E events with stack-frame ids shared by identical call paths across
//! threads), streamed: memory holds the call-path trie, not the events.

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};
use std::rc::Rc;

use crate::densemap;
use crate::header::FileHeader;
use crate::names::FunctionNames;
use crate::record::Record;

struct Frame {
    func_id: i32,
    /// The function's name, looked up once per frame (not per event).
    name: Rc<str>,
    parent: Option<usize>,
    children: HashMap<i32, usize>,
}

/// Streams llvm-xray's trace_event JSON.
pub struct TraceEventWriter<'n, W: Write> {
    out: W,
    header: FileHeader,
    frames: Vec<Frame>,
    roots: HashMap<i32, usize>,
    cursors: HashMap<u32, Option<usize>>,
    written: u64,
    line: Vec<u8>,
    /// Names frames by symbol; `None`: by function id (no `-symbolize`).
    names: Option<&'n FunctionNames>,
}

/// The name of function `id`: its symbol, else its number.
fn frame_name(names: Option<&FunctionNames>, id: i32) -> Rc<str> {
    match names {
        Some(n) => n.symbol_or_number(id),
        None => Rc::from(itoa::Buffer::new().format(id)),
    }
}

/// Appends `v` with `digits` decimals exactly as `format!("{v:.digits$}")`
/// does (the binary value's decimal expansion rounded half to even), in
/// integer arithmetic where the value allows, else through `format!`.
fn push_fixed(out: &mut Vec<u8>, v: f64, digits: u32) {
    use std::io::Write as _;
    let bits = v.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // Positive normal numbers below 2^53 with a fractional part (the
    // timestamps): v = mant * 2^-shift with 0 < shift <= 52 + 1022.
    if bits >> 63 == 0 && exp_bits != 0 && exp_bits != 0x7ff {
        let mant = u128::from(frac | (1u64 << 52));
        let shift = 1075 - exp_bits; // v = mant / 2^shift
        if (1..=100).contains(&shift) {
            let scale = 10u128.pow(digits);
            let scaled = mant * scale; // < 2^67
            let q = scaled >> shift;
            let rem = scaled - (q << shift);
            let half = 1u128 << (shift - 1);
            let q = if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            };
            let int = q / scale;
            let dec = (q % scale) as u64;
            let mut num = itoa::Buffer::new();
            // (v < 2^53: the integer part fits.)
            out.extend_from_slice(num.format(int as u64).as_bytes());
            out.push(b'.');
            let d = num.format(dec).as_bytes();
            out.extend(std::iter::repeat_n(b'0', digits as usize - d.len()));
            out.extend_from_slice(d);
            return;
        }
    }
    let _ = write!(out, "{v:.prec$}", prec = digits as usize);
}

impl<'n, W: Write> TraceEventWriter<'n, W> {
    /// `names` names frames by symbol; `None`: by function id.
    pub fn new(
        mut out: W,
        header: FileHeader,
        names: Option<&'n FunctionNames>,
    ) -> io::Result<Self> {
        out.write_all(b"{\n  \"traceEvents\": [\n")?;
        Ok(TraceEventWriter {
            out,
            header,
            frames: Vec::new(),
            roots: HashMap::default(),
            cursors: HashMap::default(),
            written: 0,
            line: Vec::with_capacity(256),
            names,
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
            name: frame_name(self.names, func_id),
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

    /// Writes a `ph` event of the call at `frame`.
    fn event(&mut self, ph: &str, r: &Record<'_>, frame: usize) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        if self.written > 0 {
            l.extend_from_slice(b",\n");
        }
        self.written += 1;
        let ts = 1_000_000f64 / self.header.cycle_frequency as f64 * r.tsc as f64;
        let mut num = itoa::Buffer::new();
        l.extend_from_slice(b"    { \"name\" : \"");
        l.extend_from_slice(self.frames[frame].name.as_bytes());
        l.extend_from_slice(b"\", \"ph\" : \"");
        l.extend_from_slice(ph.as_bytes());
        l.extend_from_slice(b"\", \"tid\" : \"");
        l.extend_from_slice(num.format(r.tid).as_bytes());
        if self.header.version >= 3 {
            l.extend_from_slice(b"\", \"pid\" : \"");
            l.extend_from_slice(num.format(r.pid).as_bytes());
            l.extend_from_slice(b"\", \"ts\" : \"");
            push_fixed(l, ts, 4);
        } else {
            l.extend_from_slice(b"\", \"pid\" : \"1\", \"ts\" : \"");
            push_fixed(l, ts, 3);
        }
        l.extend_from_slice(b"\", \"sf\" : \"");
        l.extend_from_slice(num.format(frame).as_bytes());
        l.extend_from_slice(b"\" }");
        self.out.write_all(l)
    }

    /// Adds one record (time order).
    pub fn record(&mut self, r: &Record<'_>) -> io::Result<()> {
        if r.kind.is_event() {
            return Ok(());
        }
        let cursor = self.cursors.get(&r.tid).copied().flatten();
        if r.kind.is_entry() {
            let n = self.child(cursor, r.func_id);
            self.cursors.insert(r.tid, Some(n));
            return self.event("B", r, n);
        }
        let Some(mut cur) = cursor else {
            return Ok(());
        };
        loop {
            let f = self.frames[cur].func_id;
            self.event("E", r, cur)?;
            let parent = self.frames[cur].parent;
            if f == r.func_id || parent.is_none() {
                self.cursors.insert(r.tid, parent);
                return Ok(());
            }
            cur = parent.unwrap_or(cur);
        }
    }

    pub fn finish(mut self) -> io::Result<W> {
        self.out
            .write_all(b"\n  ],\n  \"displayTimeUnit\": \"ns\",\n  \"stackFrames\": {")?;
        let hashes: Vec<u32> = (0..self.frames.len())
            .map(|i| densemap::hash_u32(i as u32))
            .collect();
        for (k, i) in densemap::iteration_order(&hashes).into_iter().enumerate() {
            self.out.write_all(if k == 0 { b"\n" } else { b",\n" })?;
            let f = &self.frames[i];
            let l = &mut self.line;
            l.clear();
            write!(l, "    \"{i}\" : {{ \"name\" : \"")?;
            l.extend_from_slice(f.name.as_bytes());
            l.push(b'"');
            if let Some(p) = f.parent {
                write!(l, ", \"parent\": \"{p}\"")?;
            }
            l.extend_from_slice(b" }");
            self.out.write_all(l)?;
        }
        self.out.write_all(b"\n  }\n}\n")?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::push_fixed;

    #[test]
    fn fixed_decimals_equal_std_formatting() {
        let mut state = 99u64;
        let mut values = vec![
            0.0, 0.5, 1.5, 2.5, 0.00005, 0.00015, 0.12345, 1e-9, 123.45675, 1e15, 3e17, 7.0,
        ];
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let tsc = state >> (state % 40);
            values.push(1_000_000f64 / 2_500_000_000f64 * tsc as f64);
            values.push(f64::from_bits(state >> 2));
            // Exact ties at the last digit.
            values.push((tsc % 1_000_000) as f64 / 16.0 + 0.00005);
            values.push((tsc % 1_000_000) as f64 / 32.0);
        }
        for v in values {
            for digits in [3u32, 4] {
                let mut got = Vec::new();
                push_fixed(&mut got, v, digits);
                let want = format!("{v:.prec$}", prec = digits as usize);
                assert_eq!(String::from_utf8(got).unwrap(), want, "{v:e}");
            }
        }
    }
}
