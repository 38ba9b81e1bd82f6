//! sp-rtrace, the resource-allocation tracer of Maemo/MeeGo: its text
//! protocol (streaming [`reader`], [`record`] writer), the post-processor
//! ([`postproc`], `sp-rtrace-postproc`'s options and output), address
//! resolution ([`resolve`]), heaptrack's data file ([`heaptrack`]), the analyses of `tracekit report`
//! ([`report`]) and the record counts of `tracekit info` ([`summary`]).
//!
//! Format notes: `docs/formats/rtrace.md`.

pub mod allocations;
pub mod heaptrack;
mod live;
pub mod marker;
mod number_map;
pub mod postproc;
pub mod reader;
pub mod record;
pub mod recording;
pub mod report;
pub mod resolve;
pub mod summary;
pub mod timeline;

pub use reader::{
    Assembler, Batch, CallEvent, FullCall, IntoItems, Item, ItemStream, Items, Reader,
};
pub use record::{Call, CallKind, Frame, Header, Record};

/// Does this look like an sp-rtrace text trace? (First line is a header
/// that starts with `version=` and names the arch or pid.)
pub fn sniff(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    first.starts_with(b"version=")
        && (memchr::memmem::find(first, b", arch=").is_some()
            || memchr::memmem::find(first, b", pid=").is_some())
}
