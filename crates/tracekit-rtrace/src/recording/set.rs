//! A whole recording of `record mem`: one `.tkmem` file holding every
//! process image ([`super::packed`], the default), or a directory holding
//! one trace per process image (`<pid>-<n>.rtrace`, sp-rtrace text;
//! `<pid>-<n>.tkrt`, raw recordings) and the manifest [`MANIFEST`]
//! listing them (`record mem --format text|raw`); either way the
//! command's own images first, with what the recorder knew of each:
//! parent pid, executable, how it ended.
//!
//! This is the unit `report`, `convert` and `rtrace postproc` take: they
//! read every image through [`Recording::images`] ([`RecordedImage::items`]
//! gives its items, [`RecordedImage::text`] its sp-rtrace text, whatever
//! holds it). The per-image files of a directory stay plain sp-rtrace
//! traces (each readable on its own, by sp-rtrace's tools too). A
//! directory without a manifest (an older recording, files gathered by
//! hand) is read by its file names.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracekit_core::{Error, Position, Result};

use super::capture::ImageEnd;
use super::packed::PackedFile;
use crate::reader::{Assembler, ItemStream, Reader};

/// Where an image's trace is.
#[derive(Debug, Clone)]
pub enum ImageSource {
    /// A file of its own: sp-rtrace text, or a raw recording (`*.tkrt`).
    File(PathBuf),
    /// Image `index` of a `.tkmem` file.
    Packed(Arc<PackedFile>, usize),
}

/// The manifest's file name in a recording's directory.
pub const MANIFEST: &str = "recording.json";
/// Its `format` value and the layout's version.
pub const FORMAT: &str = "tracekit memory recording";
pub const VERSION: u32 = 1;

/// One process image of a recording.
#[derive(Debug, Clone)]
pub struct RecordedImage {
    /// Its file (of a `.tkmem` recording: the recording's file).
    pub path: PathBuf,
    pub source: ImageSource,
    pub pid: i64,
    /// Counts the images of one pid (exec starts the next).
    pub n: u32,
    pub ppid: Option<i64>,
    pub executable: Option<String>,
    /// How it ended, in words (see [`super::describe_end`]).
    pub end: Option<String>,
}

impl RecordedImage {
    /// `pid 1234 (/usr/bin/cc)`, or `pid 1234, image 1 (...)` after an exec.
    pub fn label(&self) -> String {
        let mut s = format!("pid {}", self.pid);
        if self.n > 0 {
            s.push_str(&format!(", image {}", self.n));
        }
        if let Some(e) = &self.executable {
            s.push_str(&format!(" ({e})"));
        }
        s
    }

    /// What messages call it: its file, or `FILE#<pid>-<n>` in a
    /// `.tkmem` file.
    pub fn name(&self) -> String {
        match &self.source {
            ImageSource::File(p) => p.display().to_string(),
            ImageSource::Packed(..) => format!("{}#{}-{}", self.path.display(), self.pid, self.n),
        }
    }

    /// Its trace as items (what the analyses read): a text trace through
    /// the [`Assembler`], a raw recording or a `.tkmem` image decoded
    /// straight into the same items.
    pub fn items(&self) -> Result<ItemStream<'static>> {
        Ok(ItemStream(match &self.source {
            ImageSource::File(p) => {
                let f = std::fs::File::open(p).map_err(|e| Error::io(Some(p), e))?;
                let mut r = std::io::BufReader::with_capacity(1 << 20, f);
                let head = r.fill_buf().map_err(|e| Error::io(Some(p), e))?;
                if super::sniff(head) {
                    Box::new(super::Events::open(p)?)
                } else {
                    Box::new(Assembler::new(Reader::new(r)))
                }
            }
            ImageSource::Packed(file, k) => Box::new(super::Events::packed(file, *k)?),
        }))
    }

    /// Its sp-rtrace text (a raw recording or a `.tkmem` image: what
    /// `record mem --format text` writes for it).
    pub fn text(&self) -> Result<Box<dyn BufRead>> {
        Ok(match &self.source {
            ImageSource::File(p) => {
                let f = std::fs::File::open(p).map_err(|e| Error::io(Some(p), e))?;
                let mut r = std::io::BufReader::with_capacity(1 << 20, f);
                let head = r.fill_buf().map_err(|e| Error::io(Some(p), e))?;
                if super::sniff(head) {
                    Box::new(super::Decoder::open(p)?)
                } else {
                    Box::new(r)
                }
            }
            ImageSource::Packed(file, k) => {
                if !file.head.transient_addresses {
                    // The text names every block by its address.
                    return Err(Error::Other(format!(
                        "{}: recorded without --addresses: heap blocks freed soon after \
                         they were allocated are named by their event number, and sp-rtrace \
                         text needs every address; record with `tracekit record mem \
                         --addresses` (or `--format text`)",
                        self.name()
                    )));
                }
                Box::new(super::Decoder::packed(file, *k)?)
            }
        })
    }
}

/// A recording, read.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Its `.tkmem` file or directory.
    pub path: PathBuf,
    /// The `.tkmem` file, read.
    pub packed: Option<Arc<PackedFile>>,
    /// The command line (from the manifest).
    pub command: Vec<String>,
    /// The command's pid (from the manifest).
    pub pid: Option<i64>,
    /// The images, the command's own first (the manifest's order; without
    /// one, by pid and image number).
    pub images: Vec<RecordedImage>,
}

/// What a directory holds (see [`Recording::list_files`]).
#[derive(Debug, Default)]
pub struct Files {
    /// Files named `<pid>-<n>.rtrace` or `<pid>-<n>.tkrt`, with pid and n.
    pub traces: Vec<PathBuf>,
    pub manifest: Option<PathBuf>,
    /// Anything else, except hidden entries (a recorder's scratch
    /// directory while it writes).
    pub others: usize,
}

/// `<pid>-<n>.rtrace` / `.tkrt` → (pid, n).
fn parse_name(name: &str) -> Option<(i64, u32)> {
    let stem = name
        .strip_suffix(".rtrace")
        .or_else(|| name.strip_suffix(".tkrt"))?;
    let (pid, n) = stem.split_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((pid.parse().ok()?, n.parse().ok()?))
}

/// The manifest's `end` of an image.
pub fn end_json(end: ImageEnd) -> serde_json::Value {
    let (kind, status) = match end {
        ImageEnd::Unseen => ("unseen", None),
        ImageEnd::Exec => ("exec", None),
        ImageEnd::Exit(s) => ("exit", Some(s)),
        ImageEnd::Exited => ("exited", None),
        ImageEnd::Signal(s) => ("signal", Some(s)),
    };
    serde_json::json!({"kind": kind, "status": status, "text": super::describe_end(end)})
}

impl Recording {
    /// What `dir` holds, by name.
    pub fn list_files(dir: &Path) -> std::io::Result<Files> {
        let mut files = Files::default();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file && name == MANIFEST {
                files.manifest = Some(entry.path());
            } else if is_file && parse_name(&name).is_some() {
                files.traces.push(entry.path());
            } else {
                files.others += 1;
            }
        }
        Ok(files)
    }

    /// Is `path` a recording: a `.tkmem` file, or a directory with a
    /// manifest or only traces named as `record mem` names them?
    pub fn is_recording(path: &Path) -> bool {
        if !path.is_dir() {
            let mut head = [0u8; 8];
            return std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok_and(|_| super::packed::sniff(&head));
        }
        match Recording::list_files(path) {
            Ok(f) => f.manifest.is_some() || (!f.traces.is_empty() && f.others == 0),
            Err(_) => false,
        }
    }

    /// The recording of a `.tkmem` file, read: its images, the command's
    /// own first (then by pid and image).
    pub fn from_packed(path: &Path, file: PackedFile) -> Recording {
        let file = Arc::new(file);
        let root = file.root_pid();
        let mut images: Vec<RecordedImage> = file
            .images
            .iter()
            .enumerate()
            .map(|(k, i)| RecordedImage {
                path: path.to_path_buf(),
                source: ImageSource::Packed(file.clone(), k),
                pid: i64::from(i.info.pid),
                n: i.n,
                ppid: Some(i64::from(i.info.ppid)),
                executable: Some(i.info.executable.clone()),
                end: super::describe_image_end(&i.info),
            })
            .collect();
        images.sort_by_key(|i| (Some(i.pid) != root, i.pid, i.n));
        Recording {
            path: path.to_path_buf(),
            command: file.head.command.clone(),
            pid: root,
            images,
            packed: Some(file),
        }
    }

    /// Reads the recording at `path`: a `.tkmem` file or a directory.
    pub fn open(path: &Path) -> Result<Recording> {
        if !path.is_dir() {
            return Ok(Recording::from_packed(path, PackedFile::open(path)?));
        }
        let dir = path;
        let files = Recording::list_files(dir).map_err(|e| Error::io(Some(dir), e))?;
        let Some(manifest) = files.manifest else {
            let mut images: Vec<RecordedImage> = files
                .traces
                .iter()
                .filter_map(|p| {
                    let (pid, n) = parse_name(&p.file_name()?.to_string_lossy())?;
                    Some(RecordedImage {
                        path: p.clone(),
                        source: ImageSource::File(p.clone()),
                        pid,
                        n,
                        ppid: None,
                        executable: None,
                        end: None,
                    })
                })
                .collect();
            if images.is_empty() {
                return Err(Error::Other(format!(
                    "{}: not a recording (no {MANIFEST}, no <pid>-<n>.rtrace traces)",
                    dir.display()
                )));
            }
            images.sort_by_key(|i| (i.pid, i.n));
            return Ok(Recording {
                path: dir.to_path_buf(),
                packed: None,
                command: Vec::new(),
                pid: None,
                images,
            });
        };
        let text = std::fs::read(&manifest).map_err(|e| Error::io(Some(&manifest), e))?;
        Recording::from_manifest(dir, &text)
    }

    /// The recording in `dir` whose manifest is `text` (errors name the
    /// manifest; the traces are not opened).
    pub fn from_manifest(dir: &Path, text: &[u8]) -> Result<Recording> {
        let manifest = dir.join(MANIFEST);
        let bad = |what: String| Error::Malformed {
            file: Some(manifest.clone()),
            position: Position::Offset(0),
            message: what,
        };
        let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| Error::Malformed {
            file: Some(manifest.clone()),
            position: Position::Line(e.line() as u64),
            message: format!("not JSON: {e}"),
        })?;
        if v["format"] != FORMAT {
            return Err(bad(format!("\"format\" is not {FORMAT:?}")));
        }
        match v["version"].as_u64() {
            Some(n) if n == VERSION as u64 => {}
            other => {
                return Err(bad(format!(
                    "layout version {other:?}: this tracekit reads version {VERSION}"
                )))
            }
        }
        let command = v["command"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let list = v["images"]
            .as_array()
            .ok_or_else(|| bad("no \"images\" list".into()))?;
        let mut images = Vec::with_capacity(list.len());
        for (k, im) in list.iter().enumerate() {
            let file = im["file"]
                .as_str()
                .filter(|f| !f.contains('/') && !f.starts_with('.'))
                .ok_or_else(|| bad(format!("image {k}: no \"file\" in the directory")))?;
            let pid = im["pid"]
                .as_i64()
                .ok_or_else(|| bad(format!("image {k}: no \"pid\"")))?;
            images.push(RecordedImage {
                path: dir.join(file),
                source: ImageSource::File(dir.join(file)),
                pid,
                n: im["image"].as_u64().unwrap_or(0) as u32,
                ppid: im["ppid"].as_i64(),
                executable: im["executable"].as_str().map(str::to_string),
                end: im["end"]["text"].as_str().map(str::to_string),
            });
        }
        Ok(Recording {
            path: dir.to_path_buf(),
            packed: None,
            command,
            pid: v["pid"].as_i64(),
            images,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_directories_without_a_manifest() {
        assert_eq!(parse_name("123-0.rtrace"), Some((123, 0)));
        assert_eq!(parse_name("123-2.tkrt"), Some((123, 2)));
        assert_eq!(parse_name("x-0.rtrace"), None);
        assert_eq!(parse_name("123.rtrace"), None);
        let dir = tempfile::tempdir().unwrap();
        assert!(!Recording::is_recording(dir.path()));
        assert!(Recording::open(dir.path()).is_err());
        for n in ["20-1.rtrace", "3-0.rtrace", "20-0.rtrace"] {
            std::fs::write(dir.path().join(n), "version=2.0, \n").unwrap();
        }
        assert!(Recording::is_recording(dir.path()));
        let r = Recording::open(dir.path()).unwrap();
        let names: Vec<(i64, u32)> = r.images.iter().map(|i| (i.pid, i.n)).collect();
        assert_eq!(names, [(3, 0), (20, 0), (20, 1)]);
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        assert!(!Recording::is_recording(dir.path()));
        std::fs::write(dir.path().join(MANIFEST), "{\"format\": 1}").unwrap();
        let e = Recording::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("recording.json") && e.contains("format"), "{e}");
        // A manifest naming a file outside the directory is refused.
        let d = Path::new("/r");
        let m = |file: &str| {
            format!(
                "{{\"format\": \"{FORMAT}\", \"version\": 1, \"images\": [{{\"file\": \"{file}\", \"pid\": 1}}]}}"
            )
        };
        assert!(Recording::from_manifest(d, m("../x.rtrace").as_bytes()).is_err());
        assert!(Recording::from_manifest(d, m(".x").as_bytes()).is_err());
        let r = Recording::from_manifest(d, m("1-0.rtrace").as_bytes()).unwrap();
        assert_eq!(r.images[0].path, Path::new("/r/1-0.rtrace"));
        let e = Recording::from_manifest(d, b"{\n  oops")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/r/recording.json:2"), "{e}");
    }
}
