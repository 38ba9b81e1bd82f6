//! The model through its three renderers: JSON reads back to the same
//! data, the text has each kind's generic layout, and the page escapes
//! what the inputs carry and links to nothing.

use tracekit_report::*;

/// A report with a section of every kind, and input-derived strings that
/// must not turn into markup.
pub fn sample() -> Report {
    let mut r = Report::new("test", "A <test> report");
    r.input("in/trace & co", Some("Some format".into()));
    r.push(Section::summary(
        "summary",
        "Summary",
        vec![
            Item::new("events", "events", 1234567u64, Unit::Count),
            Item::new("span", "time span", 0.0123, Unit::S),
            Item::new("name", "name", "x\"y", Unit::Text),
            Item::new("ok", "complete", true, Unit::Text),
            Item::new("missing", "not known", Value::Null, Unit::Bytes),
        ],
    ));
    let mut t = Table::new(vec![
        Column::new("name", "name", Unit::Text),
        Column::new("n", "count", Unit::Count),
        Column::new("dur", "duration", Unit::Ns),
        Column::new("share", "share", Unit::Percent),
        Column::new("stack", "stack", Unit::Stack),
    ])
    .sorted_by("n", true);
    for i in 0..5u64 {
        t.row(vec![
            format!("<script>alert({i})</script>").into(),
            (100 - i).into(),
            (1500 * i).into(),
            (i as f64 * 10.0).into(),
            vec!["main".to_string(), format!("f{i}")].into(),
        ]);
    }
    t.keep(3, &["n", "dur"]);
    r.push(Section::table("table", "A table", t));
    r.push(Section::new(
        "flame",
        "Flame",
        Body::Flame(Flame {
            measure: "self time".into(),
            unit: Unit::S,
            stacks: vec![
                Stack {
                    frames: vec!["main".into(), "work".into()],
                    weight: 0.75,
                },
                Stack {
                    frames: vec!["main".into()],
                    weight: 0.25,
                },
            ],
            more: Some(MoreStacks {
                stacks: 3,
                weight: 0.001,
            }),
        }),
    ));
    r.push(Section::new(
        "series",
        "Series",
        Body::Series(Series {
            x_label: "time".into(),
            x_unit: Unit::S,
            x: vec![0.0, 1.0, 2.0],
            bucket: Some(1.0),
            y_label: "events per bucket".into(),
            y_unit: Unit::Count,
            stacked: true,
            lines: vec![
                Line {
                    name: "a".into(),
                    values: vec![1.0, 5.0, 2.0],
                },
                Line {
                    name: "other".into(),
                    values: vec![0.0, 1.0, 0.0],
                },
            ],
            folded: 2,
        }),
    ));
    r.push(Section::new(
        "histogram",
        "Histogram",
        Body::Histogram(Histogram {
            counted: "calls".into(),
            unit: Unit::S,
            log: true,
            buckets: vec![
                Bucket {
                    lo: 1e-6,
                    hi: 2e-6,
                    count: 3,
                },
                Bucket {
                    lo: 2e-6,
                    hi: 4e-6,
                    count: 7,
                },
            ],
        }),
    ));
    let span = |lane, depth, start, end, name: &str, id, parent, hl| Span {
        lane,
        depth,
        start,
        end,
        name: name.into(),
        id,
        parent,
        highlight: hl,
        detail: Some("cc -c x.c".into()),
    };
    r.push(Section::new(
        "gantt",
        "Gantt",
        Body::Spans(Spans {
            view: SpanView::Gantt,
            unit: Unit::S,
            lanes: vec![
                Lane {
                    name: "lane 0".into(),
                },
                Lane {
                    name: "lane 1".into(),
                },
            ],
            spans: vec![
                span(0, 0, 0.0, 4.0, "make", Some(1), None, true),
                span(0, 1, 0.5, 2.0, "cc", Some(2), Some(1), false),
                span(1, 0, 1.0, 3.5, "ld", Some(3), Some(1), true),
            ],
            highlight: Some("on the critical path".into()),
            more: 2,
        }),
    ));
    r.push(
        Section::new(
            "tree",
            "Tree",
            Body::Spans(Spans {
                view: SpanView::Tree,
                unit: Unit::S,
                lanes: vec![Lane { name: "all".into() }],
                spans: vec![
                    span(0, 0, 0.0, 4.0, "make", Some(1), None, true),
                    span(0, 1, 0.5, 2.0, "cc", Some(2), Some(1), false),
                    span(0, 2, 0.6, 1.9, "cc1", Some(4), Some(2), false),
                    span(0, 1, 1.0, 3.5, "ld", Some(3), Some(1), true),
                ],
                highlight: Some("on the critical path".into()),
                more: 0,
            }),
        )
        .child(Section::notes(
            "notes",
            "Notes",
            vec![
                Note {
                    level: Level::Info,
                    text: "an <info>".into(),
                },
                Note {
                    level: Level::Warning,
                    text: "a warning".into(),
                },
            ],
        )),
    );
    r.push(Section::group("group", "An empty group"));
    r
}

/// Clears what JSON does not carry (presentation hints).
fn without_hints(mut r: Report) -> Report {
    fn clear(s: &mut Section) {
        s.text = TextForm::Generic;
        s.html = true;
        s.sections.iter_mut().for_each(clear);
    }
    r.text = TextForm::Generic;
    r.sections.iter_mut().for_each(clear);
    r
}

#[test]
fn json_reads_back_to_the_same_report() {
    let r = sample();
    let mut out = Vec::new();
    json::write(&mut out, std::slice::from_ref(&r)).unwrap();
    let doc = json::parse(&out).unwrap();
    assert_eq!(doc.schema, SCHEMA);
    assert_eq!(doc.reports, vec![without_hints(r)]);

    // Rows are objects keyed by column; totals only where they mean something.
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let t = &v["reports"][0]["sections"][1];
    assert_eq!(t["kind"], "table");
    assert_eq!(t["rows"][0]["n"], 100);
    assert_eq!(t["rows"][0]["stack"], serde_json::json!(["main", "f0"]));
    assert_eq!(t["more"]["rows"], 2);
    assert_eq!(
        t["more"]["totals"],
        serde_json::json!({"n": 193, "dur": 10500})
    );
    assert_eq!(
        t["sort"],
        serde_json::json!({"column": "n", "descending": true})
    );
    assert_eq!(
        v["reports"][0]["sections"][0]["items"][4]["value"],
        serde_json::Value::Null
    );

    // Another major version is refused; unknown fields are ignored.
    let other = String::from_utf8(out)
        .unwrap()
        .replace("tracekit.report/1", "tracekit.report/2");
    assert!(json::parse(other.as_bytes())
        .unwrap_err()
        .contains("tracekit.report/2"));
    let extra = r#"{"schema":"tracekit.report/1","generator":"x","future":1,"reports":[
        {"dialect":"d","title":"t","inputs":[],"sections":[
          {"id":"s","title":"S","kind":"table","columns":[{"key":"a","label":"A","unit":"count"}],
           "rows":[{"a":1}],"new_field":true}]}]}"#;
    assert!(json::parse(extra.as_bytes()).is_ok());
    let bad = extra.replace(r#"[{"a":1}]"#, r#"[{"b":1}]"#);
    assert!(json::parse(bad.as_bytes()).unwrap_err().contains("\"b\""));
}

#[test]
fn text_has_every_kind_in_its_generic_layout() {
    let mut out = Vec::new();
    text::write(&mut out, &[sample()]).unwrap();
    let t = String::from_utf8(out).unwrap();
    for want in [
        "A <test> report\n  input: in/trace & co (Some format)\n",
        "Summary\n  events:    1234567\n  time span: 12.3 ms\n",
        "  not known:\n",
        // Aligned columns, numbers to the right, the rest's totals last.
        "  name                      count duration share stack\n",
        "  <script>alert(0)</script>   100      0 s    0% main › f0\n",
        "  (2 more)                    193  10.5 µs\n",
        "  (2 more rows not shown; their totals on the last line)\n",
        "  self time in all: 1 s; the heaviest stacks:\n  750 ms  main > work\n",
        "  ... 3 more stacks\n",
        "  a     |▂█▄| total 8\n",
        "  [1 µs, 2 µs) 3 ##################\n",
        "  lane 0: 2 spans, 4 s at the top level\n",
        "  make  4 s *\n    cc  1.5 s\n      cc1  1.3 s\n    ld  2.5 s *\n",
        "  (* on the critical path)\n",
        "  note: an <info>\n  warning: a warning\n",
        "An empty group\n",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
}

#[test]
fn text_forms_replace_or_omit_the_generic_layout() {
    let mut r = Report::new("test", "title");
    r.text = TextForm::Omit;
    r.push(Section::summary("a", "A", vec![]).verbatim("exactly this\n"));
    r.push(Section::summary("b", "B", vec![]).omit_text());
    let mut out = Vec::new();
    text::write(&mut out, &[r]).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "exactly this\n");
}

#[test]
fn page_escapes_input_and_links_nowhere() {
    let mut out = Vec::new();
    html::write(&mut out, &[sample()]).unwrap();
    let h = String::from_utf8(out).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(!h.contains("<script>alert"), "input became markup");
    assert!(h.contains("&lt;script&gt;alert(0)&lt;/script&gt;"));
    assert!(h.contains("A &lt;test&gt; report"));
    for bad in ["http:", "https:", "src=", "url(", "@import"] {
        assert!(!h.contains(bad), "{bad}");
    }
    for href in h.split("href=\"").skip(1) {
        assert!(href.starts_with('#'), "{}", &href[..20.min(href.len())]);
    }
    // Every kind drew its element; ids are anchors; the script is there once.
    for want in [
        "id=\"r0-summary\"",
        "<table class=\"tk-table\">",
        "<tfoot>",
        "class=\"tk-chart tk-flame\"",
        "class=\"tk-chart tk-series-chart\"",
        "class=\"tk-chart tk-histogram-chart\"",
        "class=\"tk-chart tk-gantt has-hl\"",
        "class=\"span hl\"",
        "<details class=\"tk-tree hl\" open>",
        "<li class=\"warning\">a warning</li>",
        "aria-sort=\"descending\"",
        "data-v=\"100\"",
    ] {
        assert!(h.contains(want), "missing {want}");
    }
    assert_eq!(h.matches("<script>").count(), 1);
    // A section left out of the page is not drawn, nor linked.
    let mut r = sample();
    r.sections[1] = r.sections[1].clone().omit_html();
    let mut out = Vec::new();
    html::write(&mut out, &[r]).unwrap();
    let h = String::from_utf8(out).unwrap();
    assert!(!h.contains("r0-table"));
}
