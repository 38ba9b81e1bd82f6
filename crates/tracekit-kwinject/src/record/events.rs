//! The binary records the `tracekit-preload` shim reports.
//!
//! The shim sends each record through a POSIX trace stream, split into
//! events of the stream's max-data-size, each behind a fragment header (see
//! [`super::preload::Reassembler`]); [`decode_one`] reads a reassembled
//! record. Layout (native byte order, the shim and the recorder run on one
//! machine):
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | u32 | magic `0x544B5231` |
//! | 4 | u32 | record length in bytes, header included |
//! | 8 | u32 | kind (below) |
//! | 12 | i32 | pid (reaped: the child's pid) |
//! | 16 | i32 | exec kinds, fork: parent pid; reaped: the wait status; exec failed: `errno` |
//! | 20 | u32 | exec kinds: argc; else 0 |
//! | 24 | u64 | microseconds since the Unix epoch; 0 (what the shim writes): the stream time of the record's first event |
//! | 32 | u32 | exec kinds: envc; then NUL-terminated cwd, executable (`AT_EXECFN`, or the path given to the call), argv…, env… |
//!
//! Kinds: 1 exec (reported by the new program), 2 fork (pid: the child;
//! written by the parent, stamped before the fork), 3 reaped (in the
//! parent), 4 exec *called* (reported by the calling program before the
//! call, with the path, argv and environment it passes), 5 exec failed (the
//! call returned: cancels the process's latest kind-4 record), 6 exec that
//! *replaces* the latest kind-4 record of its pid (the call started another
//! program than the one reported: glibc's `execvp` runs a script without
//! `#!` through `/bin/sh`).

use super::ExecEvent;

pub const MAGIC: u32 = 0x544B_5231;
pub const HEADER: usize = 32;
pub const KIND_EXEC: u32 = 1;
pub const KIND_FORK: u32 = 2;
pub const KIND_REAPED: u32 = 3;
pub const KIND_EXEC_CALLED: u32 = 4;
pub const KIND_EXEC_FAILED: u32 = 5;
pub const KIND_EXEC_REPLACES: u32 = 6;

/// Who reported an exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecBy {
    /// The new program, from what the kernel gave it.
    Program,
    /// The calling program, before the call (kind 4): valid unless a
    /// [`Event::ExecFailed`] or a [`ExecBy::Replacing`] exec of the same
    /// pid follows.
    Caller,
    /// The new program, replacing its caller's report (kind 6).
    Replacing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Exec(ExecEvent, ExecBy),
    Fork { pid: i32, ppid: i32, time_us: u64 },
    Reaped { pid: i32, status: i32, time_us: u64 },
    ExecFailed { pid: i32, errno: i32, time_us: u64 },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(a)
}

/// Decodes one record (bytes past its length are ignored).
pub fn decode_one(b: &[u8]) -> Result<Event, String> {
    if b.len() < HEADER {
        return Err("truncated event header".into());
    }
    if u32_at(b, 0) != MAGIC {
        return Err("bad event magic".into());
    }
    let len = u32_at(b, 4) as usize;
    if len < HEADER || len > b.len() {
        return Err(format!("event length {len} out of range"));
    }
    let kind = u32_at(b, 8);
    let pid = u32_at(b, 12) as i32;
    let other = u32_at(b, 16) as i32;
    let count = u32_at(b, 20) as usize;
    let mut t = [0u8; 8];
    t.copy_from_slice(&b[24..32]);
    let time_us = u64::from_ne_bytes(t);
    let ev = match kind {
        KIND_FORK => Event::Fork {
            pid,
            ppid: other,
            time_us,
        },
        KIND_REAPED => Event::Reaped {
            pid,
            status: other,
            time_us,
        },
        KIND_EXEC_FAILED => Event::ExecFailed {
            pid,
            errno: other,
            time_us,
        },
        KIND_EXEC | KIND_EXEC_CALLED | KIND_EXEC_REPLACES => {
            let by = match kind {
                KIND_EXEC_CALLED => ExecBy::Caller,
                KIND_EXEC_REPLACES => ExecBy::Replacing,
                _ => ExecBy::Program,
            };
            if len < HEADER + 4 {
                return Err("exec event without payload".into());
            }
            let envc = u32_at(b, HEADER) as usize;
            let mut strings = b[HEADER + 4..len].split(|&c| c == 0);
            let mut next = || strings.next().map(<[u8]>::to_vec);
            let cwd = next().ok_or("exec event: no cwd")?;
            let executable = next().ok_or("exec event: no executable")?;
            // Counts come from the file: never reserve more than its bytes allow.
            let mut argv = Vec::with_capacity(count.min(len));
            for _ in 0..count {
                argv.push(next().ok_or("exec event: argv cut short")?);
            }
            let mut env = Vec::with_capacity(envc.min(len));
            for _ in 0..envc {
                env.push(next().ok_or("exec event: env cut short")?);
            }
            Event::Exec(
                ExecEvent {
                    pid,
                    ppid: other,
                    time_us,
                    cwd,
                    executable,
                    argv,
                    env,
                },
                by,
            )
        }
        k => return Err(format!("unknown event kind {k}")),
    };
    Ok(ev)
}

/// Encodes one event: the tests' encoder (the shim has its own).
#[cfg(test)]
fn encode(ev: &Event) -> Vec<u8> {
    let mut b = vec![0u8; HEADER];
    let (kind, pid, other, count, time) = match ev {
        Event::Exec(e, by) => {
            let kind = match by {
                ExecBy::Program => KIND_EXEC,
                ExecBy::Caller => KIND_EXEC_CALLED,
                ExecBy::Replacing => KIND_EXEC_REPLACES,
            };
            (kind, e.pid, e.ppid, e.argv.len() as u32, e.time_us)
        }
        Event::Fork { pid, ppid, time_us } => (KIND_FORK, *pid, *ppid, 0, *time_us),
        Event::Reaped {
            pid,
            status,
            time_us,
        } => (KIND_REAPED, *pid, *status, 0, *time_us),
        Event::ExecFailed {
            pid,
            errno,
            time_us,
        } => (KIND_EXEC_FAILED, *pid, *errno, 0, *time_us),
    };
    if let Event::Exec(e, _) = ev {
        b.extend_from_slice(&(e.env.len() as u32).to_ne_bytes());
        for s in [&e.cwd, &e.executable]
            .into_iter()
            .chain(&e.argv)
            .chain(&e.env)
        {
            b.extend_from_slice(s);
            b.push(0);
        }
    }
    let len = b.len() as u32;
    b[0..4].copy_from_slice(&MAGIC.to_ne_bytes());
    b[4..8].copy_from_slice(&len.to_ne_bytes());
    b[8..12].copy_from_slice(&kind.to_ne_bytes());
    b[12..16].copy_from_slice(&pid.to_ne_bytes());
    b[16..20].copy_from_slice(&other.to_ne_bytes());
    b[20..24].copy_from_slice(&count.to_ne_bytes());
    b[24..32].copy_from_slice(&time.to_ne_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let events = [
            Event::Exec(
                ExecEvent {
                    pid: 7,
                    ppid: 1,
                    time_us: 42,
                    cwd: b"/w".to_vec(),
                    executable: b"/bin/cc".to_vec(),
                    argv: vec![b"cc".to_vec(), b"-c".to_vec(), b"a.c".to_vec()],
                    env: vec![b"A=1".to_vec(), b"\xff=\xfe".to_vec()],
                },
                ExecBy::Caller,
            ),
            Event::Reaped {
                pid: 7,
                status: 0,
                time_us: 50,
            },
            Event::ExecFailed {
                pid: 7,
                errno: 2,
                time_us: 51,
            },
        ];
        for ev in &events {
            let buf = encode(ev);
            assert_eq!(decode_one(&buf).as_ref(), Ok(ev));
            assert!(decode_one(&buf[..buf.len() - 1]).is_err());
        }
    }

    /// A damaged argc must not make the decoder reserve gigabytes (found
    /// by the fuzzer): the record is refused instead.
    #[test]
    fn huge_counts_are_refused_not_allocated() {
        let mut buf = encode(&Event::Exec(ExecEvent::default(), ExecBy::Program));
        buf[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        buf[32..36].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(decode_one(&buf).is_err());
    }
}
