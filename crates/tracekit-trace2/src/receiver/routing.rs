//! Output files shared by all connections: where each line goes.

use super::*;

/// Where lines go: a format and a file name inside its directory.
pub(super) type SessionKey = (Format, String);

/// Mutable state of a run shared by all connections.
pub(super) struct State<'o> {
    /// `None`: no files are written (the lines only go to the observer).
    pub(super) files: Option<Files>,
    pub(super) observer: &'o mut dyn Observer,
    pub(super) summary: Summary,
}

/// The output directory: one file per session.
pub(super) struct Files {
    out_dir: PathBuf,
    /// The path chosen for each session seen in this run.
    sessions: HashMap<SessionKey, PathBuf>,
    /// Format directories already created.
    dirs_made: [bool; 3],
    /// Open datagram output files.
    dgram_files: HashMap<SessionKey, File>,
}

impl<'o> State<'o> {
    pub(super) fn new(out_dir: Option<PathBuf>, observer: &'o mut dyn Observer) -> Self {
        State {
            files: out_dir.map(Files::new),
            observer,
            summary: Summary::default(),
        }
    }

    pub(super) fn write_datagram(&mut self, datagram: &[u8]) {
        let format = detect_format(datagram);
        let bytes: std::borrow::Cow<[u8]> = if datagram.ends_with(b"\n") {
            std::borrow::Cow::Borrowed(datagram)
        } else {
            // git always ends a datagram with `\n`; keep output line-based.
            self.summary.partial_lines += 1;
            self.summary.warnings.push(
                Position::Unknown,
                format!(
                    "datagram {}: no final newline, one added",
                    self.summary.datagrams
                ),
            );
            let mut owned = datagram.to_vec();
            owned.push(b'\n');
            std::borrow::Cow::Owned(owned)
        };
        let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        self.summary.lines += lines;
        self.observer.lines(LineSource::Datagram, format, &bytes);
        if let Some(files) = &mut self.files {
            files.write_datagram(&mut self.summary, format, &bytes, lines);
        }
    }
}

impl Files {
    fn new(out_dir: PathBuf) -> Self {
        Files {
            out_dir,
            sessions: HashMap::new(),
            dirs_made: [false; 3],
            dgram_files: HashMap::new(),
        }
    }

    /// Opens the file of a session for appending, creating it (with git's
    /// `.N` collision suffixes) the first time the session is seen.
    pub(super) fn open(&mut self, summary: &mut Summary, key: &SessionKey) -> io::Result<File> {
        if let Some(path) = self.sessions.get(key) {
            return files::options().append(true).create(true).open(path);
        }
        let dir = self.out_dir.join(key.0.dir_name());
        if !self.dirs_made[key.0.index()] {
            create_private_dir(&dir)?;
            self.dirs_made[key.0.index()] = true;
        }
        let mut attempt = 0u32;
        loop {
            let name = if attempt == 0 {
                key.1.clone()
            } else {
                format!("{}.{attempt}", key.1)
            };
            let path = dir.join(name);
            match files::options().append(true).create_new(true).open(&path) {
                Ok(file) => {
                    self.sessions.insert(key.clone(), path);
                    summary.sessions += 1;
                    return Ok(file);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && attempt < 100_000 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes `bytes` (complete lines) with one write, counting loss.
    pub(super) fn append(
        &self,
        summary: &mut Summary,
        file: &mut File,
        key: &SessionKey,
        bytes: &[u8],
        lines: u64,
    ) {
        if let Err(e) = file.write_all(bytes) {
            self.lost(summary, key, lines, &e);
        }
    }

    pub(super) fn lost(
        &self,
        summary: &mut Summary,
        key: &SessionKey,
        lines: u64,
        err: &io::Error,
    ) {
        summary.lines_lost += lines;
        let path = self
            .sessions
            .get(key)
            .cloned()
            .unwrap_or_else(|| self.out_dir.join(key.0.dir_name()).join(&key.1));
        summary.warnings.push(
            Position::Unknown,
            format!("{}: {lines} line(s) lost: {err}", path.display()),
        );
    }

    fn write_datagram(&mut self, summary: &mut Summary, format: Format, bytes: &[u8], lines: u64) {
        let name = match format {
            Format::Event => match scan_sid(bytes).and_then(|sid| session_file_name(&sid)) {
                Some(name) => name,
                None => {
                    summary.lines_without_sid += 1;
                    summary.warnings.push(
                        Position::Unknown,
                        format!(
                            "datagram {}: EVENT line without a readable sid, written to event/dgram",
                            summary.datagrams
                        ),
                    );
                    "dgram".to_string()
                }
            },
            Format::Perf | Format::Normal => "dgram".to_string(),
        };
        let key = (format, name);
        let mut file = match self.dgram_files.remove(&key) {
            Some(file) => file,
            None => {
                let mut opened = self.open(summary, &key);
                if matches!(&opened, Err(e) if e.raw_os_error() == Some(libc::EMFILE)) {
                    // Out of descriptors: give back the cached ones, retry.
                    self.dgram_files.clear();
                    opened = self.open(summary, &key);
                }
                match opened {
                    Ok(file) => file,
                    Err(e) => return self.lost(summary, &key, lines, &e),
                }
            }
        };
        self.append(summary, &mut file, &key, bytes, lines);
        if self.dgram_files.len() >= DGRAM_OPEN_FILES {
            self.dgram_files.clear();
        }
        self.dgram_files.insert(key, file);
    }
}
