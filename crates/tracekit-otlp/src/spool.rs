//! The disk spool: requests that could not be sent wait here, oldest
//! first, until the collector answers again.
//!
//! A spool is a directory of files, one encoded `ExportTraceServiceRequest`
//! each (uncompressed: the same bytes a collector decodes), named
//! `<sequence>-<sessions>s-<spans>sp.otlp` so that the counts survive a
//! restart without reading the files. A file is written under a `.tmp`
//! name, synced and renamed into place, so a crash leaves either the whole
//! request or a `.tmp` file that the next open removes. The total size is
//! bounded: to make room for a new request the oldest ones are dropped
//! (and counted); a request larger than the whole bound is dropped itself.
//! Several tracekit processes must not share one spool directory.
//!
//! Spooled requests carry what the traces carry (command lines, URLs,
//! paths), so they are private like every trace file tracekit writes
//! ([`tracekit_core::files`]): files get the trace file mode (0600 unless
//! `--file-mode`/`TRACEKIT_FILE_MODE` chose another), the directories the
//! spool creates that mode plus search permission (0700).

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::batch::Piece;

/// One spooled request.
#[derive(Debug, Clone)]
pub struct Entry {
    pub seq: u64,
    pub sessions: u64,
    pub spans: u64,
    pub bytes: u64,
    pub path: PathBuf,
}

/// What a [`Spool::push`] had to drop to stay within the bound.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    pub requests: u64,
    pub sessions: u64,
    pub spans: u64,
}

/// The result of a [`Spool::push`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pushed {
    /// False if the request alone is larger than the bound (it is then
    /// counted in `dropped`).
    pub stored: bool,
    pub dropped: Dropped,
}

#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    bytes: u64,
    next_seq: u64,
    entries: VecDeque<Entry>,
}

use tracekit_core::files::create_private_dir;

fn parse_name(name: &str) -> Option<(u64, u64, u64)> {
    let stem = name.strip_suffix(".otlp")?;
    let mut parts = stem.split('-');
    let seq = parts.next()?.parse().ok()?;
    let sessions = parts.next()?.strip_suffix('s')?.parse().ok()?;
    let spans = parts.next()?.strip_suffix("sp")?.parse().ok()?;
    parts.next().is_none().then_some((seq, sessions, spans))
}

impl Spool {
    /// Opens (creating) the spool in `dir`, bounded to `max_bytes`;
    /// removes half-written `.tmp` files a crash may have left.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<Spool> {
        create_private_dir(dir)?;
        let mut entries = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".tmp") {
                let _ = fs::remove_file(e.path());
                continue;
            }
            if let Some((seq, sessions, spans)) = parse_name(&name) {
                entries.push(Entry {
                    seq,
                    sessions,
                    spans,
                    bytes: e.metadata()?.len(),
                    path: e.path(),
                });
            }
        }
        entries.sort_by_key(|e| e.seq);
        let bytes = entries.iter().map(|e| e.bytes).sum();
        let next_seq = entries.last().map_or(0, |e| e.seq + 1);
        Ok(Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            bytes,
            next_seq,
            entries: entries.into(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Sessions waiting in the spool.
    pub fn sessions(&self) -> u64 {
        self.entries.iter().map(|e| e.sessions).sum()
    }

    pub fn requests(&self) -> usize {
        self.entries.len()
    }

    /// Stores a request, dropping the oldest ones if the bound needs it.
    /// An error means the piece could not be written (it is not stored).
    pub fn push(&mut self, piece: &Piece) -> io::Result<Pushed> {
        let mut dropped = Dropped::default();
        let size = piece.bytes.len() as u64;
        if size > self.max_bytes {
            return Ok(Pushed {
                stored: false,
                dropped: Dropped {
                    requests: 1,
                    sessions: piece.sessions,
                    spans: piece.spans,
                },
            });
        }
        while self.bytes + size > self.max_bytes {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.forget(&old);
            dropped.requests += 1;
            dropped.sessions += old.sessions;
            dropped.spans += old.spans;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let name = format!("{seq:016}-{}s-{}sp.otlp", piece.sessions, piece.spans);
        let path = self.dir.join(&name);
        let tmp = self.dir.join(format!("{name}.tmp"));
        let written = (|| {
            let mut f = tracekit_core::files::create(&tmp)?;
            f.write_all(&piece.bytes)?;
            f.sync_data()?;
            fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.bytes += size;
        self.entries.push_back(Entry {
            seq,
            sessions: piece.sessions,
            spans: piece.spans,
            bytes: size,
            path,
        });
        Ok(Pushed {
            stored: true,
            dropped,
        })
    }

    /// The oldest request, if any.
    pub fn oldest(&self) -> Option<&Entry> {
        self.entries.front()
    }

    /// The oldest requests, as many as fit in `max_bytes` together (at
    /// least one), to be sent as one request.
    pub fn oldest_batch(&self, max_bytes: u64) -> Vec<Entry> {
        let mut total = 0;
        let mut out = Vec::new();
        for e in &self.entries {
            if !out.is_empty() && total + e.bytes > max_bytes {
                break;
            }
            total += e.bytes;
            out.push(e.clone());
        }
        out
    }

    /// Removes the request `seq` (sent, or refused for good); false if it
    /// is no longer there (dropped meanwhile to make room).
    pub fn remove(&mut self, seq: u64) -> bool {
        match self.entries.iter().position(|e| e.seq == seq) {
            Some(i) => {
                let e = self.entries.remove(i).expect("found");
                self.forget(&e);
                true
            }
            None => false,
        }
    }

    /// Removes the oldest request.
    pub fn pop_oldest(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            self.forget(&e);
        }
    }

    fn forget(&mut self, e: &Entry) {
        let _ = fs::remove_file(&e.path);
        self.bytes = self.bytes.saturating_sub(e.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(n: usize, sessions: u64) -> Piece {
        Piece {
            bytes: vec![7; n],
            spans: sessions * 3,
            sessions,
        }
    }

    #[test]
    fn oldest_first_bounded_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), 250).unwrap();
        assert_eq!(s.push(&piece(100, 1)).unwrap().dropped, Dropped::default());
        assert_eq!(s.push(&piece(100, 2)).unwrap().dropped, Dropped::default());
        // No room for a third: the oldest goes.
        let p = s.push(&piece(100, 4)).unwrap();
        assert!(p.stored);
        let d = p.dropped;
        assert_eq!((d.requests, d.sessions, d.spans), (1, 1, 3));
        assert_eq!(s.sessions(), 6);
        // Larger than the bound: dropped itself.
        let p = s.push(&piece(300, 8)).unwrap();
        assert!(!p.stored);
        assert_eq!(p.dropped.sessions, 8);
        // A crash's leftover is removed on open; counts come from names.
        fs::write(dir.path().join("0000000000000009-1s-1sp.otlp.tmp"), b"x").unwrap();
        drop(s);
        let mut s = Spool::open(dir.path(), 250).unwrap();
        assert_eq!((s.requests(), s.sessions(), s.bytes()), (2, 6, 200));
        assert_eq!(s.oldest().unwrap().sessions, 2);
        s.pop_oldest();
        assert_eq!(s.oldest().unwrap().sessions, 4);
        s.push(&piece(10, 1)).unwrap();
        assert!(s.entries.back().unwrap().seq > s.oldest().unwrap().seq);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn spool_directories_and_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/tracekit/otlp-spool");
        let mut s = Spool::open(&dir, 1 << 20).unwrap();
        s.push(&piece(10, 1)).unwrap();
        assert_eq!(mode(&tmp.path().join("state")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let files: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(mode(&files[0]), 0o600);
    }
}
