//! What `tracekit info` says about a trace: its header and how many
//! records of each kind it holds, in one streaming pass.

use std::io::BufRead;

use tracekit_core::Result;

use crate::record::{Header, Record};
use crate::Reader;

/// Record counts of one trace.
#[derive(Debug, Default)]
pub struct Summary {
    pub header: Header,
    pub allocs: u64,
    pub frees: u64,
    pub frames: u64,
    pub args: u64,
    pub maps: u64,
    pub contexts: u64,
    pub resources: u64,
    pub resource_names: Vec<String>,
    pub attachments: u64,
    pub comments: u64,
    /// Call timestamps (milliseconds of the recorder's monotonic clock).
    pub first_ts: Option<u32>,
    pub last_ts: Option<u32>,
}

/// Counts the records of a text trace.
pub fn summarise<R: BufRead>(input: R) -> Result<Summary> {
    let mut reader = Reader::new(input);
    let mut c = Summary::default();
    while let Some(rec) = reader.next_record()? {
        match rec {
            Record::Header(h) => c.header = h,
            Record::Call(call) => {
                if call.is_alloc() {
                    c.allocs += 1;
                } else {
                    c.frees += 1;
                }
                if let Some(t) = call.timestamp {
                    c.first_ts.get_or_insert(t);
                    c.last_ts = Some(t);
                }
            }
            Record::Frame(_) => c.frames += 1,
            Record::Arg(_) => c.args += 1,
            Record::Map(_) => c.maps += 1,
            Record::Context(_) => c.contexts += 1,
            Record::Resource(r) => {
                c.resources += 1;
                c.resource_names.push(r.name);
            }
            Record::Attachment(_) => c.attachments += 1,
            Record::Comment(_) | Record::TempComment(_) => c.comments += 1,
            Record::EndBacktrace => {}
        }
    }
    Ok(c)
}

/// Counts a trace read as items (an image of a recording: the same counts
/// as its text, which every frame, map and comment is a line of).
pub fn summarise_items<I: crate::reader::Items>(mut items: I) -> Result<Summary> {
    use crate::reader::Item;
    let mut c = Summary::default();
    while let Some(item) = items.next_item()? {
        match item {
            Item::Header(h) => c.header = h,
            Item::Call(fc) => {
                if fc.call.is_alloc() {
                    c.allocs += 1;
                } else {
                    c.frees += 1;
                }
                if let Some(t) = fc.call.timestamp {
                    c.first_ts.get_or_insert(t);
                    c.last_ts = Some(t);
                }
                c.frames += fc.frames.len() as u64;
                c.args += fc.args.len() as u64;
            }
            Item::Map(_) => c.maps += 1,
            Item::Context(_) => c.contexts += 1,
            Item::Resource(r) => {
                c.resources += 1;
                c.resource_names.push(r.name);
            }
            Item::Attachment(_) => c.attachments += 1,
            Item::Comment(_) | Item::TempComment(_) => c.comments += 1,
        }
    }
    Ok(c)
}
