//! Folded stacks (`a;b;c 42`, the input of every flame-graph tool) and SVG
//! flame graphs rendered by inferno.

use std::io::{self, Write};

/// Writes one folded-stack line. Frames must not contain `;` or newlines;
/// they are replaced by `:` and spaces so the line stays parseable.
pub fn write_folded<W: Write + ?Sized, S: AsRef<str>>(
    out: &mut W,
    frames: &[S],
    value: u64,
) -> io::Result<()> {
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            out.write_all(b";")?;
        }
        let f = f.as_ref();
        if f.contains([';', '\n', '\r']) {
            let clean: String = f
                .chars()
                .map(|c| match c {
                    ';' => ':',
                    '\n' | '\r' => ' ',
                    c => c,
                })
                .collect();
            out.write_all(clean.as_bytes())?;
        } else {
            out.write_all(f.as_bytes())?;
        }
    }
    writeln!(out, " {value}")
}

/// Options for [`svg_from_folded`].
pub struct FlameOptions<'a> {
    pub title: &'a str,
    /// What the sample values count ("ns", "bytes", "calls").
    pub count_name: &'a str,
    /// Icicle (root at the top) instead of a flame.
    pub inverted: bool,
}

impl Default for FlameOptions<'_> {
    fn default() -> Self {
        FlameOptions {
            title: "Flame Graph",
            count_name: "samples",
            inverted: false,
        }
    }
}

/// Renders folded-stack lines as an SVG flame graph.
pub fn svg_from_folded<W: Write>(folded: &[u8], opts: &FlameOptions<'_>, out: W) -> io::Result<()> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = opts.title.to_string();
    o.count_name = opts.count_name.to_string();
    if opts.inverted {
        o.direction = inferno::flamegraph::Direction::Inverted;
    }
    inferno::flamegraph::from_reader(&mut o, folded, out).map_err(|e| {
        // An I/O failure keeps its kind (a closed pipe stays one).
        let kind = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
            .find_map(|e| e.downcast_ref::<io::Error>())
            .map_or(io::ErrorKind::Other, io::Error::kind);
        io::Error::new(kind, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_lines_and_svg() {
        let mut folded = Vec::new();
        write_folded(&mut folded, &["main", "a;b", "c"], 10).unwrap();
        write_folded(&mut folded, &["main", "d"], 5).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&folded),
            "main;a:b;c 10\nmain;d 5\n"
        );
        let mut svg = Vec::new();
        svg_from_folded(&folded, &FlameOptions::default(), &mut svg).unwrap();
        let s = String::from_utf8(svg).unwrap();
        assert!(s.starts_with("<?xml"));
        assert!(s.contains("main"));
    }
}
