//! The report model: a [`Report`] is a tree of typed [`Section`]s.
//!
//! Everything here is data a renderer can draw without knowing the
//! dialect. The JSON field names are a public contract
//! (`docs/report-json.md`): fields are added, never renamed.

use serde::{Deserialize, Serialize};

use crate::value::{Unit, Value};

/// What `tracekit report --json` prints: the schema version, the program
/// that wrote it, and one report per analysed input or group of inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// [`crate::SCHEMA`].
    pub schema: String,
    /// `tracekit VERSION`.
    pub generator: String,
    pub reports: Vec<Report>,
}

/// One report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which dialect made it: `trace2`, `xray`, `build`, `ninja`, `rtrace`,
    /// `posix`.
    pub dialect: String,
    pub title: String,
    pub inputs: Vec<Input>,
    pub sections: Vec<Section>,
    /// How the text renderer starts the report: [`TextForm::Generic`]
    /// prints the title and inputs; dialects whose text layout is pinned
    /// put their header in their first section and say
    /// [`TextForm::Omit`]. Not in JSON.
    #[serde(skip)]
    pub text: TextForm,
}

/// An input a report was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// The path as the user gave it (`-` for standard input).
    pub path: String,
    /// The format as `tracekit info` names it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// How the text renderer shows a section (the JSON renderer shows every
/// section and ignores this; the HTML renderer looks at
/// [`Section::html`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum TextForm {
    /// The generic text layout of the section's kind.
    #[default]
    Generic,
    /// The dialect's own text, printed as is (it ends with its newline):
    /// for layouts the tests pin byte for byte. The data must still be
    /// complete in the section's body.
    Verbatim(String),
    /// Not in the text report (charts, or data the text never showed).
    Omit,
}

/// A node of the report tree: an id (stable within the dialect, used as
/// the HTML anchor and by scripts), a title, a typed body and children.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    #[serde(flatten)]
    pub body: Body,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<Section>,
    /// See [`TextForm`]. Not in JSON.
    #[serde(skip)]
    pub text: TextForm,
    /// Whether the HTML page draws this section (a view the page shows
    /// better another way may leave it to text and JSON). Not in JSON.
    #[serde(skip, default = "yes")]
    pub html: bool,
}

fn yes() -> bool {
    true
}

/// A section's content, by kind (`"kind"` in JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// Nothing of its own: a heading over its child sections.
    Group,
    /// Key/value pairs (totals, settings, what a run was).
    Summary {
        items: Vec<Item>,
    },
    Table(Table),
    Flame(Flame),
    Series(Series),
    Histogram(Histogram),
    Spans(Spans),
    /// Notes and warnings (a reader's warnings, what was left out).
    Notes {
        items: Vec<Note>,
        /// Notes not kept (past a reader's cap), counted.
        #[serde(default, skip_serializing_if = "is_zero")]
        more: u64,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One key/value pair of a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Stable name (`events`, `span`), for scripts.
    pub key: String,
    /// What a person reads.
    pub label: String,
    pub value: Value,
    pub unit: Unit,
}

/// A column of a [`Table`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Stable name: the field of each JSON row.
    pub key: String,
    pub label: String,
    pub unit: Unit,
}

/// A table: columns with units, rows (usually the top N of a ranking) and
/// what was left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    /// One value per column, in column order.
    pub rows: Vec<Vec<Value>>,
    /// The rows not shown, if any.
    pub more: Option<More>,
    /// The order the rows are in, if they are ranked.
    pub sort: Option<Sort>,
}

/// Rows of a table not shown, and their totals per column (in column
/// order; [`Value::Null`] where a total means nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct More {
    pub rows: u64,
    pub totals: Vec<Value>,
}

/// How a table's rows are ordered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sort {
    /// A column key.
    pub column: String,
    pub descending: bool,
}

/// Weighted folded stacks: a flame graph's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flame {
    /// What the weights measure ("self time", "bytes allocated").
    pub measure: String,
    pub unit: Unit,
    /// Stacks and their own (self) weight; a stack appears once.
    pub stacks: Vec<Stack>,
    /// Stacks left out (the lightest) and their total weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<MoreStacks>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stack {
    /// Outermost first.
    pub frames: Vec<String>,
    pub weight: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoreStacks {
    pub stacks: u64,
    pub weight: f64,
}

/// One or more named series over a shared x axis (usually time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub x_label: String,
    pub x_unit: Unit,
    /// Where each value is: the start of its bucket when `bucket` is set.
    pub x: Vec<f64>,
    /// The width of the x interval each value covers, when values are
    /// per-bucket amounts (events per bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<f64>,
    pub y_label: String,
    pub y_unit: Unit,
    /// Whether the lines add up (drawn stacked) or are separate measures.
    pub stacked: bool,
    pub lines: Vec<Line>,
    /// How many series were folded into a line named `other`, if any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folded: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub name: String,
    /// One per x.
    pub values: Vec<f64>,
}

/// A distribution: counts per bucket `[lo, hi)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// What is counted ("commands", "calls").
    pub counted: String,
    /// The unit of the bucket bounds.
    pub unit: Unit,
    /// Whether the buckets grow geometrically (drawn on a log axis).
    pub log: bool,
    pub buckets: Vec<Bucket>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// Spans on lanes: process trees, Gantt charts of processes, per-thread
/// call timelines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spans {
    /// How to draw them.
    pub view: SpanView,
    /// The unit of `start` and `end`.
    pub unit: Unit,
    pub lanes: Vec<Lane>,
    pub spans: Vec<Span>,
    /// What a highlighted span is ("on the critical path"), if any is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highlight: Option<String>,
    /// Spans left out (past a cap), counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanView {
    /// Lanes over time, spans nested by depth within a lane.
    Gantt,
    /// A tree by `parent`, with durations.
    Tree,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lane {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// Index into [`Spans::lanes`].
    pub lane: u32,
    /// Nesting level within the lane, 0 at the top.
    pub depth: u32,
    pub start: f64,
    pub end: f64,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The `id` of the span this one is part of (a child process's
    /// parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub highlight: bool,
    /// More to say (a command line, an exit status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub level: Level,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
}

// ---------------------------------------------------------------- building

impl Report {
    pub fn new(dialect: impl Into<String>, title: impl Into<String>) -> Report {
        Report {
            dialect: dialect.into(),
            title: title.into(),
            inputs: Vec::new(),
            sections: Vec::new(),
            text: TextForm::Generic,
        }
    }

    pub fn input(&mut self, path: impl Into<String>, format: Option<String>) -> &mut Self {
        self.inputs.push(Input {
            path: path.into(),
            format,
        });
        self
    }

    pub fn push(&mut self, section: Section) -> &mut Self {
        self.sections.push(section);
        self
    }

    /// The section with this id, anywhere in the tree (depth first).
    pub fn find(&self, id: &str) -> Option<&Section> {
        fn find<'a>(s: &'a [Section], id: &str) -> Option<&'a Section> {
            s.iter()
                .find_map(|x| (x.id == id).then_some(x).or_else(|| find(&x.sections, id)))
        }
        find(&self.sections, id)
    }
}

impl Section {
    pub fn new(id: impl Into<String>, title: impl Into<String>, body: Body) -> Section {
        Section {
            id: id.into(),
            title: title.into(),
            body,
            sections: Vec::new(),
            text: TextForm::Generic,
            html: true,
        }
    }

    pub fn group(id: impl Into<String>, title: impl Into<String>) -> Section {
        Section::new(id, title, Body::Group)
    }

    pub fn summary(id: impl Into<String>, title: impl Into<String>, items: Vec<Item>) -> Section {
        Section::new(id, title, Body::Summary { items })
    }

    pub fn table(id: impl Into<String>, title: impl Into<String>, table: Table) -> Section {
        Section::new(id, title, Body::Table(table))
    }

    pub fn notes(id: impl Into<String>, title: impl Into<String>, items: Vec<Note>) -> Section {
        Section::new(id, title, Body::Notes { items, more: 0 })
    }

    /// A reader's warnings as a notes section (positions in front of the
    /// messages; the ones past the cap counted in `more`).
    pub fn warnings(
        id: impl Into<String>,
        title: impl Into<String>,
        w: &tracekit_core::Warnings,
    ) -> Section {
        let items: Vec<Note> = w
            .kept()
            .iter()
            .map(|x| {
                let text = match x.position {
                    tracekit_core::Position::Line(n) => format!("line {n}: {}", x.message),
                    tracekit_core::Position::Offset(n) => {
                        format!("byte offset {n}: {}", x.message)
                    }
                    tracekit_core::Position::Unknown => x.message.clone(),
                };
                Note {
                    level: Level::Warning,
                    text,
                }
            })
            .collect();
        let more = w.total().saturating_sub(items.len() as u64);
        Section::new(id, title, Body::Notes { items, more })
    }

    /// The dialect's own text for this section (see [`TextForm::Verbatim`]).
    pub fn verbatim(mut self, text: impl Into<String>) -> Section {
        self.text = TextForm::Verbatim(text.into());
        self
    }

    /// Leaves the section out of the text report.
    pub fn omit_text(mut self) -> Section {
        self.text = TextForm::Omit;
        self
    }

    /// Leaves the section out of the HTML page.
    pub fn omit_html(mut self) -> Section {
        self.html = false;
        self
    }

    pub fn child(mut self, s: Section) -> Section {
        self.sections.push(s);
        self
    }
}

impl Item {
    pub fn new(
        key: impl Into<String>,
        label: impl Into<String>,
        value: impl Into<Value>,
        unit: Unit,
    ) -> Item {
        Item {
            key: key.into(),
            label: label.into(),
            value: value.into(),
            unit,
        }
    }
}

impl Column {
    pub fn new(key: impl Into<String>, label: impl Into<String>, unit: Unit) -> Column {
        Column {
            key: key.into(),
            label: label.into(),
            unit,
        }
    }
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            ..Table::default()
        }
    }

    /// Adds a row (one value per column; missing ones are null).
    pub fn row(&mut self, mut values: Vec<Value>) -> &mut Self {
        values.resize(self.columns.len(), Value::Null);
        self.rows.push(values);
        self
    }

    pub fn sorted_by(mut self, column: &str, descending: bool) -> Table {
        self.sort = Some(Sort {
            column: column.to_string(),
            descending,
        });
        self
    }

    /// The index of a column by key.
    pub fn column(&self, key: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.key == key)
    }

    /// Keeps the first `n` rows; the others become [`Table::more`], with
    /// totals for the columns named in `totals` (others null).
    pub fn keep(&mut self, n: usize, totals: &[&str]) -> &mut Self {
        if self.rows.len() <= n {
            return self;
        }
        let rest = self.rows.split_off(n);
        let mut sums = vec![Value::Null; self.columns.len()];
        for (i, c) in self.columns.iter().enumerate() {
            if totals.contains(&c.key.as_str()) {
                sums[i] = rest.iter().fold(Value::Null, |acc, r| acc.add(&r[i]));
            }
        }
        let more = self.more.get_or_insert_with(More::default);
        more.rows += rest.len() as u64;
        if more.totals.is_empty() {
            more.totals = sums;
        } else {
            for (a, b) in more.totals.iter_mut().zip(&sums) {
                *a = a.add(b);
            }
        }
        self
    }
}

// ---------------------------------------------------------------- table JSON

/// A table in JSON: rows are objects keyed by column key (what `jq`
/// users expect); `more.totals` likewise, without the null ones.
mod table_serde {
    use std::collections::HashMap;

    use serde::de::Error as _;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Column, More, Sort, Table};
    use crate::value::Value;

    struct Row<'a>(&'a [Column], &'a [Value], bool);

    impl Serialize for Row<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let n = if self.2 {
                self.1.iter().filter(|v| !v.is_null()).count()
            } else {
                self.0.len()
            };
            let mut m = s.serialize_map(Some(n))?;
            for (c, v) in self.0.iter().zip(self.1) {
                if self.2 && v.is_null() {
                    continue;
                }
                m.serialize_entry(&c.key, v)?;
            }
            m.end()
        }
    }

    struct Rows<'a>(&'a Table);

    impl Serialize for Rows<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.rows.iter().map(|r| Row(&self.0.columns, r, false)))
        }
    }

    #[derive(Serialize)]
    struct MoreOut<'a> {
        rows: u64,
        totals: Row<'a>,
    }

    #[derive(Serialize)]
    struct TableOut<'a> {
        columns: &'a [Column],
        rows: Rows<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        more: Option<MoreOut<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        sort: Option<&'a Sort>,
    }

    impl Serialize for Table {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            TableOut {
                columns: &self.columns,
                rows: Rows(self),
                more: self.more.as_ref().map(|m| MoreOut {
                    rows: m.rows,
                    totals: Row(&self.columns, &m.totals, true),
                }),
                sort: self.sort.as_ref(),
            }
            .serialize(s)
        }
    }

    #[derive(Deserialize)]
    struct MoreIn {
        rows: u64,
        #[serde(default)]
        totals: HashMap<String, Value>,
    }

    #[derive(Deserialize)]
    struct TableIn {
        columns: Vec<Column>,
        rows: Vec<HashMap<String, Value>>,
        #[serde(default)]
        more: Option<MoreIn>,
        #[serde(default)]
        sort: Option<Sort>,
    }

    fn aligned(columns: &[Column], mut m: HashMap<String, Value>) -> Vec<Value> {
        columns
            .iter()
            .map(|c| m.remove(&c.key).unwrap_or_default())
            .collect()
    }

    impl<'de> Deserialize<'de> for Table {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
            let t = TableIn::deserialize(d)?;
            for r in &t.rows {
                if let Some(k) = r.keys().find(|k| !t.columns.iter().any(|c| &c.key == *k)) {
                    return Err(D::Error::custom(format!("row field {k:?} is not a column")));
                }
            }
            let more = t.more.map(|m| More {
                rows: m.rows,
                totals: aligned(&t.columns, m.totals),
            });
            let rows = t.rows.into_iter().map(|r| aligned(&t.columns, r)).collect();
            Ok(Table {
                columns: t.columns,
                rows,
                more,
                sort: t.sort,
            })
        }
    }
}
