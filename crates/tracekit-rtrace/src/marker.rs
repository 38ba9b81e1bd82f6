//! Markers the program made (`include/tracekit/mem.h`:
//! `tracekit_mem_mark`, `tracekit_mem_snapshot`), as the text protocol
//! carries them.
//!
//! sp-rtrace's contexts (`@ id : name`, a call's `@mask`) are sets of
//! phases a call was made in, entered and left, at most 32 of them; a
//! marker is a point of the run, with a time, a thread and a backtrace of
//! its own. So the text carries a marker as a permanent comment (`## `,
//! kept by sp-rtrace's tools, which write it back before the next call
//! that follows it), one line at the place of its event number among the
//! calls (`docs/formats/rtrace.md` §13):
//!
//! ```text
//! ## tracekit-marker: 42. [00:00:01.234] snapshot thread=1234 name="loaded" length=300 frames=0x401136,0x7f0a2c3d4e5f
//! ```
//!
//! The index is the marker's event number + 1 (as a call's), the time the
//! calls' `[HH:MM:SS.mmm]`, the name a JSON string; `length=` only when the
//! name was cut (its length in the program, bytes), `frames=` only when a
//! backtrace was taken (innermost first). The analyses read markers from
//! these comments, whether a recording's items or a text trace's.

use std::fmt::Write as _;

/// How a marker's comment line starts.
pub const PREFIX: &str = "## tracekit-marker: ";

/// What a marker asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// A named point of the run (a phase starting).
    Mark,
    /// A point at which the report shows the live heap.
    Snapshot,
}

impl MarkerKind {
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Mark => "mark",
            MarkerKind::Snapshot => "snapshot",
        }
    }

    /// The kind of a wire record's kind byte (`wire::MARK_*`).
    pub fn from_wire(k: u8) -> Option<MarkerKind> {
        match k {
            tracekit_rtrace_preload::wire::MARK_MARK => Some(MarkerKind::Mark),
            tracekit_rtrace_preload::wire::MARK_SNAPSHOT => Some(MarkerKind::Snapshot),
            _ => None,
        }
    }
}

/// One marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The event number + 1: its place among the calls' indices.
    pub index: u64,
    /// Milliseconds of the recorder's clock (as the calls'), if written.
    pub timestamp: Option<u32>,
    pub kind: MarkerKind,
    /// The calling thread's id (the kernel's tid).
    pub thread: u32,
    /// The name as kept (at most 255 bytes; not UTF-8 bytes are U+FFFD).
    pub name: String,
    /// The name's length in the program (bytes), when it was cut.
    pub cut_from: Option<u64>,
    /// Return addresses, innermost first (empty: no backtrace).
    pub frames: Vec<u64>,
}

impl Marker {
    /// The comment line (without its newline).
    pub fn line(&self) -> String {
        let mut s = String::with_capacity(64 + self.name.len() + 19 * self.frames.len());
        s.push_str(PREFIX);
        let _ = write!(s, "{}. ", self.index);
        if let Some(ms) = self.timestamp {
            let _ = write!(
                s,
                "[{:02}:{:02}:{:02}.{:03}] ",
                ms / 3_600_000,
                ms / 60_000 % 60,
                ms / 1000 % 60,
                ms % 1000
            );
        }
        let _ = write!(s, "{} thread={} name=", self.kind.name(), self.thread);
        s.push_str(&serde_json::Value::from(self.name.as_str()).to_string());
        if let Some(n) = self.cut_from {
            let _ = write!(s, " length={n}");
        }
        for (i, a) in self.frames.iter().enumerate() {
            s.push_str(if i == 0 { " frames=" } else { "," });
            let _ = write!(s, "0x{a:x}");
        }
        s
    }

    /// The marker of a comment line (`None`: not a marker's, or damaged).
    pub fn parse(line: &str) -> Option<Marker> {
        let rest = line.strip_prefix(PREFIX)?;
        let (index, mut rest) = rest.split_once(". ")?;
        let index = index.parse().ok()?;
        let mut timestamp = None;
        if let Some(r) = rest.strip_prefix('[') {
            let (stamp, r) = r.split_once("] ")?;
            let (hms, frac) = stamp.split_once('.')?;
            let mut parts = hms.split(':').map(|p| p.parse::<u32>().ok());
            let (h, m, sec) = (parts.next()??, parts.next()??, parts.next()??);
            if parts.next().is_some() || m >= 60 || sec >= 60 || frac.len() != 3 {
                return None;
            }
            let frac: u32 = frac.parse().ok()?;
            timestamp = Some(
                h.checked_mul(3_600_000)?
                    .checked_add(m * 60_000 + sec * 1000 + frac)?,
            );
            rest = r;
        }
        let (kind, rest) = rest.split_once(' ')?;
        let kind = match kind {
            "mark" => MarkerKind::Mark,
            "snapshot" => MarkerKind::Snapshot,
            _ => return None,
        };
        let rest = rest.strip_prefix("thread=")?;
        let (thread, rest) = rest.split_once(' ')?;
        let thread = thread.parse().ok()?;
        let rest = rest.strip_prefix("name=")?;
        let end = json_string_end(rest)?;
        let name: String = serde_json::from_str(&rest[..end]).ok()?;
        let mut m = Marker {
            index,
            timestamp,
            kind,
            thread,
            name,
            cut_from: None,
            frames: Vec::new(),
        };
        for field in rest[end..].split(' ').filter(|f| !f.is_empty()) {
            if let Some(n) = field.strip_prefix("length=") {
                m.cut_from = Some(n.parse().ok()?);
            } else if let Some(list) = field.strip_prefix("frames=") {
                for a in list.split(',') {
                    let hex = a.strip_prefix("0x")?;
                    m.frames.push(u64::from_str_radix(hex, 16).ok()?);
                }
            } else {
                return None;
            }
        }
        Some(m)
    }
}

/// The length of the JSON string literal at the start of `s` (quotes
/// included).
fn json_string_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let m = Marker {
            index: 42,
            timestamp: Some(86_399_999),
            kind: MarkerKind::Snapshot,
            thread: 1234,
            name: "a \"quoted\" name\nwith a newline and é".into(),
            cut_from: Some(300),
            frames: vec![0x401136, 0x7f0a_2c3d_4e5f],
        };
        let line = m.line();
        assert_eq!(
            line,
            "## tracekit-marker: 42. [23:59:59.999] snapshot thread=1234 \
             name=\"a \\\"quoted\\\" name\\nwith a newline and é\" length=300 \
             frames=0x401136,0x7f0a2c3d4e5f"
        );
        assert_eq!(Marker::parse(&line), Some(m.clone()));
        let plain = Marker {
            timestamp: None,
            kind: MarkerKind::Mark,
            cut_from: None,
            frames: Vec::new(),
            name: String::new(),
            ..m
        };
        assert_eq!(Marker::parse(&plain.line()), Some(plain));
        for bad in [
            "## tracekit-marker: x. mark thread=1 name=\"a\"",
            "## tracekit-marker: 1. phase thread=1 name=\"a\"",
            "## tracekit-marker: 1. mark thread=1 name=\"a",
            "## tracekit-marker: 1. mark thread=1 name=\"a\" what=1",
            "## tracekit-marker: 1. [1:99:00.000] mark thread=1 name=\"a\"",
            "## tracekit: 1. mark thread=1 name=\"a\"",
        ] {
            assert_eq!(Marker::parse(bad), None, "{bad}");
        }
    }
}
