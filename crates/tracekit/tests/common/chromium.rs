//! Opens report pages in headless Chromium and checks that they rendered:
//! no console error, no network request, the expected elements present,
//! a screenshot that is not blank.
//!
//! Chromium is driven through the DevTools protocol over a pipe
//! (`--remote-debugging-pipe`: commands on its fd 3, answers on its fd 4,
//! JSON messages ended by a NUL byte), so the test needs nothing but the
//! `chromium` binary (Debian's package; `.ci/run` installs it;
//! `TRACEKIT_CHROMIUM=PATH` names another). Without it the tests skip with
//! a message, unless `TRACEKIT_REQUIRE_CHROMIUM=1` (set by CI): then they
//! fail.
//!
//! For a new dialect's page: `check_page(&path, &["#r0-summary", ...])`
//! does the standard checks and returns the open [`Page`] for more
//! (`eval`, `click`).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one protocol command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium binary, if there is one. When there is none the caller
/// skips its test, unless TRACEKIT_REQUIRE_CHROMIUM is set: then this
/// fails it.
pub fn chromium() -> Option<PathBuf> {
    let found = match std::env::var_os("TRACEKIT_CHROMIUM") {
        // Another build of Chromium, or (empty) none at all.
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        None => ["chromium", "chromium-browser", "google-chrome", "chrome"]
            .iter()
            .find_map(|name| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|d| d.join(name))
                        .find(|p| p.is_file())
                })
            }),
    };
    if found.is_none() {
        assert!(
            std::env::var_os("TRACEKIT_REQUIRE_CHROMIUM").is_none_or(|v| v == "0"),
            "TRACEKIT_REQUIRE_CHROMIUM is set but no chromium was found (apt-get install chromium)"
        );
        eprintln!(
            "chromium is not installed: the browser checks of this test did not run \
             (apt-get install chromium; CI sets TRACEKIT_REQUIRE_CHROMIUM=1)"
        );
    }
    found
}

/// What a page did while it loaded.
#[derive(Debug, Default)]
pub struct Log {
    pub console_errors: Vec<String>,
    pub requests: Vec<String>,
}

/// A page open in a headless Chromium of its own.
pub struct Page {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next: u64,
    session: String,
    pub url: String,
    pub log: Log,
    _profile: tempfile::TempDir,
}

/// Opens `html` in Chromium (a fresh profile), waits for its load event,
/// then checks: no console error or exception, no request besides the page
/// itself, every selector matches at least one element, and a full-page
/// screenshot is not blank. `None` when Chromium is not installed (the
/// test skips).
pub fn check_page(html: &Path, selectors: &[&str]) -> Option<Page> {
    let mut page = open(html)?;
    assert!(
        page.log.console_errors.is_empty(),
        "{}: console errors: {:#?}",
        html.display(),
        page.log.console_errors
    );
    assert!(
        page.log.requests.is_empty(),
        "{}: the page made network requests: {:#?}",
        html.display(),
        page.log.requests
    );
    let counts = page.eval(&format!(
        "JSON.stringify({}.map(s => document.querySelectorAll(s).length))",
        serde_json::to_string(selectors).expect("selectors")
    ));
    let counts: Vec<u64> =
        serde_json::from_str(counts.as_str().expect("counts")).expect("counts JSON");
    let missing: Vec<&&str> = selectors
        .iter()
        .zip(&counts)
        .filter(|(_, n)| **n == 0)
        .map(|(s, _)| s)
        .collect();
    assert!(
        missing.is_empty(),
        "{}: no element matches {missing:?}",
        html.display()
    );
    let png = page.screenshot();
    let (share, colours) = non_background(&png);
    if let Some(dir) = std::env::var_os("TRACEKIT_SCREENSHOTS") {
        let name = html.file_stem().map_or("page".into(), |s| s.to_owned());
        let mut p = PathBuf::from(dir).join(name);
        p.set_extension("png");
        std::fs::write(&p, &png).expect("write screenshot");
    }
    assert!(
        share > 0.02 && colours > 8,
        "{}: the screenshot looks blank ({:.2}% of pixels differ from the background, {colours} colours)",
        html.display(),
        share * 100.0
    );
    Some(page)
}

/// Opens `html` in Chromium (a fresh profile) and waits for its load
/// event, checking nothing (`Page::log` holds what it did). `None` when
/// Chromium is not installed.
pub fn open(html: &Path) -> Option<Page> {
    Some(Page::open(&chromium()?, html))
}

/// The share of pixels that differ from the most common colour, and how
/// many colours the image has (up to 10 000).
pub fn non_background(png_bytes: &[u8]) -> (f64, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let px = info.color_type.samples();
    assert!(px >= 3, "unexpected PNG colour type {:?}", info.color_type);
    let mut counts = std::collections::HashMap::<[u8; 3], u64>::new();
    for p in buf[..info.buffer_size()].chunks_exact(px) {
        *counts.entry([p[0], p[1], p[2]]).or_default() += 1;
    }
    let total: u64 = counts.values().sum();
    let background = counts.values().copied().max().unwrap_or(0);
    (
        (total - background) as f64 / total.max(1) as f64,
        counts.len().min(10_000),
    )
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

impl Page {
    fn open(exe: &Path, html: &Path) -> Page {
        let profile = tempfile::tempdir().expect("profile dir");
        let (cmd_read, cmd_write) = pipe();
        let (resp_read, resp_write) = pipe();
        let mut c = Command::new(exe);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--mute-audio",
            "--window-size=1280,1600",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only fcntl and dup2 run (both
        // async-signal-safe) on descriptors this process owns: the pipe
        // ends become fds 3 (commands) and 4 (answers) of the browser.
        unsafe {
            c.pre_exec(move || {
                let a = libc::fcntl(cmd_read, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(resp_write, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("start chromium");
        // SAFETY: the descriptors came from pipe2 above and are owned here
        // (the child has its own copies); each is wrapped exactly once.
        let (to, from) = unsafe {
            libc::close(cmd_read);
            libc::close(resp_write);
            (File::from_raw_fd(cmd_write), File::from_raw_fd(resp_read))
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from);
            loop {
                let mut msg = Vec::new();
                match r.read_until(0, &mut msg) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        msg.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&msg) {
                            if tx.send(v).is_err() {
                                break;
                            }
                        }
                    }
                }
            }
        });
        let url = format!(
            "file://{}",
            std::fs::canonicalize(html).expect("page path").display()
        );
        let mut p = Page {
            child,
            to,
            from: rx,
            next: 0,
            session: String::new(),
            url: url.clone(),
            log: Log::default(),
            _profile: profile,
        };
        let target = p.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().expect("targetId").to_string();
        let s = p.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        p.session = s["sessionId"].as_str().expect("sessionId").to_string();
        for domain in ["Page", "Runtime", "Network", "Log"] {
            p.call(&format!("{domain}.enable"), json!({}));
        }
        p.call("Page.navigate", json!({"url": url}));
        p.wait_for("Page.loadEventFired");
        // Anything the page's script does on load has run by now; one more
        // round trip collects the events it caused.
        p.eval("1");
        p
    }

    fn send(&mut self, method: &str, params: Value) -> std::io::Result<u64> {
        self.next += 1;
        let mut msg = json!({"id": self.next, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg)?;
        bytes.push(0);
        self.to.write_all(&bytes)?;
        Ok(self.next)
    }

    fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from.recv_timeout(left) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!("chromium: no {what} within {TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("chromium exited while waiting for {what}")
            }
        }
    }

    /// Records what the page did (console errors, requests) from an event.
    fn note(&mut self, v: &Value) {
        let params = &v["params"];
        match v["method"].as_str() {
            Some("Runtime.consoleAPICalled") if params["type"] == "error" => {
                self.log.console_errors.push(params["args"].to_string())
            }
            Some("Runtime.exceptionThrown") => self
                .log
                .console_errors
                .push(params["exceptionDetails"].to_string()),
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => self
                .log
                .console_errors
                .push(params["entry"]["text"].to_string()),
            Some("Network.requestWillBeSent") => {
                let u = params["request"]["url"].as_str().unwrap_or_default();
                if u != self.url && u != "about:blank" {
                    self.log.requests.push(u.to_string());
                }
            }
            _ => {}
        }
    }

    /// Runs a protocol command in the page's session and returns its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self
            .send(method, params)
            .unwrap_or_else(|e| panic!("{method}: writing to chromium: {e}"));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let v = self.next_message(deadline, method);
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.note(&v);
        }
    }

    fn wait_for(&mut self, event: &str) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let v = self.next_message(deadline, event);
            self.note(&v);
            if v["method"] == event {
                return;
            }
        }
    }

    /// Evaluates a JavaScript expression in the page; its value.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{js}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Clicks the first element matching `selector` (a real mouse event at
    /// its centre, so it goes through what a user's click goes through).
    pub fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            serde_json::to_string(selector).expect("selector")
        ));
        let (x, y) = (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"));
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// A PNG of the whole page (at most 8000 px tall).
    pub fn screenshot(&mut self) -> Vec<u8> {
        let m = self.call("Page.getLayoutMetrics", json!({}));
        let size = &m["cssContentSize"];
        let (w, h) = (
            size["width"].as_f64().unwrap_or(1280.0),
            size["height"].as_f64().unwrap_or(1600.0).min(8000.0),
        );
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}}),
        );
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .expect("screenshot base64")
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        self.session.clear();
        let id = self.send("Browser.close", json!({})).ok();
        let deadline = Instant::now() + Duration::from_secs(10);
        while id.is_some() && Instant::now() < deadline {
            match self.from.recv_timeout(Duration::from_millis(200)) {
                Ok(v) if id.is_some_and(|i| v["id"] == i) => break,
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
