use super::*;

/// The fast path reads every corpus region line exactly as the full
/// parser does, and declines what it cannot read.
#[test]
fn fast_region_agrees_with_the_parser() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/trace2");
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus).unwrap().flatten() {
        let Ok(data) = std::fs::read(entry.path().join("event.jsonl")) else {
            continue;
        };
        for line in data.split(|&c| c == b'\n') {
            let full = Format::Event.parse(line);
            let fast = fast_region(line);
            let expected = match full.as_ref().map(|e| &e.body) {
                Ok(Body::RegionEnter(r)) => Some((false, r, Micros(0))),
                Ok(Body::RegionLeave { region, t_rel }) => Some((true, region, *t_rel)),
                _ => None,
            };
            match (fast, expected) {
                (Some(f), Some((leave, r, t_rel))) => {
                    let ev = full.as_ref().unwrap();
                    assert_eq!(f.leave, leave);
                    assert_eq!(Some(f.sid), ev.sid.as_deref());
                    assert_eq!(Some(f.thread), ev.thread.as_deref());
                    assert_eq!(f.nesting, r.nesting);
                    assert_eq!(f.category, r.category.as_deref());
                    assert_eq!(f.label, r.label.as_deref());
                    assert_eq!(f.t_rel, t_rel);
                    seen += 1;
                }
                (None, Some(_)) => {
                    panic!("fast path declined {}", String::from_utf8_lossy(line))
                }
                (Some(_), None) => {
                    panic!("fast path accepted {}", String::from_utf8_lossy(line))
                }
                (None, None) => {}
            }
        }
    }
    assert!(seen > 1000);
    let line = br#"{"event":"region_leave","sid":"a","thread":"main","time":"x","t_rel":0.5,"nesting":1,"category":"c","label":"l","msg":"m\"}"}"#;
    assert_eq!(fast_region(line).unwrap().t_rel, Micros(500_000));
    // Cut short, escapes, unknown keys: left to the full parser.
    assert!(fast_region(&line[..line.len() - 1]).is_none());
    assert!(fast_region(
        br#"{"event":"region_enter","sid":"a","thread":"main","nesting":1,"label":"a\"b"}"#
    )
    .is_none());
    assert!(fast_region(
        br#"{"event":"region_enter","sid":"a","thread":"main","nesting":1,"label":"l","new":1}"#
    )
    .is_none());
    assert!(fast_region(
        br#"{"event":"region_enter","sid":"a","thread":"main","nesting":x,"label":"l"}"#
    )
    .is_none());
}
