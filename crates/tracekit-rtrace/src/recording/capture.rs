//! The recorder's end of the transport: the POSIX trace stream the shim
//! (`tracekit-rtrace-preload`) writes into, read while the traced command
//! runs and split into one recorder file per process image.
//!
//! The recorder is the stream's controller (`tracekit_posix::api`): it
//! creates an UNTIL_FULL stream for all processes in `/dev/shm`, registers
//! the event types [`STREAM_EVENT`] and [`STREAM_META`], starts it and
//! names it in [`STREAM_ENV`] for the command. A thread drains it
//! continuously with the getnext functions:
//! * a *meta* record (reassembled from its fragments, keyed by pid and the
//!   image's serial) of kind [`META_HEADER`] starts a new image of the
//!   slot's pid — `<pid>-<n>.tkrt`, n counting the images of that pid
//!   (fork children are new pids, exec starts image n+1) — and becomes its
//!   header chunk; [`META_MAPS`] becomes a maps chunk (the shim sends the
//!   maps when an image starts and again when it exits or execs; the
//!   decoder keeps the last, so a process killed by a signal keeps those of
//!   its start);
//! * an *event* (a batch of one thread's allocation events, see
//!   [`STREAM_EVENT`]) goes to the current image of its pid, into a buffer
//!   of its thread, written as an events chunk when it grows large and at
//!   the end: each chunk holds one thread's events sorted by number, which
//!   is what [`super::decode`] merges.
//!
//! The files keep the layout the decoder reads, so the text output does
//! not depend on the transport. Nothing is dropped silently: events of a
//! pid without a header, damaged events and incomplete metadata are
//! counted in [`CaptureStats`]; events the shim had to give up show as
//! gaps in the event numbers, which the decoder counts per image.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracekit_posix::api;
use tracekit_posix::consts::POSIX_TRACE_UNTIL_FULL;
use tracekit_posix::fragments::{errno_error, Reassembler, RecorderStream, StreamReader};
use tracekit_posix::TraceAttr;

use super::wire::*;
use rustc_hash::FxHashMap as HashMap;

/// Stream size: 4 MiB of slots per lane (tracekit-posix gives each
/// writing thread's lane this many; pages are touched only when used, by
/// the program and by the recorder, so they count in both resident
/// sizes). With 4 KiB batches of about 100 records a lane holds some
/// 100,000 events, tens of milliseconds of a thread allocating flat out,
/// while the reader drains continuously; beyond that the shim waits for
/// room.
pub const STREAM_SIZE: u64 = 4 << 20;
/// A thread's buffered events are written as one chunk once they reach
/// [`FLUSH_BUDGET`] shared by the image's threads, but at least
/// [`FLUSH_MIN`] and at most [`FLUSH_MAX`]. Bigger writes cost the kernel
/// less per byte (page-cache folios, ext4's delayed allocation): 256 KiB
/// instead of 64 KiB took a third off the recorder's system time for
/// alloc_bench; the budget keeps a program with many threads from
/// holding a quarter MiB for each.
const FLUSH_BUDGET: usize = 4 << 20;
const FLUSH_MIN: usize = 64 << 10;
const FLUSH_MAX: usize = 256 << 10;
/// The same for a `.tkmem` file: a block holds one flush, and larger
/// blocks compress better (the block's model and zstd see more of what
/// repeats): 2 MiB of records made blocks a quarter smaller than 256 KiB
/// did for cc1; 8 MiB (about 200,000 events) instead of 2 MiB took 27 %
/// off CPython's file, 10-14 % off git's and cc1's
/// (`docs/memory-recording.md`). Readers decode a block whole, so this is
/// also what each thread's open block costs them.
const PACKED_FLUSH_BUDGET: usize = 32 << 20;
const PACKED_FLUSH_MAX: usize = 8 << 20;
// What a thread's buffer holds at most when written (its bound and the
// batch that reached it) is one events block of the file.
const _: () = assert!(PACKED_FLUSH_MAX + STREAM_MAX_DATA <= super::packed::PART);
/// A thread's buffered events are written once they are this old, however
/// few: what a slow program recorded reaches the file within seconds (a
/// recorder killed loses at most that), not when its buffer fills.
const FLUSH_AGE: Duration = Duration::from_secs(2);
/// How often the reader looks for buffers older than [`FLUSH_AGE`].
const AGE_CHECK: Duration = Duration::from_millis(250);
/// A metadata record larger than this is refused as damaged (the maps
/// snapshot the shim reads is at most 4 MiB).
const MAX_META: usize = 8 << 20;
/// Most events the reader takes per lock of the stream and commit: the
/// slots read go back to the writers after each batch (32 of 4 KiB, a
/// small part of a lane's ~1000 slots).
const DRAIN_BATCH: usize = 32;
/// After the command has ended: how long the stream must stay empty before
/// the reader stops (longer than the time after which a slot whose writer
/// died mid-write is skipped).
const QUIET_AT_END: Duration = Duration::from_millis(150);

/// One recorded process image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub pid: i32,
    /// Counts the images of one pid (exec starts the next).
    pub n: u32,
    /// Its raw recording (a `.tkmem` capture: the file, which holds all).
    pub path: PathBuf,
    /// The nonce of its header (names its spill file).
    pub nonce: u64,
    /// Its place in the order images started (its index in a `.tkmem`
    /// file).
    pub index: u32,
}

/// How a process image ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageEnd {
    /// The shim saw no end: killed by a signal, or crashed.
    Unseen,
    /// Replaced by `exec`.
    Exec,
    /// `exit`/`_exit` with this status (or the wait status of the command).
    Exit(i32),
    /// Its exit handlers ran (it returned from `main`); status not seen.
    Exited,
    /// Killed by this signal (the command's wait status).
    Signal(i32),
}

impl ImageEnd {
    /// The payload of a [`TAG_END`] chunk.
    pub fn encode(self) -> [u8; 8] {
        let (kind, status) = match self {
            ImageEnd::Unseen => (END_NONE, 0),
            ImageEnd::Exec => (END_EXEC, 0),
            ImageEnd::Exit(s) => (END_EXIT, s),
            ImageEnd::Exited => (END_EXITED, 0),
            ImageEnd::Signal(s) => (END_SIGNAL, s),
        };
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&kind.to_le_bytes());
        b[4..].copy_from_slice(&status.to_le_bytes());
        b
    }

    /// The payload of a [`TAG_END`] chunk (`None`: damaged).
    pub fn decode(b: &[u8]) -> Option<ImageEnd> {
        let kind = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
        let status = i32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
        Some(match kind {
            END_NONE => ImageEnd::Unseen,
            END_EXEC => ImageEnd::Exec,
            END_EXIT => ImageEnd::Exit(status),
            END_EXITED => ImageEnd::Exited,
            END_SIGNAL => ImageEnd::Signal(status),
            _ => return None,
        })
    }
}

/// Records how `image` ended in its file (the decoder writes the last
/// such note): the recorder knows the command's own wait status.
pub fn note_end(image: &Image, end: ImageEnd) -> io::Result<()> {
    append_chunk(&image.path, TAG_END, &end.encode())
}

/// What the transport saw.
#[derive(Debug, Clone, Default)]
pub struct CaptureStats {
    /// Allocation events read.
    pub events: u64,
    /// Events of a pid whose header never arrived (they cannot be placed).
    pub orphan_events: u64,
    /// Stream events whose length did not match their events' frame
    /// counts (the whole events before the damage are kept).
    pub damaged_events: u64,
    /// Metadata records left incomplete (a piece lost) or damaged.
    pub incomplete_meta: u64,
    /// Records recovered from spill files: what processes that did not
    /// exit normally had recorded but not sent.
    pub spilled_events: u64,
    /// Spill files of images whose header never arrived, or damaged.
    pub orphan_spills: u64,
    /// Batches of spill files the stream had delivered too (the process
    /// died between sending a batch and marking it sent): not kept twice.
    pub duplicate_spills: u64,
    /// Writes the stream refused because it was full. The shim then waits
    /// for the reader and retries; an event it finally gave up shows as a
    /// gap in its image's event numbers.
    pub refused_writes: u64,
}

/// A stream being recorded into: create it with [`Capture::start`], run
/// the command with [`Capture::env`], then [`Capture::finish`].
pub struct Capture {
    /// Shut down (its file removed) when the capture is dropped, after
    /// the reader has stopped.
    stream: RecorderStream,
    depth: usize,
    /// Path prefix of the images' spill files (`<prefix>.<nonce>`).
    spill: PathBuf,
    done: Arc<AtomicBool>,
    reader: Option<JoinHandle<io::Result<Demux>>>,
    /// Where the image files are (see [`Capture::start_for`]); removed
    /// after the reader has stopped.
    scratch: Option<tempfile::TempDir>,
    /// The `.tkmem` writer, once the reader has stopped (see
    /// [`Capture::finish`]).
    finished: Option<Box<PackedWriter>>,
    /// The `.tkmem` file being written (see [`Capture::start_for`]).
    packed_path: Option<PathBuf>,
}

/// The writer of a `.tkmem` file the capture writes into: a file, or
/// standard output (`record mem -o -`).
pub type PackedWriter = super::packed::Writer<Box<dyn Write + Send>>;

impl Capture {
    /// Creates and starts the stream for backtraces of up to `depth`
    /// frames and starts the reader, which writes the image files to `dir`.
    pub fn start(dir: &Path, depth: usize) -> io::Result<Capture> {
        Capture::start_sized(dir, depth, STREAM_SIZE)
    }

    /// [`Capture::start`] with a stream of `stream_size` bytes (per lane;
    /// tests use a tiny one to make the shim wait for room).
    pub fn start_sized(dir: &Path, depth: usize, stream_size: u64) -> io::Result<Capture> {
        Capture::start_with(Store::files(dir), depth, stream_size)
    }

    /// Creates and starts the stream and a reader that writes everything
    /// into one `.tkmem` file through `writer` as it goes ([`packed`]).
    ///
    /// [`packed`]: super::packed
    pub fn start_packed(
        writer: PackedWriter,
        depth: usize,
        stream_size: u64,
    ) -> io::Result<Capture> {
        Capture::start_with(Store::Packed(Box::new(writer)), depth, stream_size)
    }

    /// Both: the raw image files in `dir` and the `.tkmem` file, from the
    /// same stream (what tests use to check that the two read back the
    /// same). The images' paths are their raw files.
    pub fn start_both(
        dir: &Path,
        writer: PackedWriter,
        depth: usize,
        stream_size: u64,
    ) -> io::Result<Capture> {
        let both = Store::Both(
            Box::new(Store::files(dir)),
            Box::new(Store::Packed(Box::new(writer))),
        );
        Capture::start_with(both, depth, stream_size)
    }

    fn start_with(store: Store, depth: usize, stream_size: u64) -> io::Result<Capture> {
        let mut attr = TraceAttr::default();
        attr.set_stream_policy(POSIX_TRACE_UNTIL_FULL);
        attr.set_max_data_size(STREAM_MAX_DATA as u64);
        attr.stream_size = stream_size;
        let (stream, ids) = RecorderStream::create(
            &attr,
            &[STREAM_EVENT, STREAM_META],
            "the recorder's trace stream",
        )?;
        let demux = Demux::new(store, ids[0], ids[1]);
        let done = Arc::new(AtomicBool::new(false));
        let events = stream.reader();
        let reader = {
            let done = done.clone();
            std::thread::Builder::new()
                .name("rtrace-reader".into())
                .spawn(move || demux.run(events, &done))?
        };
        let spill = spill_prefix();
        Ok(Capture {
            stream,
            depth,
            spill,
            done,
            reader: Some(reader),
            scratch: None,
            finished: None,
            packed_path: None,
        })
    }

    /// The `.tkmem` file being written, if any (see
    /// [`Capture::start_for`]).
    pub fn packed_path(&self) -> Option<PathBuf> {
        self.packed_path.clone()
    }

    /// The variables the traced command needs (besides `LD_PRELOAD`).
    pub fn env(&self, modules: &str) -> Vec<(&'static str, std::ffi::OsString)> {
        vec![
            (STREAM_ENV, self.stream.path().as_os_str().to_owned()),
            (DEPTH_ENV, self.depth.to_string().into()),
            (SPILL_ENV, self.spill.as_os_str().to_owned()),
            (MODULES_ENV, modules.into()),
        ]
    }

    /// Call when the command has ended: reads what is left, writes every
    /// buffered event and shuts the stream down. Returns the images (oldest
    /// process first, images in order) and the transport's counts.
    pub fn finish(mut self) -> io::Result<(Vec<Image>, CaptureStats)> {
        self.finish_mut()
    }

    /// [`Capture::finish`] keeping the capture, for
    /// [`Capture::finish_packed`] after it (what `finish_into` does).
    pub fn finish_mut_for_tests(&mut self) -> io::Result<(Vec<Image>, CaptureStats)> {
        self.finish_mut()
    }

    fn finish_mut(&mut self) -> io::Result<(Vec<Image>, CaptureStats)> {
        self.done.store(true, Ordering::Release);
        let demux = match self.reader.take().map(|r| r.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(io::Error::other("the trace stream's reader failed")),
        };
        let refused = api::lost_events(self.stream.trid()).unwrap_or(0);
        let mut demux = demux;
        let spilled = demux.collect_spills(&self.spill);
        remove_spills(&self.spill);
        spilled?;
        let mut stats = demux.stats;
        stats.refused_writes = refused;
        self.finished = demux.store.into_packed();
        let mut images = demux.images;
        images.sort_by_key(|i| (i.pid, i.n));
        Ok((images, stats))
    }

    /// After [`Capture::finish`] of a capture started with
    /// [`Capture::start_packed`]: notes how the command (`root`) ended in
    /// its last image, writes the closing block and flushes. Returns the
    /// per-image counts (and the writer's output).
    pub fn finish_packed(
        &mut self,
        images: &[Image],
        stats: &CaptureStats,
        root: i32,
        end: Option<ImageEnd>,
    ) -> io::Result<(
        Box<dyn Write + Send>,
        Vec<super::packed::ImageCounts>,
        super::packed::WriteStats,
    )> {
        let mut w = self
            .finished
            .take()
            .ok_or_else(|| io::Error::other("not a .tkmem capture, or finished already"))?;
        if let (Some(last), Some(end)) = (
            images.iter().filter(|i| i.pid == root).max_by_key(|i| i.n),
            end,
        ) {
            w.end(last.index, end)?;
        }
        let counts = w.image_counts();
        let finish = super::packed::Finish {
            pid: Some(i64::from(root)),
            capture: stats.to_json(),
        };
        let mut written = w.stats();
        let before = written.bytes;
        let out = w.finish(&finish)?;
        // The closing block: its header and payload.
        written.bytes = before + finish_len(&finish);
        written.blocks += 1;
        Ok((out, counts, written))
    }
}

/// The bytes of the closing block [`super::packed::Writer::finish`]
/// writes for `finish`.
fn finish_len(finish: &super::packed::Finish) -> u64 {
    let json = serde_json::json!({ "pid": finish.pid, "capture": finish.capture });
    super::packed::BLOCK_HEAD as u64 + serde_json::to_vec(&json).map_or(0, |v| v.len() as u64)
}

impl CaptureStats {
    /// The counts by name (the `.tkmem` file's closing block).
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        for (k, v) in [
            ("events", self.events),
            ("orphan_events", self.orphan_events),
            ("damaged_events", self.damaged_events),
            ("incomplete_meta", self.incomplete_meta),
            ("spilled_events", self.spilled_events),
            ("orphan_spills", self.orphan_spills),
            ("duplicate_spills", self.duplicate_spills),
            ("refused_writes", self.refused_writes),
        ] {
            m.insert(k.to_string(), v.into());
        }
        m
    }
}

/// What `record mem` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// One `.tkmem` file holding every process image ([`super::packed`]),
    /// written as the command runs.
    #[default]
    Tkmem,
    /// A directory of sp-rtrace text traces, one per process image, and
    /// a manifest.
    Text,
    /// A directory of raw recordings (`*.tkrt`), one per process image,
    /// and a manifest.
    Raw,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "tkmem" => Format::Tkmem,
            "text" | "rtrace" | "sp-rtrace" => Format::Text,
            "raw" | "tkrt" => Format::Raw,
            _ => return None,
        })
    }
}

/// Where `record mem` puts what it recorded. By default one `.tkmem`
/// file (default `tracekit-mem.<pid>.tkmem` in the current directory)
/// holding every process image, written while the command runs. With
/// [`Format::Text`] or [`Format::Raw`], one directory per recording
/// (default `tracekit-mem.<pid>`), holding one trace per process image,
/// `<pid>-<n>.rtrace` (`.tkrt` raw), and the manifest
/// [`super::set::MANIFEST`] that lists them (the command's own images
/// first) with what the recorder knows of each (parent, program, how it
/// ended). `report`, `convert` and `rtrace postproc` take a recording as a
/// whole ([`super::set::Recording`]). With `stdout`, the `.tkmem` file (or
/// every image's text trace, one after another) goes to standard output.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The `.tkmem` file or the recording's directory (`None`: the
    /// default name).
    pub path: Option<PathBuf>,
    pub format: Format,
    /// To standard output (`-o -`).
    pub stdout: bool,
    /// The command line, for the manifest.
    pub command: Vec<String>,
    /// `.tkmem`: keep the address of every heap block, also of those
    /// released within their events block (`--addresses`; the default
    /// names those by their event number).
    pub transient_addresses: bool,
}

impl Outputs {
    /// The recording's file or directory (`None`: standard output).
    fn target(&self, root: i32) -> Option<PathBuf> {
        if self.stdout {
            return None;
        }
        Some(match (&self.path, self.format) {
            (Some(d), _) => d.clone(),
            (None, Format::Tkmem) => PathBuf::from(format!("tracekit-mem.{root}.tkmem")),
            (None, _) => PathBuf::from(format!("tracekit-mem.{root}")),
        })
    }

    /// Makes the recording's directory (private, see
    /// `tracekit_core::files::dir_mode`). One that holds an earlier
    /// recording has its traces and manifest removed (as `-o` truncates a
    /// file); anything else there is refused. A `.tkmem` file must not be
    /// a directory (it is made by [`Capture::start_for`]).
    pub fn prepare(&self, root: i32) -> io::Result<()> {
        let Some(dir) = self.target(root) else {
            return Ok(());
        };
        if self.format == Format::Tkmem {
            return match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{}: a directory (a .tkmem recording is one file; --format text or raw writes a directory)",
                        dir.display()
                    ),
                )),
                _ => Ok(()),
            };
        }
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {
                let set = super::set::Recording::list_files(&dir)?;
                if set.others > 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "{}: a directory with other files in it (a recording goes into a directory of its own)",
                            dir.display()
                        ),
                    ));
                }
                for f in set.traces.iter().chain(set.manifest.iter()) {
                    std::fs::remove_file(f)?;
                }
                Ok(())
            }
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{}: exists and is not a directory (a recording in --format text or raw is a directory)",
                    dir.display()
                ),
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                tracekit_core::files::create_private_dir(&dir)
            }
            Err(e) => Err(e),
        }
    }

    /// A private directory (0700, removed when dropped) for the image
    /// files while recording: inside the recording's directory with
    /// [`Format::Raw`], so that they are renamed into place, not copied;
    /// else a temporary directory.
    pub fn scratch_dir(&self) -> io::Result<tempfile::TempDir> {
        use std::os::unix::fs::PermissionsExt;
        let raw = self.format == Format::Raw;
        // Trace content: for the user only.
        let b = tempfile::Builder::new()
            .permissions(std::fs::Permissions::from_mode(0o700))
            .prefix(if raw {
                ".tracekit-rtrace-"
            } else {
                "tracekit-rtrace-"
            })
            .to_owned();
        if !raw || self.stdout {
            return b.tempdir();
        }
        match &self.path {
            Some(d) => b.tempdir_in(d),
            // The default directory is named after the command's pid: the
            // current directory, where it will be.
            None => b.tempdir_in("."),
        }
    }

    fn ext(&self) -> &'static str {
        match self.format {
            Format::Raw => "tkrt",
            _ => "rtrace",
        }
    }

    /// Each image with its output, the command's own images (`root`)
    /// first: `<dir>/<pid>-<n>.<ext>` (with `stdout`, just the names; a
    /// `.tkmem` recording: its file).
    pub fn name(&self, mut images: Vec<Image>, root: i32) -> Vec<(PathBuf, Image)> {
        images.sort_by_key(|i| (i.pid != root, i.pid, i.n));
        let dir = self.target(root).unwrap_or_default();
        let ext = self.ext();
        images
            .into_iter()
            .map(|image| {
                let out = match self.format {
                    Format::Tkmem => dir.clone(),
                    _ => dir.join(format!("{}-{}.{ext}", image.pid, image.n)),
                };
                (out, image)
            })
            .collect()
    }
}

impl ImageEnd {
    /// How the command ended, from its wait status (`None`: neither an
    /// exit status nor a signal, as for a stopped process).
    pub fn from_status(status: std::process::ExitStatus) -> Option<ImageEnd> {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => Some(ImageEnd::Exit(c)),
            (None, Some(sig)) => Some(ImageEnd::Signal(sig)),
            _ => None,
        }
    }
}

/// A finished recording: each image's output and its recorder file (in
/// the scratch directory, removed when this is dropped), or the `.tkmem`
/// file and what was written of each image.
pub struct Recorded {
    pub images: Vec<(PathBuf, Image)>,
    pub stats: CaptureStats,
    /// The recording's file or directory (`None`: standard output).
    pub path: Option<PathBuf>,
    pub format: Format,
    command: Vec<String>,
    root: i32,
    _scratch: Option<tempfile::TempDir>,
    /// A `.tkmem` recording: each image's counts (by image index), and the
    /// writer's totals.
    packed: Option<(Vec<super::packed::ImageCounts>, super::packed::WriteStats)>,
}

/// What [`Recorded::write`] made of one image.
pub enum Written {
    /// The raw recording, renamed into place.
    Raw,
    /// The text trace, and what its recording said.
    Text(super::RecordingInfo, super::DecodeStats),
    /// The image in the `.tkmem` file: what its header said, and the
    /// counts (allocations, releases, events lost).
    Packed(super::RecordingInfo, super::DecodeStats),
}

impl Recorded {
    /// Writes every image's output (renames the raw recordings into place,
    /// or decodes them into text traces), calling `done` after each, then
    /// the manifest that makes the directory a recording. A `.tkmem`
    /// recording is written already: `done` is told what each image holds.
    pub fn write(&self, mut done: impl FnMut(&Path, Written)) -> tracekit_core::Result<()> {
        if self.images.is_empty() {
            return Err(tracekit_core::Error::Other(
                "the command produced no recording (is it statically linked, or setuid?)".into(),
            ));
        }
        let io_err = |p: &Path, e| tracekit_core::Error::io(Some(p), e);
        if let Some((counts, _)) = &self.packed {
            return self.report_packed(counts, done);
        }
        let raw = self.format == Format::Raw;
        let mut listed = Vec::new();
        for (out, image) in &self.images {
            let info = if raw {
                let info = super::read_info(&image.path)?;
                std::fs::rename(&image.path, out).map_err(|e| io_err(out, e))?;
                done(out, Written::Raw);
                info
            } else if self.path.is_none() {
                let stdout = io::stdout();
                let (info, stats) = super::decode_file(&image.path, stdout.lock())?;
                done(out, Written::Text(info.clone(), stats));
                info
            } else {
                let f = tracekit_core::files::create(out).map_err(|e| io_err(out, e))?;
                let (info, stats) =
                    super::decode_file(&image.path, io::BufWriter::with_capacity(1 << 16, f))
                        .map_err(|e| e.in_file(out))?;
                done(out, Written::Text(info.clone(), stats));
                info
            };
            listed.push((out, image, info));
        }
        let Some(dir) = &self.path else {
            return Ok(());
        };
        let images: Vec<serde_json::Value> = listed
            .iter()
            .map(|(out, image, info)| {
                serde_json::json!({
                    "file": out.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "pid": image.pid,
                    "image": image.n,
                    "ppid": info.ppid,
                    "executable": info.executable,
                    "end": info.end.map(super::set::end_json),
                })
            })
            .collect();
        let manifest = serde_json::json!({
            "format": super::set::FORMAT,
            "version": super::set::VERSION,
            "command": self.command,
            "pid": self.root,
            "images": images,
        });
        let path = dir.join(super::set::MANIFEST);
        let mut text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| tracekit_core::Error::Other(e.to_string()))?;
        text.push(b'\n');
        let mut f = tracekit_core::files::create(&path).map_err(|e| io_err(&path, e))?;
        f.write_all(&text).map_err(|e| io_err(&path, e))?;
        Ok(())
    }

    /// What each image of the `.tkmem` file holds. Its counts come from
    /// the writer; an image whose event numbers do not add up (events
    /// lost, or delivered twice from a spill file) is read back to count
    /// exactly what was lost (a file only: standard output cannot be read
    /// back, its count is what the numbers say).
    fn report_packed(
        &self,
        counts: &[super::packed::ImageCounts],
        mut done: impl FnMut(&Path, Written),
    ) -> tracekit_core::Result<()> {
        let file = match &self.path {
            Some(p) => Some(super::packed::PackedFile::open(p)?),
            None => None,
        };
        for (out, image) in &self.images {
            let c = counts
                .get(image.index as usize)
                .copied()
                .unwrap_or_default();
            let mut stats = super::DecodeStats {
                allocs: c.allocs,
                frees: c.frees,
                events: c.allocs + c.frees,
                lost: c
                    .numbers
                    .saturating_sub(c.allocs + c.frees + c.voids + c.marks),
                ..Default::default()
            };
            let info = match &file {
                Some(f) => {
                    let k = image.index as usize;
                    if c.numbers != c.allocs + c.frees + c.voids + c.marks {
                        let (_, s) = super::Decoder::packed(f, k)?.write_to(io::sink())?;
                        stats = s;
                    }
                    f.images.get(k).map(|i| i.info.clone()).unwrap_or_default()
                }
                None => super::RecordingInfo {
                    pid: image.pid as u32,
                    ..Default::default()
                },
            };
            done(out, Written::Packed(info, stats));
        }
        Ok(())
    }

    /// The `.tkmem` writer's totals (bytes, blocks, events, ...).
    pub fn packed_stats(&self) -> Option<super::packed::WriteStats> {
        self.packed.as_ref().map(|p| p.1)
    }
}

impl Capture {
    /// [`Capture::start`] for `record mem`: the image files go to a
    /// scratch directory ([`Outputs::scratch_dir`]) the capture owns, or
    /// (the default) everything into one `.tkmem` file, then the result of
    /// [`Capture::finish_into`].
    pub fn start_for(outputs: &Outputs, depth: usize) -> io::Result<Capture> {
        if outputs.format == Format::Tkmem {
            let head = super::packed::RecordingHead {
                command: outputs.command.clone(),
                recorder_pid: Some(std::process::id()),
                origin: Some(format!("tracekit {}", env!("CARGO_PKG_VERSION"))),
                transient_addresses: outputs.transient_addresses,
            };
            let (out, path): (Box<dyn Write + Send>, _) = if outputs.stdout {
                (Box::new(io::stdout()), None)
            } else {
                // Named after the command's pid once it is known; while
                // it runs, after the recorder's.
                let path = match &outputs.path {
                    Some(p) => p.clone(),
                    None => PathBuf::from(format!(
                        "tracekit-mem.recording-{}.tkmem",
                        std::process::id()
                    )),
                };
                outputs.prepare(0)?;
                let f = tracekit_core::files::create(&path)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                (Box::new(f), Some(path))
            };
            let writer = super::packed::Writer::new(out, &head)?;
            let mut capture = Capture::start_packed(writer, depth, STREAM_SIZE)?;
            capture.packed_path = path;
            return Ok(capture);
        }
        if outputs.path.is_some() {
            // Named: made (or emptied) before the command runs.
            outputs.prepare(0)?;
        }
        let scratch = outputs.scratch_dir()?;
        let mut capture = Capture::start(scratch.path(), depth)?;
        capture.scratch = Some(scratch);
        Ok(capture)
    }

    /// [`Capture::finish`] for `record mem`: the command (`root`) ended
    /// with `status`, which its last image notes (the shim cannot see a
    /// signal that kills it); the images are named after `outputs`. A
    /// `.tkmem` file is finished (and, without `-o`, renamed after the
    /// command's pid).
    pub fn finish_into(
        self,
        outputs: &Outputs,
        root: i32,
        status: std::process::ExitStatus,
    ) -> io::Result<Recorded> {
        self.finish_with_end(outputs, root, ImageEnd::from_status(status))
    }

    /// [`Capture::finish_into`] for a process that is not our child
    /// (`record mem -p`): how it ended is what its shim noted (`end`
    /// `None`), or what the caller knows.
    pub fn finish_with_end(
        mut self,
        outputs: &Outputs,
        root: i32,
        end: Option<ImageEnd>,
    ) -> io::Result<Recorded> {
        let scratch = self.scratch.take();
        let packed_path = self.packed_path.take();
        let (images, stats) = self.finish_mut()?;
        let mut packed = None;
        let mut path = outputs.target(root);
        if outputs.format == Format::Tkmem {
            let (out, counts, written) = self.finish_packed(&images, &stats, root, end)?;
            drop(out);
            if let (Some(from), Some(to)) = (&packed_path, &path) {
                if from != to {
                    std::fs::rename(from, to)?;
                }
            }
            if images.is_empty() {
                // Nothing recorded (a static program): no empty file stays.
                if let Some(p) = path.take() {
                    tracekit_core::files::remove_written_file(&p);
                }
            }
            packed = Some((counts, written));
        } else {
            if outputs.path.is_none() && !images.is_empty() {
                // The default directory, named after the command's pid.
                outputs.prepare(root)?;
            }
            if let (Some(last), Some(end)) = (
                images.iter().filter(|i| i.pid == root).max_by_key(|i| i.n),
                end,
            ) {
                note_end(last, end)?;
            }
        }
        Ok(Recorded {
            images: outputs.name(images, root),
            stats,
            path,
            format: outputs.format,
            command: outputs.command.clone(),
            root,
            _scratch: scratch,
            packed,
        })
    }
}

/// A fresh path prefix for spill files: in `/dev/shm` (memory, no
/// write-back to a disk), unique to this recorder.
fn spill_prefix() -> PathBuf {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    PathBuf::from(format!(
        "/dev/shm/tracekit-rtrace-{}-{:x}",
        std::process::id(),
        t
    ))
}

/// The spill files named with `prefix`, and their nonces.
fn spill_files(prefix: &Path) -> Vec<(PathBuf, u64)> {
    let (Some(dir), Some(stem)) = (prefix.parent(), prefix.file_name()) else {
        return Vec::new();
    };
    let stem = format!("{}.", stem.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let nonce = u64::from_str_radix(name.strip_prefix(&stem)?, 16).ok()?;
            Some((e.path(), nonce))
        })
        .collect()
}

fn remove_spills(prefix: &Path) {
    for (path, _) in spill_files(prefix) {
        let _ = std::fs::remove_file(path);
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        remove_spills(&self.spill);
        // `stream` is shut down next, which also removes its /dev/shm file.
    }
}

/// Splits a sequence of stream events — `(event type, pid, thread,
/// payload)`, as read from a stream or a POSIX trace log holding the
/// shim's two event types — into image files in `dir`, like the reader
/// thread of [`Capture`] does.
pub fn split<'a>(
    dir: &Path,
    event_id: u32,
    meta_id: u32,
    events: impl IntoIterator<Item = (u32, i32, u64, &'a [u8])>,
) -> io::Result<(Vec<Image>, CaptureStats)> {
    let (images, stats, _) = split_into(Store::files(dir), event_id, meta_id, events)?;
    Ok((images, stats))
}

/// [`split`] into raw image files in `dir` and, from the same events, one
/// `.tkmem` file through `writer` (returned, not finished).
pub fn split_both<'a>(
    dir: &Path,
    writer: PackedWriter,
    event_id: u32,
    meta_id: u32,
    events: impl IntoIterator<Item = (u32, i32, u64, &'a [u8])>,
) -> io::Result<(Vec<Image>, CaptureStats, PackedWriter)> {
    let both = Store::Both(
        Box::new(Store::files(dir)),
        Box::new(Store::Packed(Box::new(writer))),
    );
    let (images, stats, store) = split_into(both, event_id, meta_id, events)?;
    match store.into_packed() {
        Some(w) => Ok((images, stats, *w)),
        None => Err(io::Error::other("not a .tkmem capture")),
    }
}

/// [`split`] into one `.tkmem` file through `writer` (returned, not
/// finished).
pub fn split_packed<'a>(
    writer: PackedWriter,
    event_id: u32,
    meta_id: u32,
    events: impl IntoIterator<Item = (u32, i32, u64, &'a [u8])>,
) -> io::Result<(Vec<Image>, CaptureStats, PackedWriter)> {
    let (images, stats, store) =
        split_into(Store::Packed(Box::new(writer)), event_id, meta_id, events)?;
    match store.into_packed() {
        Some(w) => Ok((images, stats, *w)),
        None => Err(io::Error::other("not a .tkmem capture")),
    }
}

fn split_into<'a>(
    store: Store,
    event_id: u32,
    meta_id: u32,
    events: impl IntoIterator<Item = (u32, i32, u64, &'a [u8])>,
) -> io::Result<(Vec<Image>, CaptureStats, Store)> {
    let mut d = Demux::new(store, event_id, meta_id);
    for (id, pid, thread, data) in events {
        d.take(id, pid, thread, data)?;
    }
    d.end_all()?;
    let mut images = d.images;
    images.sort_by_key(|i| (i.pid, i.n));
    Ok((images, d.stats, d.store))
}

/// The image currently recorded for one pid.
struct Current {
    image: usize,
    /// Each thread's events not yet written (in the order written, which
    /// for one thread is the order of their numbers, almost).
    threads: HashMap<u64, Pending>,
}

/// One thread's records not yet written, and whether they are in the
/// order of their numbers (then they are written as they are).
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    last_seq: Option<u64>,
    unsorted: bool,
    /// When `buf` got its first record since it was last written.
    since: Option<Instant>,
}

impl Pending {
    fn write(
        &mut self,
        store: &mut Store,
        images: &[Image],
        k: usize,
        thread: u64,
        scratch: &mut Vec<u8>,
    ) -> io::Result<()> {
        let records = if self.unsorted {
            sort_records(&self.buf, scratch)
        } else {
            &self.buf[..]
        };
        store.events(images, k, thread, records)?;
        self.buf.clear();
        self.unsorted = false;
        self.since = None;
        Ok(())
    }
}

/// Where the demultiplexed stream goes: one raw recording per image in a
/// directory (`record mem --format text|raw`), or one `.tkmem` file.
enum Store {
    Files {
        dir: PathBuf,
        /// The image file written last, kept open (its index in `images`):
        /// flushes of one image follow each other, and opening the file
        /// for each 64 KiB written cost more than writing it. Every handle
        /// appends, so writes through others interleave safely.
        open: Option<(usize, File)>,
    },
    Packed(Box<PackedWriter>),
    /// Both of the above, from the same stream (for checking that the two
    /// layouts read back the same).
    Both(Box<Store>, Box<Store>),
}

impl Store {
    fn files(dir: &Path) -> Store {
        Store::Files {
            dir: dir.to_path_buf(),
            open: None,
        }
    }

    /// Starts image `n` of `pid` (its header record); returns where it goes.
    fn start(&mut self, k: usize, pid: i32, n: u32, header: &[u8]) -> io::Result<PathBuf> {
        match self {
            Store::Files { dir, .. } => {
                let path = dir.join(format!("{pid}-{n}.tkrt"));
                // Trace content: private (tracekit_core::files).
                let mut f = tracekit_core::files::create(&path)?;
                // The file says what it is (`record mem --format raw`
                // keeps it).
                write_chunk(&mut f, TAG_FILE, &RAW_VERSION.to_le_bytes())?;
                write_chunk(&mut f, TAG_HEADER, header)?;
                Ok(path)
            }
            Store::Packed(w) => {
                let index = w.image(n, header)?;
                debug_assert_eq!(index as usize, k);
                Ok(PathBuf::new())
            }
            Store::Both(a, b) => {
                b.start(k, pid, n, header)?;
                a.start(k, pid, n, header)
            }
        }
    }

    fn maps(&mut self, images: &[Image], k: usize, snapshot: &[u8]) -> io::Result<()> {
        match self {
            Store::Files { .. } => append_chunk(&images[k].path, TAG_MAPS, snapshot),
            Store::Packed(w) => w.maps(images[k].index, snapshot),
            Store::Both(a, b) => {
                a.maps(images, k, snapshot)?;
                b.maps(images, k, snapshot)
            }
        }
    }

    /// One thread's records, sorted by number.
    fn events(
        &mut self,
        images: &[Image],
        k: usize,
        thread: u64,
        records: &[u8],
    ) -> io::Result<()> {
        match self {
            Store::Files { open, .. } => {
                let f = image_file(open, images, k)?;
                write_chunk(f, TAG_EVENTS, records)
            }
            Store::Packed(w) => w.events(images[k].index, thread, records),
            Store::Both(a, b) => {
                a.events(images, k, thread, records)?;
                b.events(images, k, thread, records)
            }
        }
    }

    fn end(&mut self, images: &[Image], k: usize, end: ImageEnd) -> io::Result<()> {
        match self {
            Store::Files { .. } => append_chunk(&images[k].path, TAG_END, &end.encode()),
            Store::Packed(w) => w.end(images[k].index, end),
            Store::Both(a, b) => {
                a.end(images, k, end)?;
                b.end(images, k, end)
            }
        }
    }

    /// Nothing more goes into image `k` (its file is closed).
    fn close(&mut self) {
        match self {
            Store::Files { open, .. } => *open = None,
            Store::Packed(_) => {}
            Store::Both(a, b) => {
                a.close();
                b.close();
            }
        }
    }

    /// The `.tkmem` writer in it, if any.
    fn into_packed(self) -> Option<Box<PackedWriter>> {
        match self {
            Store::Files { .. } => None,
            Store::Packed(w) => Some(w),
            Store::Both(a, b) => a.into_packed().or(b.into_packed()),
        }
    }
}

/// Splits the stream into process images.
struct Demux {
    store: Store,
    event_id: u32,
    meta_id: u32,
    images: Vec<Image>,
    /// The image each pid is recorded into. An entry leaves only when the
    /// pid's next image replaces it (exec, or a new process reusing the
    /// pid) or at the end, so a pid seen before always has one here.
    current: HashMap<i32, Current>,
    /// Metadata records being reassembled, keyed by pid and serial; the
    /// fragment header's word is the record's kind.
    meta: Reassembler<(i32, u32)>,
    stats: CaptureStats,
    scratch: Vec<u8>,
    /// The last two batches each thread of each image delivered (by image
    /// and thread): a spill file's copy of one is not kept again (a
    /// `.tkmem` block names a block by number only when its records are
    /// the only copy of both ends: `packed::transients`).
    delivered: HashMap<(usize, u64), [Option<BatchMark>; 2]>,
}

/// What tells a batch from another: its first and last event numbers and
/// its length in bytes (a spill file's copy of a delivered batch has the
/// same; a batch refilled after it was sent has other numbers).
type BatchMark = (u64, u64, usize);

/// The mark of `records` (whole records), `None` when it holds no event.
fn batch_mark(records: &[u8]) -> Option<BatchMark> {
    let (mut first, mut last, mut at) = (None, 0, 0);
    while let Some(len) = record_len(&records[at..]).filter(|&l| at + l <= records.len()) {
        if records[at] != KIND_STACK {
            let seq = record_seq(&records[at..]);
            first.get_or_insert(seq);
            last = seq;
        }
        at += len;
    }
    Some((first?, last, at))
}

/// The file of image `k`, opened for appending unless it is `open`.
fn image_file<'a>(
    open: &'a mut Option<(usize, File)>,
    images: &[Image],
    k: usize,
) -> io::Result<&'a mut File> {
    let f = match open.take() {
        Some((i, f)) if i == k => f,
        _ => OpenOptions::new().append(true).open(&images[k].path)?,
    };
    Ok(&mut open.insert((k, f)).1)
}

impl Demux {
    fn new(store: Store, event_id: u32, meta_id: u32) -> Demux {
        Demux {
            store,
            event_id,
            meta_id,
            images: Vec::new(),
            current: HashMap::default(),
            meta: Reassembler::new(MAX_META),
            stats: CaptureStats::default(),
            scratch: Vec::new(),
            delivered: HashMap::default(),
        }
    }

    /// Reads the stream until the command has ended and it stayed empty
    /// for [`QUIET_AT_END`], then writes what is buffered.
    fn run(mut self, stream: StreamReader, done: &AtomicBool) -> io::Result<Demux> {
        let mut quiet_since: Option<Instant> = None;
        let mut nap_ms = 1;
        let mut aged_at = Instant::now();
        loop {
            let finishing = done.load(Ordering::Acquire);
            if aged_at.elapsed() >= AGE_CHECK {
                self.write_aged()?;
                aged_at = Instant::now();
            }
            // The events ready, taken where they lie in the stream (no
            // copy as `getnext_event` makes), a batch per lock and commit.
            let got = stream.drain_with(DRAIN_BATCH, |info, data| {
                self.take(info.event_id, info.pid, info.thread, data)
            });
            match got {
                Ok(Ok(n)) if n > 0 => {
                    quiet_since = None;
                    nap_ms = 1;
                }
                Ok(Err(e)) => return Err(e),
                Ok(Ok(_)) if finishing => {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= QUIET_AT_END {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                // Empty: the ring holds tens of milliseconds of events, so
                // poll calmly, backing off from 1 to 8 ms while the program
                // is quiet (an idle program costs ~125 wake-ups a second).
                Ok(Ok(_)) => {
                    std::thread::sleep(Duration::from_millis(nap_ms));
                    nap_ms = (nap_ms * 2).min(8);
                }
                Err(libc::EINTR) => {}
                Err(e) => return Err(errno_error("reading the recorder's trace stream", e)),
            }
        }
        self.end_all()?;
        Ok(self)
    }

    /// Writes each thread's buffered events that are older than
    /// [`FLUSH_AGE`].
    fn write_aged(&mut self) -> io::Result<()> {
        let Demux {
            store,
            images,
            current,
            scratch,
            ..
        } = self;
        for cur in current.values_mut() {
            for (&thread, p) in cur.threads.iter_mut() {
                if p.since.is_some_and(|t| t.elapsed() >= FLUSH_AGE) {
                    p.write(store, images, cur.image, thread, scratch)?;
                }
            }
        }
        Ok(())
    }

    /// Counts unfinished metadata and writes every image's buffered events.
    fn end_all(&mut self) -> io::Result<()> {
        self.stats.incomplete_meta += self.meta.incomplete();
        self.meta = Reassembler::new(MAX_META);
        let pids: Vec<i32> = self.current.keys().copied().collect();
        for pid in pids {
            self.end_image(pid)?;
        }
        Ok(())
    }

    fn take(&mut self, id: u32, pid: i32, thread: u64, data: &[u8]) -> io::Result<()> {
        if id == self.event_id {
            self.event(pid, thread, data)
        } else if id == self.meta_id {
            self.fragment(pid, data)
        } else {
            // System events (start, stop after a full stream): nothing to keep.
            Ok(())
        }
    }

    /// A batch: whole records of one thread, concatenated.
    fn event(&mut self, pid: i32, thread: u64, data: &[u8]) -> io::Result<()> {
        let Some(cur) = self.current.get_mut(&pid) else {
            let mut whole = 0;
            while let Some(len) = record_len(&data[whole..]).filter(|l| whole + l <= data.len()) {
                if data[whole] != KIND_STACK {
                    self.stats.orphan_events += 1;
                }
                whole += len;
            }
            if whole < data.len() {
                self.stats.damaged_events += 1;
            }
            return Ok(());
        };
        let (budget, max) = match self.store {
            Store::Files { .. } => (FLUSH_BUDGET, FLUSH_MAX),
            Store::Packed(_) | Store::Both(..) => (PACKED_FLUSH_BUDGET, PACKED_FLUSH_MAX),
        };
        let flush_at = (budget / cur.threads.len().max(1)).clamp(FLUSH_MIN, max);
        let p = cur.threads.entry(thread).or_default();
        // The whole records at the front; a damaged length ends the batch.
        // (Counted in locals, stored once: this loop runs for every record,
        // and updating the structures in it cost ~3 instructions a record.)
        let (mut whole, mut events, mut first_seq) = (0, 0u64, 0);
        let (mut last_seq, mut unsorted) = (p.last_seq, p.unsorted);
        while let Some(len) = record_len(&data[whole..]) {
            let Some(record) = data.get(whole..whole + len) else {
                break;
            };
            if record[0] != KIND_STACK {
                let seq = record_seq(record);
                if events == 0 {
                    first_seq = seq;
                }
                events += 1;
                unsorted |= last_seq.is_some_and(|l| l >= seq);
                last_seq = Some(seq);
            }
            whole += len;
        }
        self.stats.events += events;
        if let (true, Some(last)) = (events > 0, last_seq) {
            let marks = self.delivered.entry((cur.image, thread)).or_default();
            *marks = [Some((first_seq, last, whole)), marks[0]];
        }
        (p.last_seq, p.unsorted) = (last_seq, unsorted);
        if whole < data.len() {
            self.stats.damaged_events += 1;
        }
        if p.buf.capacity() == 0 {
            // Filled to `flush_at` plus one batch: no doubling past it.
            p.buf.reserve_exact(flush_at + STREAM_MAX_DATA);
        }
        if p.since.is_none() && whole > 0 {
            p.since = Some(Instant::now());
        }
        p.buf.extend_from_slice(&data[..whole]);
        if p.buf.len() >= flush_at {
            p.write(
                &mut self.store,
                &self.images,
                cur.image,
                thread,
                &mut self.scratch,
            )?;
        }
        Ok(())
    }

    fn fragment(&mut self, pid: i32, data: &[u8]) -> io::Result<()> {
        // Records arrive in the order they completed: a header before the
        // events and maps that follow it. Stream times are not needed.
        if self
            .meta
            .fragment(0, data, |_, serial| (pid, serial))
            .is_err()
        {
            self.stats.incomplete_meta += 1;
        }
        for c in self.meta.take_complete() {
            self.meta(pid, c.word, &c.record)?;
        }
        Ok(())
    }

    fn meta(&mut self, pid: i32, kind: u32, record: &[u8]) -> io::Result<()> {
        match kind {
            META_HEADER if record.len() < HEADER_FIXED => {
                // Damaged (the shim's are whole): no image can start from
                // it, and the pid's events are counted as orphans.
                self.stats.incomplete_meta += 1;
                Ok(())
            }
            META_HEADER => {
                // A pid without a current image has none yet (see `current`).
                let n = self
                    .current
                    .get(&pid)
                    .map_or(0, |c| self.images[c.image].n + 1);
                self.end_image(pid)?;
                let k = self.images.len();
                // An allocator LD_PRELOAD cannot see is said in the header.
                let record = &*super::allocators::mark_header(record);
                let path = self.store.start(k, pid, n, record)?;
                let nonce = record
                    .get(32..40)
                    .filter(|_| record.len() >= HEADER_FIXED)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
                self.images.push(Image {
                    pid,
                    n,
                    path,
                    nonce,
                    index: k as u32,
                });
                self.current.insert(
                    pid,
                    Current {
                        image: self.images.len() - 1,
                        threads: HashMap::default(),
                    },
                );
                Ok(())
            }
            META_MAPS => match self.current.get(&pid) {
                Some(cur) => self.store.maps(&self.images, cur.image, record),
                None => {
                    self.stats.incomplete_meta += 1;
                    Ok(())
                }
            },
            _ => {
                self.stats.incomplete_meta += 1;
                Ok(())
            }
        }
    }

    /// Reads the spill files (`<prefix>.<nonce>`) after everything the
    /// stream delivered: each batch still holding records is what a
    /// process recorded but never sent (it was killed, or crashed); those
    /// records go into its image's file (copies of records that did
    /// arrive are dropped by number when decoding). Notes each image's
    /// end as its shim saw it.
    fn collect_spills(&mut self, prefix: &Path) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let by_nonce: HashMap<u64, usize> = self
            .images
            .iter()
            .enumerate()
            .filter(|(_, i)| i.nonce != 0)
            .map(|(k, i)| (i.nonce, k))
            .collect();
        for (path, nonce) in spill_files(prefix) {
            let Some(&k) = by_nonce.get(&nonce) else {
                self.stats.orphan_spills += 1;
                continue;
            };
            let f = File::open(&path)?;
            let mut head = [0u8; 36];
            if f.read_exact_at(&mut head, 0).is_err()
                || u32_le(&head, 0) != SPILL_MAGIC
                || u32_le(&head, 4) != SPILL_VERSION
            {
                self.stats.orphan_spills += 1;
                continue;
            }
            let batches = (u32_le(&head, 24) as usize).min(1 << 20);
            let end = ImageEnd::decode(&head[28..36]).unwrap_or(ImageEnd::Unseen);
            let mut threads: HashMap<u64, Vec<u8>> = HashMap::default();
            let mut batch = vec![0u8; SPILL_BATCH];
            for i in 0..batches {
                let at = (SPILL_HEADER + i * SPILL_BATCH) as u64;
                if f.read_exact_at(&mut batch, at).is_err() {
                    break;
                }
                let owner = u64::from_le_bytes(batch[16..24].try_into().unwrap_or_default());
                let len = u64::from_le_bytes(batch[24..32].try_into().unwrap_or_default());
                let data = &batch[SPILL_BATCH_HEAD..];
                let len = (len as usize).min(data.len());
                let mark = batch_mark(&data[..len]);
                if mark.is_some()
                    && self
                        .delivered
                        .get(&(k, owner))
                        .is_some_and(|m| m.contains(&mark))
                {
                    self.stats.duplicate_spills += 1;
                    continue;
                }
                let mut whole = 0;
                while let Some(l) = record_len(&data[whole..len]) {
                    if whole + l > len {
                        break;
                    }
                    if data[whole] != KIND_STACK {
                        self.stats.spilled_events += 1;
                    }
                    whole += l;
                }
                if whole > 0 {
                    threads
                        .entry(owner)
                        .or_default()
                        .extend_from_slice(&data[..whole]);
                }
            }
            let mut owners: Vec<_> = threads.into_iter().collect();
            owners.sort_by_key(|(owner, _)| *owner);
            for (owner, buf) in &owners {
                let records = sort_records(buf, &mut self.scratch);
                self.store.events(&self.images, k, *owner, records)?;
            }
            self.store.end(&self.images, k, end)?;
            self.store.close();
        }
        Ok(())
    }

    /// Writes the image's buffered events; later events of the pid belong
    /// to its next image.
    fn end_image(&mut self, pid: i32) -> io::Result<()> {
        let Some(mut cur) = self.current.remove(&pid) else {
            return Ok(());
        };
        let mut threads: Vec<_> = cur
            .threads
            .iter_mut()
            .filter(|(_, p)| !p.buf.is_empty())
            .collect();
        threads.sort_by_key(|(t, _)| **t);
        for (&thread, p) in threads {
            p.write(
                &mut self.store,
                &self.images,
                cur.image,
                thread,
                &mut self.scratch,
            )?;
        }
        // Nothing more goes into this image.
        self.store.close();
        Ok(())
    }
}

/// One thread's records in the order of their numbers (`buf` itself if
/// they are, else sorted into `scratch`). A thread records them almost in
/// that order, but not quite: a release takes its number before the real
/// call and is written after it, so the events of calls made inside
/// (fclose freeing its buffers) come first. A backtrace definition stays
/// just before the record that follows it (its first use).
fn sort_records<'b>(buf: &'b [u8], scratch: &'b mut Vec<u8>) -> &'b [u8] {
    // (number, definition first, offset, length)
    let mut index: Vec<(u64, bool, usize, usize)> = Vec::with_capacity(buf.len() / FREE_LEN);
    let mut at = 0;
    let mut sorted = true;
    let mut last = None;
    let mut defs_waiting = 0;
    while let Some(len) = record_len(&buf[at..]) {
        if at + len > buf.len() {
            break;
        }
        if buf[at] == KIND_STACK {
            index.push((u64::MAX, false, at, len));
            defs_waiting += 1;
        } else {
            let seq = record_seq(&buf[at..]);
            sorted &= last.is_none_or(|l| l < seq);
            last = Some(seq);
            let n = index.len();
            for d in &mut index[n - defs_waiting..] {
                *d = (seq, false, d.2, d.3);
            }
            defs_waiting = 0;
            index.push((seq, true, at, len));
        }
        at += len;
    }
    if sorted {
        return &buf[..at];
    }
    index.sort_by_key(|e| (e.0, e.1));
    scratch.clear();
    for (_, _, at, len) in index {
        scratch.extend_from_slice(&buf[at..at + len]);
    }
    scratch
}

fn write_chunk(f: &mut File, tag: [u8; 4], payload: &[u8]) -> io::Result<()> {
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&tag);
    head[4..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    // One system call for both (a chunk is written per 64 KiB of events).
    let n = match f.write_vectored(&[IoSlice::new(&head), IoSlice::new(payload)]) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
        Err(e) => return Err(e),
    };
    if n < head.len() {
        f.write_all(&head[n..])?;
        f.write_all(payload)
    } else {
        f.write_all(&payload[n - head.len()..])
    }
}

fn append_chunk(path: &Path, tag: [u8; 4], payload: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().append(true).open(path)?;
    write_chunk(&mut f, tag, payload)
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(kind: u32, serial: u32, off: usize, total: usize, piece: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [kind, serial, off as u32, total as u32] {
            v.extend_from_slice(&w.to_ne_bytes());
        }
        v.extend_from_slice(piece);
        v
    }

    /// An allocation record with number `seq`, its backtrace `frames`
    /// defined just before it (as backtrace number `seq + 1`).
    fn event(seq: u64, frames: &[u64]) -> Vec<u8> {
        let mut e = Vec::new();
        let stack = if frames.is_empty() { 0 } else { seq as u32 + 1 };
        if stack != 0 {
            e.extend_from_slice(&[KIND_STACK, frames.len() as u8, 0, 0]);
            e.extend_from_slice(&stack.to_le_bytes());
            for f in frames {
                e.extend_from_slice(&f.to_le_bytes());
            }
        }
        let mut a = vec![0u8; ALLOC_LEN];
        a[0] = KIND_ALLOC;
        a[8..16].copy_from_slice(&seq.to_le_bytes());
        a[16..24].copy_from_slice(&8u64.to_le_bytes());
        a[24..32].copy_from_slice(&(0x1000 + seq).to_le_bytes());
        a[32..36].copy_from_slice(&stack.to_le_bytes());
        e.extend_from_slice(&a);
        e
    }

    fn header(pid: u32) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_FIXED];
        h[0..4].copy_from_slice(&pid.to_le_bytes());
        h[24..28].copy_from_slice(&4u32.to_le_bytes());
        h[28..32].copy_from_slice(&MODULE_MEMORY.to_le_bytes());
        h.extend_from_slice(b"/bin/prog");
        h
    }

    /// A spill file holds a thread's batch the stream delivered too (the
    /// process died between sending it and marking it sent) and one it
    /// did not: the first is dropped and counted, the second kept.
    #[test]
    fn spilled_copies_of_delivered_batches_are_not_kept_twice() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Demux::new(Store::files(dir.path()), 1024, 1025);
        let mut h = header(7);
        h[32..40].copy_from_slice(&0xabcu64.to_le_bytes());
        d.take(1025, 7, 1, &meta(META_HEADER, 0, 0, h.len(), &h))
            .unwrap();
        let sent = [event(0, &[]), event(1, &[])].concat();
        let unsent = [event(2, &[]), event(3, &[])].concat();
        d.take(1024, 7, 5, &sent).unwrap();
        d.end_all().unwrap();
        let prefix = dir.path().join("spill");
        let mut f = vec![0u8; SPILL_HEADER + 2 * SPILL_BATCH];
        f[0..4].copy_from_slice(&SPILL_MAGIC.to_le_bytes());
        f[4..8].copy_from_slice(&SPILL_VERSION.to_le_bytes());
        f[24..28].copy_from_slice(&2u32.to_le_bytes());
        for (i, data) in [&sent, &unsent].into_iter().enumerate() {
            let b = &mut f[SPILL_HEADER + i * SPILL_BATCH..][..SPILL_BATCH];
            b[16..24].copy_from_slice(&5u64.to_le_bytes());
            b[24..32].copy_from_slice(&(data.len() as u64).to_le_bytes());
            b[SPILL_BATCH_HEAD..][..data.len()].copy_from_slice(data);
        }
        std::fs::write(dir.path().join(format!("spill.{:016x}", 0xabc)), f).unwrap();
        d.collect_spills(&prefix).unwrap();
        assert_eq!(d.stats.duplicate_spills, 1);
        assert_eq!(d.stats.spilled_events, 2);
        let mut text = Vec::new();
        let (_, stats) = crate::recording::decode_file(&d.images[0].path, &mut text).unwrap();
        assert_eq!((stats.allocs, stats.duplicates, stats.lost), (4, 0, 0));
    }

    /// Images split by pid and by header (exec), fragments reassembled,
    /// threads interleaved: the files decode to the events in number order.
    #[test]
    fn demux_splits_images_and_keeps_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Demux::new(Store::files(dir.path()), 1024, 1025);
        let h = header(7);
        d.take(1025, 7, 1, &meta(META_HEADER, 0, 0, h.len(), &h[..10]))
            .unwrap();
        // An event before its image's header is complete has no image.
        d.take(1024, 8, 1, &event(0, &[])).unwrap();
        d.take(1025, 7, 1, &meta(META_HEADER, 0, 10, h.len(), &h[10..]))
            .unwrap();
        // Thread 2 writes number 2 before 1 (a release whose real call
        // allocated inside).
        let mut batch = event(2, &[]);
        batch.extend_from_slice(&event(1, &[0x10]));
        d.take(1024, 7, 2, &batch).unwrap();
        d.take(1024, 7, 1, &event(0, &[0x20, 0x30])).unwrap();
        d.take(1024, 7, 2, &event(9, &[])[..ALLOC_LEN - 1]).unwrap();
        let maps = b"00400000-00401000 r-xp 00000000 08:01 1 /bin/prog\n";
        d.take(1025, 7, 1, &meta(META_MAPS, 1, 0, maps.len(), maps))
            .unwrap();
        // exec: a new header for the same pid starts image 1.
        d.take(1025, 7, 1, &meta(META_HEADER, 0, 0, h.len(), &h))
            .unwrap();
        d.take(1024, 7, 1, &event(0, &[])).unwrap();
        // A lost first piece: counted.
        d.take(1025, 7, 1, &meta(META_MAPS, 5, 4, 8, b"abcd"))
            .unwrap();
        d.end_all().unwrap();
        assert_eq!(d.stats.orphan_events, 1);
        assert_eq!(d.stats.damaged_events, 1);
        assert_eq!(d.stats.incomplete_meta, 1);
        assert_eq!(d.stats.events, 4);
        let names: Vec<_> = d.images.iter().map(|i| (i.pid, i.n)).collect();
        assert_eq!(names, vec![(7, 0), (7, 1)]);
        // Each file says what it is (what `record mem --raw` keeps).
        let head = std::fs::read(&d.images[0].path).unwrap();
        assert!(crate::recording::sniff(&head));
        assert!(!crate::sniff(&head));
        let mut text = Vec::new();
        let (info, stats) = crate::recording::decode_file(&d.images[0].path, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(info.executable, "/bin/prog");
        assert_eq!((stats.allocs, stats.lost), (3, 0), "{text}");
        assert!(
            text.contains(": /bin/prog => 0x400000-0x401000\n"),
            "{text}"
        );
        let calls: Vec<&str> = text.lines().filter(|l| l.contains(") = 0x")).collect();
        assert_eq!(calls.len(), 3, "{text}");
        for (i, c) in calls.iter().enumerate() {
            assert!(c.starts_with(&format!("{}. ", i + 1)), "{text}");
            assert!(c.ends_with(&format!("= 0x100{i}")), "{text}");
        }
        assert!(text.contains("= 0x1000\n\t0x20\n\t0x30\n\n"), "{text}");
    }

    /// `record mem`'s policy: one directory per recording, the command's
    /// images first, `<pid>-<n>.<ext>` each; the wait status is the
    /// command's end; raw recordings are renamed into place from a private
    /// scratch directory inside it, which goes when the result does; the
    /// manifest lists the images.
    #[test]
    fn outputs_name_images_and_raw_recordings_are_renamed_into_place() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::ExitStatusExt;
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("app.raw");
        let outputs = Outputs {
            path: Some(rec.clone()),
            format: Format::Raw,
            stdout: false,
            command: vec!["app".into()],
            transient_addresses: false,
        };
        outputs.prepare(0).unwrap();
        let scratch = outputs.scratch_dir().unwrap();
        assert_eq!(scratch.path().parent(), Some(rec.as_path()));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(scratch.path()), 0o700);
        assert_eq!(mode(&rec), 0o700);
        // A child (pid 5) and the command (pid 9), which execs once.
        let mut d = Demux::new(Store::files(scratch.path()), 1024, 1025);
        for pid in [9, 5, 9] {
            let h = header(pid as u32);
            d.take(1025, pid, 1, &meta(META_HEADER, 0, 0, h.len(), &h))
                .unwrap();
            d.take(1024, pid, 1, &event(0, &[])).unwrap();
        }
        d.end_all().unwrap();
        let mut images = d.images;
        images.sort_by_key(|i| (i.pid, i.n));

        let names = |outputs: &Outputs, root| -> Vec<String> {
            outputs
                .name(images.clone(), root)
                .iter()
                .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(&outputs, 9), ["9-0.tkrt", "9-1.tkrt", "5-0.tkrt"]);
        // No -o: named after the command's pid.
        let text = Outputs {
            format: Format::Text,
            ..Outputs::default()
        };
        let named = text.name(images.clone(), 9);
        assert_eq!(named[0].0, Path::new("tracekit-mem.9/9-0.rtrace"));
        // The default: one .tkmem file holds them all.
        let named = Outputs::default().name(images.clone(), 9);
        assert!(named
            .iter()
            .all(|(p, _)| p == Path::new("tracekit-mem.9.tkmem")));
        assert!(outputs.name(Vec::new(), 9).is_empty());

        assert_eq!(
            ImageEnd::from_status(std::process::ExitStatus::from_raw(3 << 8)),
            Some(ImageEnd::Exit(3))
        );
        assert_eq!(
            ImageEnd::from_status(std::process::ExitStatus::from_raw(9)),
            Some(ImageEnd::Signal(9))
        );

        let scratch_path = scratch.path().to_path_buf();
        let recorded = Recorded {
            images: outputs.name(images, 9),
            stats: CaptureStats::default(),
            path: Some(rec.clone()),
            format: Format::Raw,
            command: outputs.command.clone(),
            root: 9,
            _scratch: Some(scratch),
            packed: None,
        };
        let mut written = Vec::new();
        recorded
            .write(|p, w| {
                assert!(matches!(w, Written::Raw));
                written.push(p.to_path_buf());
            })
            .unwrap();
        assert_eq!(written.len(), 3);
        assert!(written
            .iter()
            .all(|p| crate::recording::sniff(&std::fs::read(p).unwrap())));
        drop(recorded);
        assert!(!scratch_path.exists());
        let left: Vec<_> = std::fs::read_dir(&rec).unwrap().collect();
        assert_eq!(left.len(), 4);
        let set = crate::recording::set::Recording::open(&rec).unwrap();
        let listed: Vec<(i64, u32)> = set.images.iter().map(|i| (i.pid, i.n)).collect();
        assert_eq!(listed, [(9, 0), (9, 1), (5, 0)]);
        assert_eq!(set.pid, Some(9));
        assert_eq!(set.command, ["app"]);
        assert_eq!(set.images[0].executable.as_deref(), Some("/bin/prog"));
        // Recording again: the traces go, a stranger's file stays refused.
        outputs.prepare(0).unwrap();
        assert_eq!(std::fs::read_dir(&rec).unwrap().count(), 0);
        std::fs::write(rec.join("notes.txt"), "x").unwrap();
        assert!(outputs.prepare(0).is_err());
    }
}
