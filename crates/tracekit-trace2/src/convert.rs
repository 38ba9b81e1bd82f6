//! Writing events in any trace2 format, with the per-process state the
//! text formats need.

use crate::event::Event;
use crate::perf::PerfOptions;
use crate::reader::Format;
use crate::{event_fmt, normal, perf};

/// Writes an event back in the format it was read from (the event carries
/// every column that format needs).
pub fn write_same_format(ev: &Event<'_>, format: Format, out: &mut Vec<u8>) {
    match format {
        Format::Event => event_fmt::write(ev, out),
        Format::Perf { brief } => perf::write(ev, 0, 0, PerfOptions { brief }, out),
        Format::Normal { brief } => normal::write(ev, brief, out),
    }
}
