//! The exporter: batches pieces into requests and sends them from a thread
//! of its own, retrying with backoff, and spools what cannot be sent.
//!
//! The producer (the receiver's poll loop, a conversion) only hands over
//! encoded [`Piece`]s through a bounded queue and never waits on the
//! network: when the queue is full (the sender is retrying, or replaying
//! the spool) it writes the piece to the spool itself. Memory is therefore
//! bounded by the queue, one batch and one request being sent, whatever
//! the collector does.
//!
//! The sender thread has two states. **Up**: a batch is sent as soon as it
//! reaches [`ExporterConfig::batch_max_bytes`] or `batch_max_spans`, or is
//! [`ExporterConfig::batch_delay`] old; a retryable failure (connection
//! refused, time-out, 429/502/503/504) is retried with exponential backoff
//! (doubling from 250 ms, at most [`ExporterConfig::backoff_max`], or the
//! `Retry-After` the collector gave) for at most
//! [`ExporterConfig::retry_for`]; then the batch is spooled and the state
//! becomes **down**. While down, batches go straight to the spool and the
//! oldest spooled request is offered to the collector now and then (the
//! same backoff); once it is accepted the spool is replayed, oldest first,
//! and the state is up again. A spool left by an earlier run is replayed
//! the same way at start. A request the collector refuses for good (4xx
//! other than 429) is counted as rejected and not sent again.
//!
//! [`Exporter::finish`] sends or spools everything still queued within a
//! deadline and returns the counts.

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::batch::Piece;
use crate::http::{HttpConfig, HttpSender, Outcome};
use crate::spool::{Dropped, Spool};

/// How to batch, retry and spool.
#[derive(Debug, Clone)]
pub struct ExporterConfig {
    pub http: HttpConfig,
    /// Where requests wait while the collector is away; `None`: they are
    /// dropped (and counted) once `retry_for` has passed.
    pub spool_dir: Option<std::path::PathBuf>,
    /// Bound of the spool directory.
    pub spool_max_bytes: u64,
    pub batch_max_bytes: usize,
    pub batch_max_spans: u64,
    pub batch_delay: Duration,
    /// Pieces the queue to the sender thread holds.
    pub queue: usize,
    /// How long one request is retried before it is spooled.
    pub retry_for: Duration,
    /// Longest wait between two attempts.
    pub backoff_max: Duration,
}

impl ExporterConfig {
    pub fn new(http: HttpConfig) -> Self {
        ExporterConfig {
            http,
            spool_dir: None,
            spool_max_bytes: 256 << 20,
            batch_max_bytes: 4 << 20,
            batch_max_spans: 8192,
            batch_delay: Duration::from_millis(200),
            queue: 1024,
            retry_for: Duration::from_secs(30),
            backoff_max: Duration::from_secs(30),
        }
    }
}

/// What the exporter did; every count is exact.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ExportStats {
    /// Sessions (traces) the collector accepted, replayed ones included.
    pub sessions_sent: u64,
    pub spans_sent: u64,
    pub requests_sent: u64,
    /// Bytes on the wire (after compression).
    pub bytes_sent: u64,
    /// Sessions written to the spool because the collector was away.
    pub sessions_spooled: u64,
    /// Sessions sent from the spool (this run's or an earlier one's).
    pub sessions_replayed: u64,
    /// Sessions dropped past the spool bound (or with no spool, after
    /// `retry_for`), or because the spool could not be written.
    pub sessions_dropped: u64,
    pub spans_dropped: u64,
    /// Sessions in requests the collector refused for good (4xx).
    pub sessions_rejected: u64,
    /// Spans the collector refused (whole requests and partial successes).
    pub spans_rejected: u64,
    /// Sessions still in the spool when the exporter finished.
    pub spool_pending_sessions: u64,
    pub spool_pending_bytes: u64,
    /// Attempts that failed and were tried again.
    pub retries: u64,
    /// Times the collector went away (up to down).
    pub outages: u64,
    /// The last distinct errors (at most 20).
    pub errors: Vec<String>,
}

impl ExportStats {
    fn note(&mut self, why: String) {
        if self.errors.last() != Some(&why) {
            if self.errors.len() == 20 {
                self.errors.remove(0);
            }
            self.errors.push(why);
        }
    }

    fn dropped(&mut self, d: Dropped) {
        self.sessions_dropped += d.sessions;
        self.spans_dropped += d.spans;
    }
}

struct Shared {
    spool: Option<Spool>,
    stats: ExportStats,
}

enum Msg {
    Piece(Piece),
    /// Wakes the sender to stop by the deadline in `stop_at`.
    Stop,
}

/// A running exporter: hand it pieces, then [`Exporter::finish`].
pub struct Exporter {
    tx: SyncSender<Msg>,
    shared: Arc<Mutex<Shared>>,
    /// The shutdown deadline, set once by [`Exporter::finish`]: the one
    /// record of a stop (a request being retried gives up by it).
    stop_at: Arc<OnceLock<Instant>>,
    thread: Option<JoinHandle<()>>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic in the other thread must not lose the counts.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spools `piece`, or counts it dropped.
fn spool_piece(shared: &mut Shared, piece: &Piece) {
    let Shared { spool, stats } = shared;
    match spool {
        Some(spool) => match spool.push(piece) {
            Ok(pushed) => {
                let d = pushed.dropped;
                if d.requests > 0 {
                    stats.note(format!(
                        "spool {} is full: {} request(s) with {} session(s) dropped",
                        spool.dir().display(),
                        d.requests,
                        d.sessions
                    ));
                }
                stats.dropped(d);
                if pushed.stored {
                    stats.sessions_spooled += piece.sessions;
                }
            }
            Err(e) => {
                stats.note(format!("spool {}: {e}", spool.dir().display()));
                stats.sessions_dropped += piece.sessions;
                stats.spans_dropped += piece.spans;
            }
        },
        None => {
            stats.sessions_dropped += piece.sessions;
            stats.spans_dropped += piece.spans;
        }
    }
}

impl Exporter {
    /// Opens the spool and starts the sender thread.
    pub fn start(config: ExporterConfig) -> std::io::Result<Exporter> {
        let spool = match &config.spool_dir {
            Some(dir) => Some(Spool::open(dir, config.spool_max_bytes).map_err(|e| {
                std::io::Error::new(e.kind(), format!("spool {}: {e}", dir.display()))
            })?),
            None => None,
        };
        let shared = Arc::new(Mutex::new(Shared {
            spool,
            stats: ExportStats::default(),
        }));
        let (tx, rx) = sync_channel(config.queue.max(1));
        let stop_at = Arc::new(OnceLock::new());
        let mut worker = Worker {
            sender: HttpSender::new(config.http.clone()),
            shared: shared.clone(),
            stop_at: stop_at.clone(),
            batch: Piece::default(),
            batch_since: None,
            down: None,
            probe_wait: Duration::from_millis(250),
            config,
        };
        // A spool from an earlier run: offer it at once.
        if lock(&shared).spool.as_ref().is_some_and(|s| !s.is_empty()) {
            worker.down = Some(Instant::now());
        }
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || worker.run(rx))?;
        Ok(Exporter {
            tx,
            shared,
            stop_at,
            thread: Some(thread),
        })
    }

    /// Hands a piece over; never waits on the network. When the sender is
    /// busy and its queue full, the piece goes to the spool at once.
    pub fn submit(&self, piece: Piece) {
        if piece.is_empty() {
            return;
        }
        match self.tx.try_send(Msg::Piece(piece)) {
            Ok(()) => {}
            Err(TrySendError::Full(Msg::Piece(piece))) => {
                let mut shared = lock(&self.shared);
                if shared.spool.is_some() {
                    spool_piece(&mut shared, &piece);
                } else {
                    // No spool: wait for the sender rather than drop.
                    drop(shared);
                    let _ = self.tx.send(Msg::Piece(piece));
                }
            }
            Err(TrySendError::Full(Msg::Stop)) => {}
            Err(TrySendError::Disconnected(msg)) => {
                if let Msg::Piece(piece) = msg {
                    spool_piece(&mut lock(&self.shared), &piece);
                }
            }
        }
    }

    /// A snapshot of the counts so far.
    pub fn stats(&self) -> ExportStats {
        lock(&self.shared).stats.clone()
    }

    /// Sends (or, past `timeout`, spools) everything handed over, stops
    /// the thread and returns the counts.
    pub fn finish(mut self, timeout: Duration) -> ExportStats {
        let deadline = Instant::now() + timeout;
        let _ = self.stop_at.set(deadline);
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut shared = lock(&self.shared);
        let (pending_sessions, pending_bytes) = shared
            .spool
            .as_ref()
            .map_or((0, 0), |s| (s.sessions(), s.bytes()));
        shared.stats.spool_pending_sessions = pending_sessions;
        shared.stats.spool_pending_bytes = pending_bytes;
        shared.stats.clone()
    }
}

struct Worker {
    config: ExporterConfig,
    sender: HttpSender,
    shared: Arc<Mutex<Shared>>,
    /// See [`Exporter`]'s.
    stop_at: Arc<OnceLock<Instant>>,
    batch: Piece,
    batch_since: Option<Instant>,
    /// While the collector is away: when to offer it the spool again.
    down: Option<Instant>,
    probe_wait: Duration,
}

impl Worker {
    fn run(&mut self, rx: Receiver<Msg>) {
        loop {
            let now = Instant::now();
            let batch_due = self.batch_since.map(|t| t + self.config.batch_delay);
            let wake = match (batch_due, self.down) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let msg = match wake {
                Some(at) => rx.recv_timeout(at.saturating_duration_since(now)),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match msg {
                Ok(Msg::Piece(p)) => self.add(p, None),
                Ok(Msg::Stop) => {
                    let deadline = self.stop_at.get().copied().unwrap_or_else(Instant::now);
                    while let Ok(Msg::Piece(p)) = rx.try_recv() {
                        self.add(p, Some(deadline));
                    }
                    self.flush(Some(deadline));
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.flush(Some(Instant::now()));
                    return;
                }
            }
            let now = Instant::now();
            if self
                .batch_since
                .is_some_and(|t| now >= t + self.config.batch_delay)
            {
                self.flush(None);
            }
            if self.down.is_some_and(|at| now >= at) {
                self.probe();
            }
        }
    }

    fn add(&mut self, piece: Piece, deadline: Option<Instant>) {
        if self.batch.is_empty() {
            self.batch_since = Some(Instant::now());
        }
        self.batch.append(piece);
        if self.batch.bytes.len() >= self.config.batch_max_bytes
            || self.batch.spans >= self.config.batch_max_spans
        {
            self.flush(deadline);
        }
    }

    fn went_down(&mut self, why: String) {
        let mut shared = lock(&self.shared);
        if self.down.is_none() {
            shared.stats.outages += 1;
        }
        shared.stats.note(why);
        drop(shared);
        self.down = Some(Instant::now() + self.probe_wait);
        self.probe_wait = (self.probe_wait * 2).min(self.config.backoff_max);
    }

    fn came_up(&mut self) {
        self.down = None;
        self.probe_wait = Duration::from_millis(250);
    }

    fn accepted(
        &mut self,
        piece_sessions: u64,
        piece_spans: u64,
        bytes: usize,
        rejected: i64,
        message: String,
        replayed: bool,
    ) {
        let mut shared = lock(&self.shared);
        let s = &mut shared.stats;
        s.sessions_sent += piece_sessions;
        s.spans_sent += piece_spans;
        s.requests_sent += 1;
        s.bytes_sent += bytes as u64;
        if replayed {
            s.sessions_replayed += piece_sessions;
        }
        if rejected > 0 {
            s.spans_rejected += rejected as u64;
            s.note(format!(
                "the collector rejected {rejected} span(s): {message}"
            ));
        }
    }

    fn rejected(&mut self, sessions: u64, spans: u64, why: String) {
        let mut shared = lock(&self.shared);
        shared.stats.sessions_rejected += sessions;
        shared.stats.spans_rejected += spans;
        shared.stats.note(why);
    }

    /// Sends the batch (or spools it while the collector is away).
    fn flush(&mut self, deadline: Option<Instant>) {
        self.batch_since = None;
        let piece = std::mem::take(&mut self.batch);
        if piece.is_empty() {
            return;
        }
        if self.down.is_some() {
            spool_piece(&mut lock(&self.shared), &piece);
            return;
        }
        let started = Instant::now();
        let mut give_up = match deadline {
            Some(d) => d.min(started + self.config.retry_for),
            None => started + self.config.retry_for,
        };
        let mut wait = Duration::from_millis(250);
        loop {
            let (outcome, bytes) = self.sender.send(&piece.bytes);
            match outcome {
                Outcome::Accepted {
                    rejected_spans,
                    message,
                } => {
                    self.accepted(
                        piece.sessions,
                        piece.spans,
                        bytes,
                        rejected_spans,
                        message,
                        false,
                    );
                    self.replay(deadline);
                    return;
                }
                Outcome::Rejected { why } => {
                    self.rejected(piece.sessions, piece.spans, why);
                    return;
                }
                Outcome::Retry { after, why } => {
                    let pause = after.unwrap_or(wait).min(self.config.backoff_max);
                    if let Some(&stop) = self.stop_at.get() {
                        give_up = give_up.min(stop);
                    }
                    if Instant::now() + pause > give_up {
                        self.went_down(why);
                        spool_piece(&mut lock(&self.shared), &piece);
                        return;
                    }
                    lock(&self.shared).stats.retries += 1;
                    std::thread::sleep(pause);
                    wait = (wait * 2).min(self.config.backoff_max);
                }
            }
        }
    }

    /// While down: offer the oldest spooled request; replay on success.
    fn probe(&mut self) {
        let has_spool = lock(&self.shared)
            .spool
            .as_ref()
            .is_some_and(|s| !s.is_empty());
        if !has_spool {
            self.came_up();
            return;
        }
        if self.offer_oldest() {
            self.came_up();
            self.replay(None);
        }
    }

    /// Sends spooled requests, oldest first, until the spool is empty, the
    /// collector fails, a stop is requested or `deadline` passes.
    fn replay(&mut self, deadline: Option<Instant>) {
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d)
                || (deadline.is_none() && self.stop_at.get().is_some())
            {
                return;
            }
            let has_spool = lock(&self.shared)
                .spool
                .as_ref()
                .is_some_and(|s| !s.is_empty());
            if !has_spool || !self.offer_oldest() {
                return;
            }
        }
    }

    /// Sends the oldest spooled requests (as many as fit in one batch)
    /// once; true if the collector answered (accepted or refused them for
    /// good), false if it is away.
    fn offer_oldest(&mut self) -> bool {
        let entries = {
            let shared = lock(&self.shared);
            let Some(spool) = shared.spool.as_ref() else {
                return true;
            };
            spool.oldest_batch(self.config.batch_max_bytes as u64)
        };
        if entries.is_empty() {
            return true;
        }
        let mut body = Vec::new();
        let mut sent_entries = Vec::new();
        for entry in entries {
            match std::fs::read(&entry.path) {
                Ok(b) => {
                    body.extend_from_slice(&b);
                    sent_entries.push(entry);
                }
                Err(e) => {
                    let mut shared = lock(&self.shared);
                    shared.stats.note(format!("{}: {e}", entry.path.display()));
                    if shared.spool.as_mut().is_some_and(|s| s.remove(entry.seq)) {
                        shared.stats.sessions_dropped += entry.sessions;
                        shared.stats.spans_dropped += entry.spans;
                    }
                }
            }
        }
        if sent_entries.is_empty() {
            return true;
        }
        let sessions: u64 = sent_entries.iter().map(|e| e.sessions).sum();
        let spans: u64 = sent_entries.iter().map(|e| e.spans).sum();
        let (outcome, sent) = self.sender.send(&body);
        let done = |this: &mut Self| {
            let mut shared = lock(&this.shared);
            for e in &sent_entries {
                let still_there = shared.spool.as_mut().is_some_and(|s| s.remove(e.seq));
                if !still_there {
                    // Dropped to make room while it was being sent: it
                    // arrived after all.
                    shared.stats.sessions_dropped =
                        shared.stats.sessions_dropped.saturating_sub(e.sessions);
                    shared.stats.spans_dropped = shared.stats.spans_dropped.saturating_sub(e.spans);
                }
            }
        };
        match outcome {
            Outcome::Accepted {
                rejected_spans,
                message,
            } => {
                self.accepted(sessions, spans, sent, rejected_spans, message, true);
                done(self);
                true
            }
            Outcome::Rejected { why } => {
                self.rejected(sessions, spans, why);
                done(self);
                true
            }
            Outcome::Retry { why, .. } => {
                self.went_down(why);
                false
            }
        }
    }
}
