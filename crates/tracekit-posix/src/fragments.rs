//! The recorder's side of a preload shim's stream, shared by the
//! recorders that drain one (`tracekit record build`, `tracekit record
//! mem`): creating the stream ([`RecorderStream`]) and putting records the
//! shim had to split over several stream events back together
//! ([`Reassembler`]).
//!
//! A fragmented record travels as stream events that each start with a
//! [`FRAGMENT_HEADER`] of four u32 in native byte order (the writer is on
//! the same machine): a word the caller defines (a pid, a record kind), a
//! serial naming the record among its writer's, the piece's offset in the
//! record and the record's total length. A writer sends the pieces of one
//! record in order; records of different writers interleave.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::io;
use std::path::{Path, PathBuf};

use crate::api;
use crate::attr::TraceAttr;

/// Bytes before each fragment's piece: word, serial, offset, total.
pub const FRAGMENT_HEADER: usize = 16;

/// Where a completed record goes: the stream time of its first piece, then
/// its arrival (the number of fragments seen before its first piece).
pub type Order = (i64, u64);

/// A record put back together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Complete {
    pub order: Order,
    /// The first word of its fragment headers.
    pub word: u32,
    pub record: Vec<u8>,
}

/// A stream event that cannot be a fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FragmentError {
    /// Shorter than [`FRAGMENT_HEADER`].
    Short,
    /// The piece does not fit the record it claims to belong to, or the
    /// record is larger than the reassembler accepts.
    OutOfRange {
        word: u32,
        offset: usize,
        len: usize,
        total: usize,
    },
}

impl fmt::Display for FragmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FragmentError::Short => f.write_str("stream event shorter than its fragment header"),
            FragmentError::OutOfRange {
                offset, len, total, ..
            } => write!(
                f,
                "fragment {offset}+{len} of a {total}-byte record out of range"
            ),
        }
    }
}

impl std::error::Error for FragmentError {}

/// A record being reassembled.
struct Partial {
    order: Order,
    word: u32,
    total: usize,
    buf: Vec<u8>,
}

/// Puts records split over several events back together. The caller keys
/// each record by what tells writers apart (its pid and thread, or the
/// pid alone when the word is the record's kind) plus the header's serial.
/// A first piece (offset 0) starts a record, replacing (and counting) an
/// unfinished one of the same key; a later piece must continue it exactly
/// (same word, next offset, the total it started with). Completed records
/// are ordered by the stream time of their first piece, then by arrival.
pub struct Reassembler<K> {
    max_record: usize,
    partial: HashMap<K, Partial>,
    complete: Vec<Complete>,
    seen: u64,
    /// Fragments that fit no record (a lost piece before them) and records
    /// replaced by a new first piece before they were complete.
    pub orphans: u64,
}

impl<K: Hash + Eq> Reassembler<K> {
    /// Refuses records longer than `max_record` bytes as damaged.
    pub fn new(max_record: usize) -> Reassembler<K> {
        Reassembler {
            max_record,
            partial: HashMap::new(),
            complete: Vec::new(),
            seen: 0,
            orphans: 0,
        }
    }

    /// Takes one event payload written at stream time `time_ns`; `key`
    /// builds the record's key from the header's word and serial. A lost
    /// piece is counted (see [`Reassembler::incomplete`]), a payload that
    /// is no fragment is returned as an error (and not counted).
    pub fn fragment(
        &mut self,
        time_ns: i64,
        data: &[u8],
        key: impl FnOnce(u32, u32) -> K,
    ) -> Result<(), FragmentError> {
        self.seen += 1;
        let word = |i: usize| {
            data.get(i * 4..i * 4 + 4)
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (Some(word), Some(serial), Some(off), Some(total)) =
            (word(0), word(1), word(2), word(3))
        else {
            return Err(FragmentError::Short);
        };
        let (off, total) = (off as usize, total as usize);
        let piece = &data[FRAGMENT_HEADER..];
        if total > self.max_record || off.checked_add(piece.len()).is_none_or(|end| end > total) {
            return Err(FragmentError::OutOfRange {
                word,
                offset: off,
                len: piece.len(),
                total,
            });
        }
        let key = key(word, serial);
        let order = (time_ns, self.seen);
        if off == 0 {
            if self.partial.remove(&key).is_some() {
                self.orphans += 1;
            }
            if piece.len() == total {
                self.complete.push(Complete {
                    order,
                    word,
                    record: piece.to_vec(),
                });
                return Ok(());
            }
            let mut buf = Vec::with_capacity(total);
            buf.extend_from_slice(piece);
            self.partial.insert(
                key,
                Partial {
                    order,
                    word,
                    total,
                    buf,
                },
            );
            return Ok(());
        }
        match self.partial.get_mut(&key) {
            // The total must be the first piece's: a later piece claiming a
            // smaller one must not complete a shortened record.
            Some(p) if p.word == word && p.total == total && p.buf.len() == off => {
                p.buf.extend_from_slice(piece);
                if p.buf.len() == total {
                    if let Some(done) = self.partial.remove(&key) {
                        self.complete.push(Complete {
                            order: done.order,
                            word: done.word,
                            record: done.buf,
                        });
                    }
                }
            }
            _ => self.orphans += 1,
        }
        Ok(())
    }

    /// The records completed since the last call, in the order completed
    /// (sort by [`Complete::order`] for the final order).
    pub fn take_complete(&mut self) -> Vec<Complete> {
        std::mem::take(&mut self.complete)
    }

    /// How many records stayed incomplete (or lost their beginning).
    pub fn incomplete(&self) -> u64 {
        self.partial.len() as u64 + self.orphans
    }
}

/// An `api` error number as an [`io::Error`] saying what failed.
pub fn errno_error(what: &str, e: api::Errno) -> io::Error {
    let os = io::Error::from_raw_os_error(e);
    io::Error::new(os.kind(), format!("{what}: {os}"))
}

/// A stream a recorder controls for a preload shim: created for all
/// processes, its event types registered, started, named in `/dev/shm`.
/// Dropping it shuts the stream down (and removes its file).
pub struct RecorderStream {
    trid: api::TraceId,
    path: PathBuf,
}

impl RecorderStream {
    /// Creates the stream with `attr` for [`api::POSIX_TRACE_ALLPROC`],
    /// registers `event_names` (their ids come back in that order), starts
    /// it and finds its path. `what` names it in errors ("the build's
    /// trace stream").
    pub fn create(
        attr: &TraceAttr,
        event_names: &[&[u8]],
        what: &str,
    ) -> io::Result<(RecorderStream, Vec<u32>)> {
        let trid = api::create(api::POSIX_TRACE_ALLPROC, Some(attr), None)
            .map_err(|e| errno_error(&format!("creating {what}"), e))?;
        let mut stream = RecorderStream {
            trid,
            path: PathBuf::new(),
        };
        let ids = event_names
            .iter()
            .map(|name| {
                api::trid_eventid_open(trid, name).map_err(|e| {
                    let name = String::from_utf8_lossy(name);
                    errno_error(&format!("registering event type {name} in {what}"), e)
                })
            })
            .collect::<io::Result<Vec<u32>>>()?;
        api::start(trid).map_err(|e| errno_error(&format!("starting {what}"), e))?;
        stream.path =
            api::stream_path(trid).map_err(|e| errno_error(&format!("naming {what}"), e))?;
        Ok((stream, ids))
    }

    pub fn trid(&self) -> api::TraceId {
        self.trid
    }

    /// Its reader (for a reader thread).
    pub fn reader(&self) -> StreamReader {
        StreamReader::new(self.trid)
    }

    /// The stream file the shim maps (for its environment variable).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a recorder's stream without copying each event out of the
/// reader's hands: [`StreamReader::next_with`], or a batch at a time,
/// [`StreamReader::drain_with`] (what a recorder's reader thread keeps;
/// [`api::getnext_event`] copies into a caller's buffer).
#[derive(Debug, Clone, Copy)]
pub struct StreamReader {
    pub(crate) trid: api::TraceId,
}

impl StreamReader {
    pub fn new(trid: api::TraceId) -> StreamReader {
        StreamReader { trid }
    }
}

impl Drop for RecorderStream {
    fn drop(&mut self) {
        let _ = api::shutdown(self.trid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record's writer (pid, thread) and serial, as `tracekit record
    /// build` keys them.
    type Key = (i32, u64, u32);

    fn frag(word: u32, serial: u32, off: usize, total: usize, piece: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [word, serial, off as u32, total as u32] {
            v.extend_from_slice(&w.to_ne_bytes());
        }
        v.extend_from_slice(piece);
        v
    }

    fn add(r: &mut Reassembler<Key>, thread: u64, time: i64, data: &[u8]) {
        r.fragment(time, data, |pid, serial| (pid as i32, thread, serial))
            .unwrap();
    }

    /// The completed records in their final order.
    fn in_order(r: &mut Reassembler<Key>) -> Vec<Vec<u8>> {
        let mut done = r.take_complete();
        done.sort_by_key(|c| c.order);
        done.into_iter().map(|c| c.record).collect()
    }

    #[test]
    fn interleaved_fragments_are_reassembled_in_start_order() {
        let mut r = Reassembler::new(64 << 20);
        add(&mut r, 0, 0, &frag(1, 0, 0, 6, b"abc"));
        add(&mut r, 0, 0, &frag(2, 0, 0, 2, b"xy"));
        add(&mut r, 0, 0, &frag(1, 0, 3, 6, b"def"));
        // Same pid and serial, another thread: another record.
        add(&mut r, 7, 0, &frag(1, 0, 0, 4, b"thr"));
        add(&mut r, 7, 0, &frag(1, 0, 3, 4, b"d"));
        assert_eq!(
            in_order(&mut r),
            vec![b"abcdef".to_vec(), b"xy".to_vec(), b"thrd".to_vec()]
        );
        assert_eq!(r.incomplete(), 0);
    }

    #[test]
    fn records_are_ordered_by_the_time_of_their_first_piece() {
        let mut r = Reassembler::new(64 << 20);
        // A child's record arrives before its parent's fork record, which
        // was stamped before the fork.
        add(&mut r, 0, 200, &frag(9, 1, 0, 5, b"child"));
        add(&mut r, 0, 100, &frag(8, 1, 0, 4, b"fork"));
        add(&mut r, 0, 300, &frag(8, 2, 0, 4, b"late"));
        assert_eq!(
            in_order(&mut r),
            vec![b"fork".to_vec(), b"child".to_vec(), b"late".to_vec()]
        );
    }

    #[test]
    fn lost_pieces_leave_records_incomplete_and_counted() {
        let mut r = Reassembler::new(64 << 20);
        // pid 1 lost its middle piece; pid 2 lost its first one.
        add(&mut r, 0, 0, &frag(1, 0, 0, 9, b"abc"));
        add(&mut r, 0, 0, &frag(1, 0, 6, 9, b"ghi"));
        add(&mut r, 0, 0, &frag(2, 5, 2, 4, b"zz"));
        add(&mut r, 0, 0, &frag(3, 0, 0, 1, b"k"));
        assert_eq!(in_order(&mut r), vec![b"k".to_vec()]);
        assert_eq!(r.incomplete(), 3);
    }

    #[test]
    fn damaged_fragments_are_refused() {
        let mut r: Reassembler<Key> = Reassembler::new(64 << 20);
        let key = |pid: u32, serial| (pid as i32, 0, serial);
        assert_eq!(r.fragment(0, b"short", key), Err(FragmentError::Short));
        assert!(matches!(
            r.fragment(0, &frag(1, 0, 4, 5, b"ab"), key),
            Err(FragmentError::OutOfRange {
                offset: 4,
                len: 2,
                total: 5,
                ..
            })
        ));
        let huge = frag(1, 0, 0, usize::MAX >> 32, b"");
        assert!(r.fragment(0, &huge, key).is_err());
        // An offset whose end overflows a usize.
        let mut wrap = frag(1, 0, 0, 8, b"ab");
        wrap[8..12].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(r.fragment(0, &wrap, key).is_err());
        assert!(r.take_complete().is_empty());
        assert_eq!(r.incomplete(), 0);
    }

    /// A later piece declaring a smaller total than the first one cannot
    /// complete a shortened record; nor can a piece of another kind.
    #[test]
    fn a_piece_must_continue_its_record_exactly() {
        let mut r: Reassembler<(i32, u32)> = Reassembler::new(1 << 20);
        let by_pid = |_kind, serial| (7, serial);
        r.fragment(0, &frag(1, 0, 0, 10, b"abcd"), by_pid).unwrap();
        r.fragment(0, &frag(1, 0, 4, 6, b"ef"), by_pid).unwrap();
        assert!(r.take_complete().is_empty());
        r.fragment(0, &frag(1, 3, 0, 4, b"ab"), by_pid).unwrap();
        r.fragment(0, &frag(2, 3, 2, 4, b"cd"), by_pid).unwrap();
        assert!(r.take_complete().is_empty());
        // Both started records left over, plus the two refused pieces.
        assert_eq!(r.incomplete(), 4);
        r.fragment(0, &frag(2, 9, 0, 3, b"xyz"), by_pid).unwrap();
        assert_eq!(
            r.take_complete(),
            vec![Complete {
                order: (0, 5),
                word: 2,
                record: b"xyz".to_vec()
            }]
        );
    }
}
