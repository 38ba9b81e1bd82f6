//! Opening what the user named: a file (memory-mapped), a directory, or
//! `-` for standard input.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memmap2::Mmap;

use crate::progress::{Progress, ProgressRead};

/// How many bytes of an input the format detectors see.
pub const HEAD_LEN: usize = 64 * 1024;

/// One input named on the command line.
pub struct Input {
    /// The name as given; `-` is standard input.
    pub path: PathBuf,
    /// The first bytes of the content (for a directory: of its first
    /// regular file in name order), for format detection.
    pub head: Vec<u8>,
    pub is_dir: bool,
    /// One process image of a `.tkmem` recording, named `FILE#<pid>-<n>`
    /// (the `<pid>-<n>`; `path` is the file).
    pub part: Option<String>,
    /// Standard input's head is consumed; `reader` replays it.
    stdin_taken: std::cell::Cell<bool>,
}

impl Input {
    pub fn open(path: &Path) -> Result<Input> {
        if path.as_os_str() == "-" {
            let mut head = Vec::with_capacity(HEAD_LEN);
            io::stdin()
                .lock()
                .take(HEAD_LEN as u64)
                .read_to_end(&mut head)
                .context("<stdin>: cannot read")?;
            return Ok(Input {
                path: path.to_path_buf(),
                head,
                is_dir: false,
                part: None,
                stdin_taken: std::cell::Cell::new(false),
            });
        }
        if let Some(input) = Input::open_part(path)? {
            return Ok(input);
        }
        let meta = std::fs::metadata(path).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
        if meta.is_dir() {
            let head = match dir_files(path)?.first() {
                Some(first) => read_head(first)?,
                None => Vec::new(),
            };
            return Ok(Input {
                path: path.to_path_buf(),
                head,
                is_dir: true,
                part: None,
                stdin_taken: std::cell::Cell::new(false),
            });
        }
        Ok(Input {
            path: path.to_path_buf(),
            head: read_head(path)?,
            is_dir: false,
            part: None,
            stdin_taken: std::cell::Cell::new(false),
        })
    }

    /// `FILE#<pid>-<n>` where no such file exists but FILE is a `.tkmem`
    /// recording: that image of it.
    fn open_part(path: &Path) -> Result<Option<Input>> {
        let s = path.to_string_lossy();
        let Some((file, part)) = s.rsplit_once('#') else {
            return Ok(None);
        };
        let file = Path::new(file);
        if path.exists() || !file.is_file() {
            return Ok(None);
        }
        let head = read_head(file)?;
        if !tracekit_rtrace::recording::packed::sniff(&head) {
            return Ok(None);
        }
        Ok(Some(Input {
            path: file.to_path_buf(),
            head,
            is_dir: false,
            part: Some(part.to_string()),
            stdin_taken: std::cell::Cell::new(false),
        }))
    }

    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// The name to print in messages.
    pub fn display(&self) -> String {
        match &self.part {
            _ if self.is_stdin() => "<stdin>".to_string(),
            Some(part) => format!("{}#{part}", self.path.display()),
            None => self.path.display().to_string(),
        }
    }

    /// A buffered reader over the whole content (files only). Standard
    /// input can be read once.
    pub fn reader(&self) -> Result<Box<dyn BufRead>> {
        if self.is_stdin() {
            if self.stdin_taken.replace(true) {
                anyhow::bail!("<stdin>: standard input can only be read once");
            }
            let head = Cursor::new(self.head.clone());
            return Ok(Box::new(BufReader::with_capacity(
                1 << 20,
                head.chain(io::stdin()),
            )));
        }
        let f =
            File::open(&self.path).map_err(|e| tracekit_core::Error::io(Some(&self.path), e))?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let progress = Progress::bytes(size, &self.display());
        Ok(Box::new(ProgressRead::new(
            BufReader::with_capacity(1 << 20, f),
            progress,
        )))
    }
}

/// Maps a whole file read-only.
pub fn mmap_file(path: &Path) -> Result<Mmap> {
    let f = File::open(path).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    // SAFETY: the map is read-only; a file truncated by another process
    // while we read it can raise SIGBUS, the same hazard every mmap-based
    // reader (ripgrep included) accepts for the speed.
    let map = unsafe { Mmap::map(&f) }.map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    #[cfg(unix)]
    {
        let _ = map.advise(memmap2::Advice::Sequential);
    }
    Ok(map)
}

fn read_head(path: &Path) -> Result<Vec<u8>> {
    let f = File::open(path).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    let mut head = Vec::with_capacity(HEAD_LEN);
    f.take(HEAD_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    Ok(head)
}

/// The regular files of a directory, sorted by name.
pub fn dir_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| tracekit_core::Error::io(Some(dir), e))? {
        let entry = entry.map_err(|e| tracekit_core::Error::io(Some(dir), e))?;
        if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}
