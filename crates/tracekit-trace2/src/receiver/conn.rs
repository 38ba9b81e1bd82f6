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

    /// Writes complete lines (`data` ends with `\n`) and shows them to the
    /// observer.
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
        if state.out_dir.is_none() {
            state.summary.lines += memchr::memchr_iter(b'\n', data).count() as u64;
            return;
        }
        if format != Format::Event {
            let lines = memchr::memchr_iter(b'\n', data).count() as u64;
            let key = (format, self.own_name.clone());
            self.write_to(state, key, data, lines);
            return;
        }
        let mut batch_start = 0;
        let mut batch_key: Option<SessionKey> = None;
        let mut batch_lines = 0u64;
        let mut line_start = 0;
        for newline in memchr::memchr_iter(b'\n', data) {
            let line = &data[line_start..=newline];
            let key = self.event_key(state, line);
            if batch_key.as_ref() != Some(&key) {
                if let Some(previous) = batch_key.take() {
                    self.write_to(state, previous, &data[batch_start..line_start], batch_lines);
                }
                batch_start = line_start;
                batch_lines = 0;
                batch_key = Some(key);
            }
            batch_lines += 1;
            line_start = newline + 1;
        }
        if let Some(key) = batch_key {
            self.write_to(state, key, &data[batch_start..], batch_lines);
        }
    }

    /// The session an EVENT line belongs to.
    pub(super) fn event_key(&self, state: &mut State<'_>, line: &[u8]) -> SessionKey {
        if let Some(name) = scan_sid(line).and_then(|sid| session_file_name(&sid)) {
            return (Format::Event, name);
        }
        state.summary.lines_without_sid += 1;
        let key = match &self.current {
            Some((key, _)) => key.clone(),
            None => (Format::Event, self.own_name.clone()),
        };
        state.summary.warnings.push(
            Position::Unknown,
            format!(
                "connection {}: EVENT line without a readable sid, written to event/{}",
                self.id, key.1
            ),
        );
        key
    }

    pub(super) fn write_to(
        &mut self,
        state: &mut State<'_>,
        key: SessionKey,
        bytes: &[u8],
        lines: u64,
    ) {
        if self.current.as_ref().map(|(k, _)| k) != Some(&key) {
            // Close the previous file before opening the next: one output
            // file per connection at a time.
            self.current = None;
            match state.open(&key) {
                Ok(file) => self.current = Some((key.clone(), file)),
                Err(e) => return state.lost(&key, lines, &e),
            }
        }
        if let Some((key, file)) = self.current.as_mut() {
            state.append(file, key, bytes, lines);
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
