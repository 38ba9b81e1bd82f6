//! The last guard against panics inside the engine.
//!
//! Known panics of the Parquet and Arrow crates on damaged files are kept
//! from happening (`tracekit_parquet::read::sanitize`); some remain inside
//! page decoders (a page header whose value count exceeds its data). A
//! query therefore runs inside `catch_unwind` (panics on the runtime's
//! worker threads reach it: DataFusion resumes them in the task that
//! awaits the panicked one, or turns them into errors), and the trace
//! producers' threads catch their own. [`quiet`] keeps the default hook
//! from printing such a panic: its message travels in the error instead.

use std::cell::Cell;
use std::sync::{Mutex, Once};

thread_local! {
    static IN_ENGINE: Cell<bool> = const { Cell::new(false) };
}

/// The message and place of the last panic on an engine thread.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Marks the current thread as the engine's for its whole life (the
/// runtime's workers, the producers).
pub fn mark_engine_thread() {
    IN_ENGINE.with(|f| f.set(true));
}

/// Marks the current thread as the engine's while the value lives (the
/// caller's thread, while it runs a query).
pub struct Inside {
    was: bool,
}

impl Inside {
    pub fn enter() -> Inside {
        Inside {
            was: IN_ENGINE.with(|f| f.replace(true)),
        }
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        let was = self.was;
        IN_ENGINE.with(|f| f.set(was));
    }
}

/// Installs (once) a panic hook that keeps panics on engine threads off
/// standard error and notes their message and place for [`take_last`];
/// panics elsewhere go to the hook there was before.
pub fn quiet() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_ENGINE.with(Cell::get) {
                let msg = crate::parquet::panic_message(info.payload());
                let at = info
                    .location()
                    .map(|l| format!(" (at {}:{})", short(l.file()), l.line()))
                    .unwrap_or_default();
                let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
                *last = Some(format!("{msg}{at}"));
            } else {
                previous(info);
            }
        }));
    });
}

/// A source path from the cargo registry without the registry's own
/// directories (`parquet-59.3.2/src/...`).
fn short(file: &str) -> &str {
    const REG: &str = "/registry/src/";
    match file.find(REG) {
        Some(i) => {
            let rest = &file[i + REG.len()..];
            rest.find('/').map_or(rest, |j| &rest[j + 1..])
        }
        None => file,
    }
}

/// The last noted panic (message and place), taken.
pub fn take_last() -> Option<String> {
    LAST.lock().unwrap_or_else(|p| p.into_inner()).take()
}
