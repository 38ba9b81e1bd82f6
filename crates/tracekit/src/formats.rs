//! Format detection and dispatch for the generic verbs.
//!
//! Every dialect implements [`Dialect`] in its `cmd/` module and is listed
//! once in [`DIALECTS`]. Detection looks at the content, never at the file
//! name; the first dialect whose `sniff` accepts an input wins.

use std::process::ExitCode;

use anyhow::Result;

use tracekit_core::timeline::Sink;

use crate::cmd::{convert, info, report};
use crate::input::Input;

pub trait Dialect: Sync {
    /// What the format is called in messages ("Git Trace2").
    fn name(&self) -> &'static str;
    /// Does this input look like ours? Sees [`Input::head`] (and, for a
    /// directory, the head of its first file).
    fn sniff(&self, input: &Input) -> bool;
    fn info(&self, inputs: &[Input], args: &info::Args) -> Result<ExitCode>;
    fn report(&self, inputs: &[Input], args: &report::Args) -> Result<ExitCode>;
    fn convert(&self, input: &Input, args: &convert::Args) -> Result<ExitCode>;
    /// `report --diff A B`: what changed from `base` to `new`.
    fn diff(&self, base: &Input, new: &Input, args: &report::Args) -> Result<ExitCode> {
        let _ = (new, args);
        anyhow::bail!(
            "{}: --diff is not available for {}",
            base.display(),
            self.name()
        )
    }
    /// Maps the input to the timeline model, into `sink`: every
    /// cross-format output (Chrome JSON, Perfetto, ...) is written from it.
    fn timeline(
        &self,
        input: &Input,
        args: &convert::Args,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode>;
    /// Writes the input's rows into the SQL tables (`docs/sql.md`): the
    /// generic ones from [`Dialect::timeline`], and the dialect's own
    /// where it has some. Runs only the passes whose tables are wanted.
    fn tables(
        &self,
        input: &Input,
        args: &convert::Args,
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

/// The generic tables of `input`, when any is wanted (`None` if none is).
pub fn timeline_tables<D: Dialect + ?Sized>(
    dialect: &D,
    input: &Input,
    args: &convert::Args,
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
    &crate::cmd::trace2::Trace2,
    &crate::cmd::rtrace::Rtrace,
    &crate::cmd::xray::Xray,
    &crate::cmd::build::Kwinject,
    &crate::cmd::ninja::NinjaLog,
    &crate::cmd::posix::PosixLog,
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
        match groups.iter_mut().find(|(g, _)| std::ptr::addr_eq(*g, d)) {
            Some((_, v)) => v.push(input),
            None => groups.push((d, vec![input])),
        }
    }
    Ok(groups)
}
