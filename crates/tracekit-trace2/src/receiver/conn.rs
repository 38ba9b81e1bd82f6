//! One stream connection: buffering, format detection and routing of its lines.

use super::*;

/// One stream connection: one git process writing one target.
#[derive(Default)]
pub(super) struct Conn {
    pub(super) stream: Option<UnixStream>,
    pub(super) id: u64,
    /// The connection's own file name: accept time and peer pid.
    pub(super) own_name: String,
    pub(super) peer: Option<Peer>,
    pub(super) format: Option<Format>,
    /// Bytes of a line whose `\n` has not arrived yet.
    pub(super) pending: Vec<u8>,
    /// The session file the last line went to.
    pub(super) current: Option<(SessionKey, File)>,
}

impl Conn {
    pub(super) fn new(stream: UnixStream, id: u64) -> Self {
        let stamp = sid_timestamp(SystemTime::now());
        let peer = peer_cred(&stream);
        let own_name = match peer {
            Some(p) => format!("{stamp}-P{:08x}", p.pid as u32),
            None => format!("{stamp}-conn{id}"),
        };
        Conn {
            stream: Some(stream),
            id,
            own_name,
            peer,
            ..Conn::default()
        }
    }

    /// Reads up to `rounds` chunks; returns false once the peer is gone.
    pub(super) fn read_some(
        &mut self,
        state: &mut State<'_>,
        buf: &mut [u8],
        rounds: usize,
    ) -> bool {
        for _ in 0..rounds {
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    state.summary.bytes += n as u64;
                    self.take(state, &buf[..n]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    // ECONNRESET and friends: the client is gone.
                    if e.kind() != ErrorKind::ConnectionReset {
                        state.summary.warnings.push(
                            Position::Unknown,
                            format!("connection {}: read failed: {e}", self.id),
                        );
                    }
                    return false;
                }
            }
        }
        true
    }

    /// Frames `chunk` into lines and writes the complete ones, one write
    /// per run of lines going to the same file.
    pub(super) fn take(&mut self, state: &mut State<'_>, chunk: &[u8]) {
        let Some(last_newline) = memchr::memrchr(b'\n', chunk) else {
            self.pending.extend_from_slice(chunk);
            return;
        };
        let complete: Vec<u8>;
        let data: &[u8] = if self.pending.is_empty() {
            &chunk[..=last_newline]
        } else {
            self.pending.extend_from_slice(&chunk[..=last_newline]);
            complete = std::mem::take(&mut self.pending);
            &complete
        };
        self.write_lines(state, data);
        self.pending.extend_from_slice(&chunk[last_newline + 1..]);
    }

    /// Shows complete lines (`data` ends with `\n`) to the observer and
    /// writes them to their session files.
    pub(super) fn write_lines(&mut self, state: &mut State<'_>, data: &[u8]) {
        let format = *self.format.get_or_insert_with(|| detect_format(data));
        state.observer.lines(
            LineSource::Stream {
                conn: self.id,
                peer: self.peer,
            },
            format,
            data,
        );
        let lines = memchr::memchr_iter(b'\n', data).count() as u64;
        state.summary.lines += lines;
        let Some(files) = &mut state.files else {
            return;
        };
        let summary = &mut state.summary;
        if format != Format::Event {
            let key = (format, self.own_name.clone());
            self.write_to(files, summary, &key, data, lines);
            return;
        }
        let mut batch_start = 0;
        let mut batch_key: Option<SessionKey> = None;
        let mut batch_lines = 0u64;
        let mut line_start = 0;
        for newline in memchr::memchr_iter(b'\n', data) {
            let line = &data[line_start..=newline];
            let previous = batch_key
                .as_ref()
                .or(self.current.as_ref().map(|(key, _)| key));
            match self.event_key(summary, line, previous) {
                Some(key) => {
                    if let Some(previous) = batch_key.take() {
                        self.write_to(
                            files,
                            summary,
                            &previous,
                            &data[batch_start..line_start],
                            batch_lines,
                        );
                    }
                    batch_start = line_start;
                    batch_lines = 0;
                    batch_key = Some(key);
                }
                // The first line of this chunk continues the file written
                // last (`previous` was `self.current`'s key).
                None if batch_key.is_none() => {
                    batch_key = self.current.as_ref().map(|(key, _)| key.clone());
                }
                None => {}
            }
            batch_lines += 1;
            line_start = newline + 1;
        }
        if let Some(key) = batch_key {
            self.write_to(files, summary, &key, &data[batch_start..], batch_lines);
        }
    }

    /// The session an EVENT line belongs to, `None` when it is `previous`
    /// (the previous line's); the name is only built when it changes.
    fn event_key(
        &self,
        summary: &mut Summary,
        line: &[u8],
        previous: Option<&SessionKey>,
    ) -> Option<SessionKey> {
        if let Some(sid) = scan_sid(line) {
            if previous.is_some_and(|key| is_session_file_name(&sid, &key.1)) {
                return None;
            }
            if let Some(name) = session_file_name(&sid) {
                return Some((Format::Event, name));
            }
        }
        summary.lines_without_sid += 1;
        let (key, name) = match previous {
            Some(key) => (None, key.1.as_str()),
            None => (
                Some((Format::Event, self.own_name.clone())),
                self.own_name.as_str(),
            ),
        };
        summary.warnings.push(
            Position::Unknown,
            format!(
                "connection {}: EVENT line without a readable sid, written to event/{name}",
                self.id
            ),
        );
        key
    }

    fn write_to(
        &mut self,
        files: &mut Files,
        summary: &mut Summary,
        key: &SessionKey,
        bytes: &[u8],
        lines: u64,
    ) {
        if self.current.as_ref().map(|(k, _)| k) != Some(key) {
            // Close the previous file before opening the next: one output
            // file per connection at a time.
            self.current = None;
            match files.open(summary, key) {
                Ok(file) => self.current = Some((key.clone(), file)),
                Err(e) => return files.lost(summary, key, lines, &e),
            }
        }
        if let Some((key, file)) = self.current.as_mut() {
            files.append(summary, file, key, bytes, lines);
        }
    }

    /// The client is gone: write a partial last line, terminated, and
    /// count it; close the socket and the file.
    pub(super) fn finish(&mut self, state: &mut State<'_>) {
        self.stream = None;
        if !self.pending.is_empty() {
            let mut line = std::mem::take(&mut self.pending);
            let cut_at = line.len();
            line.push(b'\n');
            state.summary.partial_lines += 1;
            state.summary.warnings.push(
                Position::Unknown,
                format!(
                    "connection {} ({}): last line cut short after {cut_at} bytes; written with a newline added",
                    self.id, self.own_name
                ),
            );
            self.write_lines(state, &line);
        }
        self.current = None;
    }
}

/// The process at the other end, from `SO_PEERCRED`.
fn peer_cred(stream: &UnixStream) -> Option<Peer> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and `len` holds the size
    // of `cred`, as getsockopt(SO_PEERCRED) requires.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(Peer {
        pid: cred.pid,
        uid: cred.uid,
    })
}
