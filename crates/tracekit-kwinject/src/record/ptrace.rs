//! `--method ptrace`: follow the build with ptrace.
//!
//! The recorder seizes the build's first process with fork, vfork, clone
//! and exec events. There are no syscall stops: each process costs a fork
//! event, the new child's initial stop, an exec event and its exit. At the
//! exec stop the new image is in place and `/proc/PID` has its argv
//! (`cmdline`), environment (`environ`), working directory (`cwd`) and the
//! path given to exec (`AT_EXECFN` in the auxiliary vector).
//!
//! Group stops (SIGSTOP/SIGTSTP to the build) are passed on with
//! `PTRACE_LISTEN`; other signals are re-injected unchanged. If the
//! recorder dies, the kernel detaches the build, which carries on.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use super::{c_args, exit_of, now_us, Assembler, ExecEvent};
use crate::trace::Exit;

fn errno() -> io::Error {
    io::Error::last_os_error()
}

/// Runs `cmd` under ptrace, feeding `asm`; returns how the build ended.
/// It waits for *any* child of the calling process (`waitpid(-1)`): call
/// it from a process that has no other children to wait for.
pub fn record(cmd: &[OsString], asm: &mut Assembler) -> io::Result<Option<Exit>> {
    let args = c_args(cmd)?;
    if args.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    }
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: fork in a process that may have threads: the child only calls
    // async-signal-safe functions (raise, execvp, write, _exit) on memory
    // prepared before the fork.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(errno());
    }
    if child == 0 {
        // SAFETY: see above; argv is NUL-terminated and outlives the call.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGSTOP);
            libc::execvp(argv[0], argv.as_ptr());
            let msg = b"tracekit: cannot run the build command\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    // The build gets ^C and ^\ from the terminal; we outlive it to write
    // the trace.
    // SAFETY: changing dispositions has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let mut status = 0;
    // SAFETY: plain syscalls on our own child.
    unsafe {
        if libc::waitpid(child, &mut status, libc::WUNTRACED) < 0 {
            return Err(errno());
        }
        let opts = libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXEC;
        if libc::ptrace(libc::PTRACE_SEIZE, child, 0, opts as libc::c_long) < 0 {
            let e = errno();
            libc::kill(child, libc::SIGKILL);
            return Err(io::Error::new(e.kind(), format!("ptrace: {e}")));
        }
        libc::kill(child, libc::SIGCONT);
    }
    asm.root(child);
    let mut root_exit = None;
    loop {
        // SAFETY: waitpid writes the status integer only.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid < 0 {
            let e = errno();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => break,
                _ => return Err(e),
            }
        }
        if let Some(how) = exit_of(status) {
            asm.exit(pid, now_us(), how);
            if pid == child {
                root_exit = Some(how);
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xffff;
        let mut inject = 0;
        let mut listen = false;
        match event {
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                let mut new: libc::c_ulong = 0;
                // SAFETY: GETEVENTMSG writes one c_ulong.
                if unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid, 0, &mut new) } == 0 {
                    asm.fork(new as i32, pid);
                }
            }
            libc::PTRACE_EVENT_EXEC => {
                if let Some(ev) = exec_event(pid) {
                    asm.exec(ev);
                }
            }
            libc::PTRACE_EVENT_STOP => {
                listen = matches!(
                    sig,
                    libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
                );
            }
            _ => inject = sig,
        }
        // SAFETY: resuming a stopped tracee; failures (it died meanwhile)
        // show up at the next waitpid.
        unsafe {
            if listen {
                libc::ptrace(libc::PTRACE_LISTEN, pid, 0, 0);
            } else {
                libc::ptrace(libc::PTRACE_CONT, pid, 0, inject as libc::c_long);
            }
        }
    }
    Ok(root_exit)
}

fn read_proc(pid: i32, what: &str) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(4096);
    fs::File::open(format!("/proc/{pid}/{what}"))
        .ok()?
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

fn split_nul(buf: &[u8]) -> Vec<Vec<u8>> {
    let buf = buf.strip_suffix(b"\0").unwrap_or(buf);
    if buf.is_empty() {
        return Vec::new();
    }
    buf.split(|&b| b == 0).map(<[u8]>::to_vec).collect()
}

/// What `/proc` says about a process stopped right after its exec.
pub fn exec_event(pid: i32) -> Option<ExecEvent> {
    use std::os::unix::ffi::OsStrExt;
    let time_us = now_us();
    let argv = split_nul(&read_proc(pid, "cmdline")?);
    let env = split_nul(&read_proc(pid, "environ").unwrap_or_default());
    let cwd = fs::read_link(format!("/proc/{pid}/cwd"))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .unwrap_or_default();
    let image = fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .unwrap_or_default();
    let executable = execfn(pid).unwrap_or_else(|| image.clone());
    let ppid = read_ppid(pid).unwrap_or(0);
    let mut ev = ExecEvent {
        pid,
        ppid,
        time_us,
        cwd,
        executable,
        argv,
        env,
    };
    super::unwrap_script(&mut ev);
    Some(ev)
}

fn read_ppid(pid: i32) -> Option<i32> {
    let stat = read_proc(pid, "stat")?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The filename given to exec, from `AT_EXECFN` (64-bit tracees).
fn execfn(pid: i32) -> Option<Vec<u8>> {
    const AT_EXECFN: u64 = 31;
    let auxv = read_proc(pid, "auxv")?;
    let mut addr = None;
    for pair in auxv.chunks_exact(16) {
        let key = u64::from_ne_bytes(pair[..8].try_into().ok()?);
        let val = u64::from_ne_bytes(pair[8..].try_into().ok()?);
        if key == AT_EXECFN {
            addr = Some(val);
            break;
        }
        if key == 0 {
            break;
        }
    }
    let addr = addr?;
    let mem = fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; 4096];
    // The string sits near the top of the stack; it may end before 4096
    // bytes do, so read what is there.
    let n = mem.read_at(&mut buf, addr).ok()?;
    buf.truncate(n);
    let end = buf.iter().position(|&b| b == 0)?;
    buf.truncate(end);
    Some(buf)
}
