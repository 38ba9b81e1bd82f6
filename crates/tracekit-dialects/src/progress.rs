//! Progress bars for long work over big inputs: shown on a terminal
//! (standard error) only, never when it is piped or with `--quiet`, and
//! only for inputs big enough to take a while.

use std::io::{self, BufRead, IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Inputs smaller than this are done before a bar would be worth drawing.
const MIN_BYTES: u64 = 32 << 20;

pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether the user asked for `--quiet`: no progress bars, and verbs drop
/// their informational lines on standard error (warnings of `rtrace
/// postproc`, the listener's summary).
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A bar over the bytes of one input; does nothing when not shown.
/// Cloning shares the bar (threads may advance it).
#[derive(Clone)]
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar for `total` bytes of `what` (a file name).
    pub fn bytes(total: u64, what: &str) -> Progress {
        if QUIET.load(Ordering::Relaxed) || total < MIN_BYTES || !io::stderr().is_terminal() {
            return Progress(None);
        }
        // Cleared when done or when the last handle is dropped (an error
        // leaves no half-drawn bar behind the message).
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_finish(ProgressFinish::AndClear);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:32}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Done up to `pos` bytes.
    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.0 {
            b.set_position(pos);
        }
    }

    /// `n` more bytes done.
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }

    /// Clears the bar (the last handle's drop does too).
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// A reader that advances a [`Progress`] by what is read through it.
pub struct ProgressRead<R> {
    inner: R,
    progress: Progress,
}

impl<R> ProgressRead<R> {
    pub fn new(inner: R, progress: Progress) -> Self {
        ProgressRead { inner, progress }
    }
}

impl<R: Read> Read for ProgressRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        if n == 0 {
            self.progress.finish();
        }
        Ok(n)
    }
}

impl<R: BufRead> BufRead for ProgressRead<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buf = self.inner.fill_buf()?;
        if buf.is_empty() {
            self.progress.finish();
        }
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        self.progress.inc(amt as u64);
        self.inner.consume(amt);
    }
}
