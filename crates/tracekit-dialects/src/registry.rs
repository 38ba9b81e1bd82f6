//! The narrow interface every dialect implements, and what the generic
//! verbs (`info`, `report`, `convert`, `diff`, `sql`) call through it.
//!
//! Detection looks at the content, never at the file name; the first
//! dialect of the registry whose `sniff` accepts an input wins.

use std::process::ExitCode;

use anyhow::Result;

use tracekit_core::timeline::Sink;

use crate::input::Input;
use crate::options::{ConvertOptions, DiffOptions, InfoOptions, ReportOptions};

pub trait Dialect: Sync {
    /// What the format is called in messages ("Git Trace2").
    fn name(&self) -> &'static str;
    /// Does this input look like ours? Sees [`Input::head`] (and, for a
    /// directory, the head of its first file).
    fn sniff(&self, input: &Input) -> bool;
    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode>;
    /// The reports of `inputs` as data (`tracekit_report::Report`: text,
    /// JSON and the HTML page are rendered from them), and the exit
    /// status; warnings are printed here.
    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)>;
    /// The `convert --to` targets the dialect writes itself (its own
    /// formats), beside the targets of every dialect
    /// ([`crate::convert::TARGETS`]): what `convert` dispatches to and what its
    /// help and errors list.
    fn targets(&self) -> &'static [Target];
    /// `report --diff A B`: what changed from `base` to `new`.
    fn diff(&self, base: &Input, new: &Input, args: &ReportOptions) -> Result<ExitCode> {
        let _ = (new, args);
        anyhow::bail!(
            "{}: --diff is not available for {}",
            base.display(),
            self.name()
        )
    }
    /// `tracekit diff BEFORE AFTER`: what changed from `before` to
    /// `after` (both of this dialect), as a report; the exit status says
    /// whether records were lost on either side.
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        let _ = (after, options);
        Err(crate::out::UsageError(format!(
            "{}: diff is not available for {}",
            before.display(),
            self.name()
        ))
        .into())
    }
    /// Maps the input to the timeline model, into `sink`: every
    /// cross-format output (Chrome JSON, Perfetto, ...) is written from it.
    fn timeline(
        &self,
        input: &Input,
        args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode>;
    /// Writes the input's rows into the SQL tables (`docs/sql.md`): the
    /// generic ones from [`Dialect::timeline`], and the dialect's own
    /// where it has some. Runs only the passes whose tables are wanted.
    fn tables(
        &self,
        input: &Input,
        args: &ConvertOptions,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        timeline_tables(self, input, args, tables).map(|c| c.unwrap_or(ExitCode::SUCCESS))
    }
    /// Whether [`Dialect::tables`] writes the generic and the dialect's
    /// own tables from one pass (then `convert --to parquet` asks for
    /// them together rather than from two threads) for the input at `path`.
    fn tables_in_one_pass(&self, path: &std::path::Path) -> bool {
        let _ = path;
        false
    }
}

/// A `convert --to` target: the names it answers to (the first is the one
/// listed), a line for `convert --help`, and what writes it.
pub struct Target {
    pub names: &'static [&'static str],
    pub about: &'static str,
    pub write: Writer,
}

/// What writes a [`Target`].
#[derive(Clone, Copy)]
pub enum Writer {
    /// Any dialect's input, given its dialect (through the timeline model).
    Any(fn(&Input, &'static dyn Dialect, &ConvertOptions) -> Result<ExitCode>),
    /// All the inputs of the command line at once, of any dialects.
    Inputs(fn(&ConvertOptions) -> Result<ExitCode>),
    /// One dialect's input, in a format of that dialect.
    Own(fn(&Input, &ConvertOptions) -> Result<ExitCode>),
}

impl Target {
    pub fn name(&self) -> &'static str {
        self.names[0]
    }
    pub fn answers_to(&self, name: &str) -> bool {
        self.names.contains(&name)
    }
}

/// The generic tables of `input`, when any is wanted (`None` if none is).
pub fn timeline_tables<D: Dialect + ?Sized>(
    dialect: &D,
    input: &Input,
    args: &ConvertOptions,
    tables: &mut tracekit_parquet::Tables<'_>,
) -> Result<Option<ExitCode>> {
    use tracekit_parquet::Table;
    if !Table::ALL
        .iter()
        .any(|t| t.is_generic() && tables.wants(*t))
    {
        return Ok(None);
    }
    let mut rows = tracekit_parquet::TimelineRows::new(tables);
    let code = dialect.timeline(input, args, &mut rows)?;
    warn_row_stats(input, &rows.stats);
    Ok(Some(code))
}

/// Says what the timeline rows could not hold, if anything.
pub fn warn_row_stats(input: &Input, s: &tracekit_parquet::timeline::RowStats) {
    if s.unclosed_slices + s.unmatched_ends + s.undeclared_tracks > 0 {
        eprintln!(
            "tracekit: {}: {} slices never ended, {} ends without a begin, {} events on undeclared tracks: not in the tables",
            input.display(),
            s.unclosed_slices,
            s.unmatched_ends,
            s.undeclared_tracks
        );
    }
}

/// The dialects, in detection order (most specific first).
pub static DIALECTS: &[&dyn Dialect] = &[
    &crate::trace2::Trace2,
    &crate::rtrace::Rtrace,
    &crate::xray::Xray,
    &crate::build::Kwinject,
    &crate::ninja::NinjaLog,
    &crate::posix::PosixLog,
    // Add your dialect above this line (one entry).
];

/// Finds the dialect of `input`, or says which formats were tried.
pub fn detect(input: &Input) -> Result<&'static dyn Dialect> {
    for d in DIALECTS {
        if d.sniff(input) {
            return Ok(*d);
        }
    }
    let tried: Vec<&str> = DIALECTS.iter().map(|d| d.name()).collect();
    Err(tracekit_core::Error::UnknownFormat {
        file: input.path.clone(),
        tried: tried.join(", "),
    }
    .into())
}

/// Groups inputs by dialect, keeping the order of first appearance, so a
/// report over several files of one dialect sees them together.
pub fn group(inputs: Vec<Input>) -> Result<Vec<(&'static dyn Dialect, Vec<Input>)>> {
    let mut groups: Vec<(&'static dyn Dialect, Vec<Input>)> = Vec::new();
    for input in inputs {
        let d = detect(&input)?;
        // By name: the dialects are zero-sized statics, which may share
        // one address.
        match groups.iter_mut().find(|(g, _)| g.name() == d.name()) {
            Some((_, v)) => v.push(input),
            None => groups.push((d, vec![input])),
        }
    }
    Ok(groups)
}
