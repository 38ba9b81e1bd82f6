//! The text of `ninja -t deps` and `ninja -t graph`, for when the build
//! directory itself is not at hand.
//!
//! `ninja -t deps` (ninja's `ToolDeps`): per output with recorded header
//! dependencies, `OUTPUT: #deps N, deps mtime T (VALID|STALE|MISSING)`,
//! then the N dependencies indented by four spaces, then an empty line.
//!
//! `ninja -t graph` (ninja's `GraphViz`): Graphviz `dot`. A file is a
//! node `"0xADDR" [label="path"]`; an edge with one input and one output is
//! an arrow between the two files labelled with the rule; any other edge
//! is a node of its own (`shape=ellipse`, labelled with the rule) with
//! arrows from its inputs (`arrowhead=none`) and to its outputs. Only the
//! nodes ninja visits from the targets (and their inputs) get a label
//! line: an output nothing depends on is drawn unnamed, and left out here.

use std::collections::HashMap;

use tracekit_core::{Error, Position};

use super::manifest::Edge;

/// `-t deps`: output → its recorded dependencies.
pub fn read_deps(text: &str) -> Result<Vec<(String, Vec<String>)>, Error> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(dep) = line.strip_prefix("    ") {
            match out.last_mut() {
                Some((_, deps)) => deps.push(dep.to_string()),
                None => {
                    return Err(Error::malformed(
                        Position::Line(k as u64 + 1),
                        "a dependency before any output",
                    ))
                }
            }
        } else {
            let Some((output, _)) = line.split_once(": #deps ") else {
                return Err(Error::malformed(
                    Position::Line(k as u64 + 1),
                    "not `OUTPUT: #deps N, deps mtime T (VALID)` (ninja -t deps)",
                ));
            };
            out.push((output.to_string(), Vec::new()));
        }
    }
    Ok(out)
}

/// Does `head` look like `ninja -t deps` output?
pub fn sniff_deps(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let s = String::from_utf8_lossy(first);
    s.contains(": #deps ") && s.contains(", deps mtime ")
}

/// Does `head` look like `ninja -t graph` output?
pub fn sniff_graph(head: &[u8]) -> bool {
    head.starts_with(b"digraph ninja {")
}

/// A quoted dot string at the start of `s`: (content, rest).
fn quoted(s: &str) -> Option<(String, &str)> {
    let s = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// `-t graph`: the edges it draws, as manifest edges (rule, inputs,
/// outputs; no command, no line).
pub fn read_graph(text: &str) -> Result<Vec<Edge>, Error> {
    let mut labels: HashMap<String, (String, bool)> = HashMap::new();
    let mut arrows: Vec<(String, String, Option<String>, usize)> = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('"') {
            continue;
        }
        let bad = || {
            Error::malformed(
                Position::Line(k as u64 + 1),
                "not a node or an arrow of ninja -t graph",
            )
        };
        let (a, rest) = quoted(line).ok_or_else(bad)?;
        let rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("->") {
            let (b, attrs) = quoted(r.trim_start()).ok_or_else(bad)?;
            let label = attrs
                .find("label=")
                .and_then(|i| quoted(&attrs[i + 6..]))
                .map(|(l, _)| l);
            arrows.push((a, b, label, k + 1));
        } else {
            let label = rest
                .find("label=")
                .and_then(|i| quoted(&rest[i + 6..]))
                .map(|(l, _)| l)
                .ok_or_else(bad)?;
            labels.insert(a, (label, rest.contains("shape=ellipse")));
        }
    }
    let mut by_node: HashMap<String, Edge> = HashMap::new();
    let mut edges = Vec::new();
    for (a, b, label, line) in &arrows {
        // ninja labels only the nodes it visits (targets and, recursively,
        // their inputs): an output nothing depends on is drawn without a
        // label, and then has no name to depend on.
        let (Some((na, ea)), Some((nb, eb))) = (labels.get(a), labels.get(b)) else {
            continue;
        };
        match (ea, eb) {
            (false, false) => edges.push(Edge {
                rule: label.clone().unwrap_or_default(),
                inputs: vec![na.clone()],
                outputs: vec![nb.clone()],
                ..Default::default()
            }),
            (false, true) => by_node
                .entry(b.clone())
                .or_insert_with(|| Edge {
                    rule: nb.clone(),
                    ..Default::default()
                })
                .inputs
                .push(na.clone()),
            (true, false) => by_node
                .entry(a.clone())
                .or_insert_with(|| Edge {
                    rule: na.clone(),
                    ..Default::default()
                })
                .outputs
                .push(nb.clone()),
            (true, true) => {
                return Err(Error::malformed(
                    Position::Line(*line as u64),
                    "an arrow between two edges",
                ))
            }
        }
    }
    let mut rest: Vec<(String, Edge)> = by_node.into_iter().collect();
    rest.sort_by(|x, y| x.0.cmp(&y.0));
    edges.extend(
        rest.into_iter()
            .map(|(_, e)| e)
            .filter(|e| !e.outputs.is_empty()),
    );
    Ok(edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deps_and_graph() {
        let d = read_deps("a.o: #deps 2, deps mtime 5 (VALID)\n    ../a.c\n    gen.h\n\nb.o: #deps 0, deps mtime 1 (STALE)\n\n").unwrap();
        assert_eq!(
            d,
            [
                (
                    "a.o".to_string(),
                    vec!["../a.c".to_string(), "gen.h".to_string()]
                ),
                ("b.o".to_string(), vec![])
            ]
        );
        assert!(read_deps("    x\n").is_err());
        let g = read_graph("digraph ninja {\n\"1\" [label=\"app\"]\n\"2\" [label=\"link\", shape=ellipse]\n\"2\" -> \"1\"\n\"3\" -> \"2\" [arrowhead=none]\n\"4\" -> \"2\" [arrowhead=none]\n\"3\" [label=\"a.o\"]\n\"4\" [label=\"b.o\"]\n\"5\" -> \"3\" [label=\"cc\"]\n\"5\" [label=\"a \\\"q\\\".c\"]\n}\n").unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(
            (
                g[0].rule.as_str(),
                &g[0].inputs[0][..],
                &g[0].outputs[0][..]
            ),
            ("cc", "a \"q\".c", "a.o")
        );
        assert_eq!(
            (
                g[1].rule.as_str(),
                g[1].inputs.clone(),
                g[1].outputs.clone()
            ),
            (
                "link",
                vec!["a.o".to_string(), "b.o".to_string()],
                vec!["app".to_string()]
            )
        );
    }
}
