//! Loading the recorder into a running process (`record mem -p PID`), with
//! ptrace of our own (x86_64 Linux).
//!
//! What heaptrack's `-p` does through gdb, done here directly: the
//! process's main thread is seized and interrupted (the other threads run
//! on), its registers saved; `dlopen` is found in its C library (glibc ≥
//! 2.34 exports it from `libc.so.6`; older ones have `__libc_dlopen_mode`)
//! from `/proc/PID/maps` and the library's dynamic symbols; the library's
//! path is written below the thread's stack pointer (past the red zone),
//! and the thread is made to call `dlopen(path, RTLD_NOW | RTLD_NODELETE)`
//! with a return address of 0: the return faults, the fault stops the
//! thread for us (it is never delivered) and `rax` holds the result. Then
//! the shim's `tracekit_rtrace_attach(settings, handle)` is called the same way
//! (it rewrites the GOT slots of the loaded objects to its hooks, see the
//! shim's `attach.rs`), the registers and the stack bytes are put back
//! and the thread detached: it resumes where it was (an interrupted
//! system call restarts). [`stop`] calls `tracekit_rtrace_detach()` the
//! same way when the recorder stops before the process ends.
//!
//! Refused, with the reason: a process we may not trace (Yama's
//! `kernel.yama.ptrace_scope`, no `CAP_SYS_PTRACE`), one whose root
//! directory or mount namespace differs from ours (a container: the
//! library and the trace stream we name would not be there), one without
//! a C library to load the recorder (statically linked), and one already
//! recorded.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use object::{Object, ObjectSegment, ObjectSymbol};

/// The shim's entry points (see the shim's `attach.rs`).
const ATTACH_FN: &str = "tracekit_rtrace_attach";
const DETACH_FN: &str = "tracekit_rtrace_detach";
const RTLD_NOW: u64 = 2;
const RTLD_NODELETE: u64 = 0x1000;
/// `__libc_dlopen_mode` wants the flag `dlopen` adds itself.
const RTLD_DLOPEN: u64 = 0x8000_0000;

/// Why a process cannot be recorded, or what went wrong in it.
#[derive(Debug)]
pub struct AttachError(String);

impl std::fmt::Display for AttachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AttachError {}

type Result<T> = std::result::Result<T, AttachError>;

fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(AttachError(msg.into()))
}

/// What [`check`] found out about a process.
#[derive(Debug, Clone)]
pub struct Target {
    pub pid: i32,
    /// Its user and group (the recorder's files must be theirs to open).
    pub uid: u32,
    pub gid: u32,
    /// Its executable (`/proc/PID/exe`).
    pub executable: PathBuf,
    /// The C library it maps, and where its first segment starts.
    libc: PathBuf,
    libc_base: u64,
}

/// Checks that `pid` can take the recorder (see the module documentation
/// for what is refused).
pub fn check(pid: i32) -> Result<Target> {
    if pid <= 0 {
        return fail(format!("{pid}: not a process id"));
    }
    if pid as u32 == std::process::id() {
        return fail(format!("{pid} is tracekit itself"));
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let meta = match std::fs::metadata(&proc) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return fail(format!("no process {pid}"));
        }
        Err(e) => return fail(format!("{}: {e}", proc.display())),
    };
    let executable = std::fs::read_link(proc.join("exe")).unwrap_or_default();
    let same = |what: &str| -> Result<bool> {
        let mine = std::fs::metadata(format!("/proc/self/{what}"));
        let theirs = std::fs::metadata(proc.join(what));
        match (mine, theirs) {
            (Ok(a), Ok(b)) => Ok(a.dev() == b.dev() && a.ino() == b.ino()),
            (_, Err(e)) if e.kind() == io::ErrorKind::PermissionDenied => fail(format!(
                "process {pid}: cannot look at /proc/{pid}/{what} ({e}): it belongs to another user; run tracekit as that user (or as root)"
            )),
            (_, Err(e)) => fail(format!("process {pid}: /proc/{pid}/{what}: {e}")),
            (Err(e), _) => fail(format!("/proc/self/{what}: {e}")),
        }
    };
    if !same("root")? {
        return fail(format!(
            "process {pid} has another root directory (/proc/{pid}/root differs from ours: a container or a chroot): the recorder library and its trace stream in /dev/shm would not be visible to it; run tracekit inside the same container"
        ));
    }
    if !same("ns/mnt")? {
        return fail(format!(
            "process {pid} is in another mount namespace (/proc/{pid}/ns/mnt differs from ours: a container?): the recorder library and its trace stream in /dev/shm would not be visible to it; run tracekit inside the same namespace (nsenter -t {pid} -m)"
        ));
    }
    let maps = std::fs::read_to_string(proc.join("maps"))
        .map_err(|e| AttachError(format!("process {pid}: cannot read /proc/{pid}/maps: {e}")))?;
    if maps.lines().any(|l| l.contains("libtracekit_rtrace_shim")) {
        return fail(format!(
            "process {pid} is being recorded already (the recorder library is loaded: run under `tracekit record mem`, or attached to before)"
        ));
    }
    let Some((libc, libc_base)) = find_libc(&maps) else {
        return fail(format!(
            "process {pid} ({}) has no C library loaded (statically linked?): nothing in it can load the recorder",
            executable.display()
        ));
    };
    Ok(Target {
        pid,
        uid: meta.uid(),
        gid: meta.gid(),
        executable,
        libc,
        libc_base,
    })
}

/// The C library in a maps listing, and the start of its mapping at file
/// offset 0.
fn find_libc(maps: &str) -> Option<(PathBuf, u64)> {
    maps.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let _perms = f.next()?;
        let offset = u64::from_str_radix(f.next()?, 16).ok()?;
        let _dev = f.next()?;
        let _inode = f.next()?;
        let path = f.next()?;
        let name = Path::new(path).file_name()?.to_str()?;
        let is_libc =
            name.starts_with("libc.so.") || (name.starts_with("libc-") && name.ends_with(".so"));
        if !is_libc || offset != 0 {
            return None;
        }
        let start = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
        Some((PathBuf::from(path), start))
    })
}

/// Where `name` is in the process: `base` is where the object's mapping
/// at file offset 0 starts, `file` its bytes.
fn symbol_address(file: &[u8], base: u64, names: &[&str]) -> Result<Option<(u64, usize)>> {
    let obj = object::File::parse(file)
        .map_err(|e| AttachError(format!("cannot read the ELF file: {e}")))?;
    // The load bias: the mapping at offset 0 holds the lowest segment.
    let low = obj
        .segments()
        .map(|s| s.address() & !0xfff)
        .min()
        .unwrap_or(0);
    for (i, want) in names.iter().enumerate() {
        let found = obj
            .dynamic_symbols()
            .find(|s| s.is_definition() && s.name() == Ok(want));
        if let Some(s) = found {
            return Ok(Some((base.wrapping_sub(low).wrapping_add(s.address()), i)));
        }
    }
    Ok(None)
}

/// The path a process sees for a file we name: ours, through its root.
fn in_root(pid: i32, path: &Path) -> PathBuf {
    let rel = path.strip_prefix("/").unwrap_or(path);
    PathBuf::from(format!("/proc/{pid}/root")).join(rel)
}

/// A seized, stopped thread; detached (registers restored) when dropped.
struct Seized {
    pid: i32,
    saved: libc::user_regs_struct,
    mem: File,
    /// Stack bytes we overwrite: where, and what was there.
    stack: Option<(u64, Vec<u8>)>,
}

/// Stack bytes below the saved stack pointer a call may use for its data
/// and return address (the red zone stays untouched).
const FRAME: u64 = 16 << 10;
const RED_ZONE: u64 = 256;

fn errno_text(what: &str, pid: i32, e: io::Error) -> AttachError {
    if e.raw_os_error() == Some(libc::EPERM) {
        let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .map(|s| s.trim().to_string());
        let why = match yama.as_deref() {
            Some("1") => "kernel.yama.ptrace_scope is 1: only a parent may trace its children. Allow it for this session with `sudo sysctl kernel.yama.ptrace_scope=0`, or run tracekit with CAP_SYS_PTRACE (as root, or `sudo setcap cap_sys_ptrace+ep $(command -v tracekit)`)".to_string(),
            Some("2") => "kernel.yama.ptrace_scope is 2: only processes with CAP_SYS_PTRACE may trace; run tracekit as root (or give it CAP_SYS_PTRACE)".to_string(),
            Some("3") => "kernel.yama.ptrace_scope is 3: tracing is disabled until the next reboot".to_string(),
            _ => "the process belongs to another user, or it is not dumpable (setuid), or a seccomp or LSM policy forbids it; tracing needs the same user and CAP_SYS_PTRACE otherwise".to_string(),
        };
        return AttachError(format!("{what} process {pid}: not permitted ({why})"));
    }
    AttachError(format!("{what} process {pid}: {e}"))
}

fn ptrace(req: libc::c_uint, pid: i32, addr: usize, data: usize) -> io::Result<libc::c_long> {
    // SAFETY: a ptrace request whose pointer arguments (if any) the callers
    // pass valid for the request.
    let r = unsafe {
        libc::ptrace(
            req,
            pid,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Waits for a stop of `pid`: `(signal, ptrace event)`; `None` if it
/// exited.
fn wait_stop(pid: i32) -> Result<Option<(i32, i32)>> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(errno_text("waiting for", pid, e));
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            return Ok(None);
        }
        if libc::WIFSTOPPED(status) {
            return Ok(Some((libc::WSTOPSIG(status), (status >> 16) & 0xff)));
        }
    }
}

impl Seized {
    /// Seizes and interrupts the process's main thread.
    fn new(pid: i32) -> Result<Seized> {
        ptrace(libc::PTRACE_SEIZE, pid, 0, 0).map_err(|e| errno_text("cannot trace", pid, e))?;
        let stopped = ptrace(libc::PTRACE_INTERRUPT, pid, 0, 0)
            .map_err(|e| errno_text("cannot stop", pid, e))
            .and_then(|_| loop {
                match wait_stop(pid)? {
                    None => return fail(format!("process {pid} ended")),
                    Some((_, libc::PTRACE_EVENT_STOP)) => return Ok(()),
                    // A signal on its way in: delivered, as it would have been.
                    Some((sig, _)) => {
                        ptrace(libc::PTRACE_CONT, pid, 0, sig as usize)
                            .map_err(|e| errno_text("cannot resume", pid, e))?;
                    }
                }
            });
        if let Err(e) = stopped {
            let _ = ptrace(libc::PTRACE_DETACH, pid, 0, 0);
            return Err(e);
        }
        let regs = match get_regs(pid) {
            Ok(r) => r,
            Err(e) => {
                let _ = ptrace(libc::PTRACE_DETACH, pid, 0, 0);
                return Err(e);
            }
        };
        let mem = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{pid}/mem"))
            .map_err(|e| {
                let _ = ptrace(libc::PTRACE_DETACH, pid, 0, 0);
                errno_text("cannot open the memory of", pid, e)
            })?;
        Ok(Seized {
            pid,
            saved: regs,
            mem,
            stack: None,
        })
    }

    /// Calls `func(args…)` in the thread (on its stack, below the saved
    /// stack pointer, `data` copied there first and its address passed
    /// where an argument is `None`); returns `rax`.
    fn call(&mut self, func: u64, args: &[Option<u64>], data: &[u8]) -> Result<u64> {
        let pid = self.pid;
        // Past the red zone, the data, then the return address 0 with the
        // stack aligned as at a call.
        if data.len() as u64 > FRAME - RED_ZONE - 64 {
            return fail("the recorder's settings are too long");
        }
        let low = self.saved.rsp - FRAME;
        let data_at = (self.saved.rsp - RED_ZONE - data.len() as u64) & !15;
        let sp = ((data_at - 64) & !15) - 8;
        if self.stack.is_none() {
            let mut old = vec![0u8; FRAME as usize];
            self.mem
                .read_exact_at(&mut old, low)
                .map_err(|e| errno_text("cannot read the stack of", pid, e))?;
            self.stack = Some((low, old));
        }
        self.mem
            .write_all_at(data, data_at)
            .and_then(|_| self.mem.write_all_at(&0u64.to_ne_bytes(), sp))
            .map_err(|e| errno_text("cannot write to the stack of", pid, e))?;
        let mut regs = self.saved;
        let mut values = args.iter().map(|a| a.unwrap_or(data_at));
        let mut next = || values.next().unwrap_or(0);
        regs.rdi = next();
        regs.rsi = next();
        regs.rdx = next();
        regs.rip = func;
        regs.rsp = sp;
        regs.rax = 0;
        // Not in a system call (no restart when the call runs).
        regs.orig_rax = u64::MAX;
        set_regs(pid, &regs)?;
        ptrace(libc::PTRACE_CONT, pid, 0, 0).map_err(|e| errno_text("cannot resume", pid, e))?;
        loop {
            match wait_stop(pid)? {
                None => return fail(format!("process {pid} ended during the call")),
                Some((libc::SIGSEGV, 0)) => {
                    let r = get_regs(pid)?;
                    if r.rip == 0 {
                        return Ok(r.rax);
                    }
                    // A real fault inside the call: the process is not ours
                    // to break. Its registers go back; it is left stopped
                    // no longer.
                    return fail(format!(
                        "process {pid}: the call at {func:#x} faulted at {:#x}",
                        r.rip
                    ));
                }
                Some((_, libc::PTRACE_EVENT_STOP)) => {
                    ptrace(libc::PTRACE_CONT, pid, 0, 0)
                        .map_err(|e| errno_text("cannot resume", pid, e))?;
                }
                Some((sig, _)) => {
                    // The program's own signal: delivered (its handler runs
                    // on the stack below ours).
                    ptrace(libc::PTRACE_CONT, pid, 0, sig as usize)
                        .map_err(|e| errno_text("cannot resume", pid, e))?;
                }
            }
        }
    }

    /// Restores the stack bytes and registers and lets the thread go.
    fn release(&mut self) -> Result<()> {
        let pid = self.pid;
        if let Some((at, old)) = self.stack.take() {
            self.mem
                .write_all_at(&old, at)
                .map_err(|e| errno_text("cannot restore the stack of", pid, e))?;
        }
        set_regs(pid, &self.saved)?;
        ptrace(libc::PTRACE_DETACH, pid, 0, 0)
            .map_err(|e| errno_text("cannot detach from", pid, e))?;
        self.pid = 0;
        Ok(())
    }
}

impl Drop for Seized {
    fn drop(&mut self) {
        if self.pid != 0 {
            let _ = self.release();
        }
    }
}

fn get_regs(pid: i32) -> Result<libc::user_regs_struct> {
    // SAFETY: user_regs_struct is plain integers; all-zero is valid.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    ptrace(
        libc::PTRACE_GETREGS,
        pid,
        0,
        &mut regs as *mut libc::user_regs_struct as usize,
    )
    .map_err(|e| errno_text("cannot read the registers of", pid, e))?;
    Ok(regs)
}

fn set_regs(pid: i32, regs: &libc::user_regs_struct) -> Result<()> {
    ptrace(
        libc::PTRACE_SETREGS,
        pid,
        0,
        regs as *const libc::user_regs_struct as usize,
    )
    .map_err(|e| errno_text("cannot set the registers of", pid, e))?;
    Ok(())
}

/// Where the shim at `lib` is mapped in `pid` (start of its offset-0
/// mapping).
fn mapped_at(pid: i32, lib: &Path) -> Result<Option<u64>> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| errno_text("cannot read the maps of", pid, e))?;
    let want = lib.to_string_lossy();
    Ok(maps.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let range = f.next()?;
        let offset = f.nth(1)?;
        let path = f.nth(2)?;
        (path == want && u64::from_str_radix(offset, 16).ok()? == 0)
            .then(|| u64::from_str_radix(range.split('-').next()?, 16).ok())
            .flatten()
    }))
}

/// What [`inject`] did.
#[derive(Debug, Clone, Copy)]
pub struct Attached {
    /// GOT slots the shim rewrote.
    pub slots: u32,
    /// Where the shim's detach function is.
    detach_fn: u64,
}

/// Loads the shim at `lib` into `target` and starts it with `settings`
/// (`NAME=VALUE` lines: what the environment carries when the shim is
/// preloaded).
pub fn inject(target: &Target, lib: &Path, settings: &str) -> Result<Attached> {
    let pid = target.pid;
    let libc_file = std::fs::read(in_root(pid, &target.libc))
        .map_err(|e| AttachError(format!("{}: {e}", target.libc.display())))?;
    let (dlopen, which) = symbol_address(
        &libc_file,
        target.libc_base,
        &["dlopen", "__libc_dlopen_mode"],
    )?
    .ok_or_else(|| {
        AttachError(format!(
            "process {pid}: its C library {} has neither dlopen nor __libc_dlopen_mode",
            target.libc.display()
        ))
    })?;
    let shim = std::fs::read(lib).map_err(|e| AttachError(format!("{}: {e}", lib.display())))?;
    let mut flags = RTLD_NOW | RTLD_NODELETE;
    if which == 1 {
        flags |= RTLD_DLOPEN;
    }
    let mut path = lib.as_os_str().as_encoded_bytes().to_vec();
    path.push(0);
    let mut seized = Seized::new(pid)?;
    let handle = seized.call(dlopen, &[None, Some(flags)], &path)?;
    if handle == 0 {
        drop(seized);
        return fail(format!(
            "process {pid}: dlopen of the recorder library {} failed in it (is the file readable by its user?)",
            lib.display()
        ));
    }
    let base = mapped_at(pid, lib)?.ok_or_else(|| {
        AttachError(format!(
            "process {pid}: the recorder library is not in its maps after dlopen"
        ))
    })?;
    let attach_fn = symbol_address(&shim, base, &[ATTACH_FN])?
        .ok_or_else(|| AttachError(format!("{}: no {ATTACH_FN}", lib.display())))?
        .0;
    let detach_fn = symbol_address(&shim, base, &[DETACH_FN])?
        .ok_or_else(|| AttachError(format!("{}: no {DETACH_FN}", lib.display())))?
        .0;
    let mut text = settings.as_bytes().to_vec();
    text.push(0);
    let r = seized.call(attach_fn, &[None, Some(handle)], &text)? as u32 as i32;
    seized.release()?;
    match r {
        -1 => fail(format!("process {pid}: the recorder library was attached to it already")),
        -2 => fail(format!(
            "process {pid}: the recorder did not start in it (the trace stream could not be opened by its user)"
        )),
        n => Ok(Attached {
            slots: n.max(0) as u32,
            detach_fn,
        }),
    }
}

/// Stops the recording in `pid` (see the module documentation): the GOT
/// slots get their old values, the last events are sent. Returns false if
/// the process has ended meanwhile.
pub fn stop(pid: i32, attached: &Attached) -> Result<bool> {
    let mut seized = match Seized::new(pid) {
        Ok(s) => s,
        Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => return Ok(false),
        Err(e) => return Err(e),
    };
    seized.call(attached.detach_fn, &[], &[])?;
    seized.release()?;
    Ok(true)
}

/// Waits until `pid` ends or `stop` is set; true if it ended.
pub fn wait_for_exit(pid: i32, stop: &AtomicBool) -> Result<bool> {
    // SAFETY: pidfd_open takes a pid and flags; the descriptor is ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    loop {
        if stop.load(Ordering::Relaxed) {
            if fd >= 0 {
                // SAFETY: our descriptor.
                unsafe { libc::close(fd) };
            }
            return Ok(false);
        }
        if fd >= 0 {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, 100) };
            if r > 0 {
                // SAFETY: our descriptor.
                unsafe { libc::close(fd) };
                return Ok(true);
            }
        } else {
            // No pidfd (kernel before 5.3): look now and then.
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: kill with signal 0 only checks.
            let alive = unsafe { libc::kill(pid, 0) } == 0
                || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
            if !alive {
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_c_library_in_maps() {
        let maps = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/prog
7f1e2a000000-7f1e2a028000 r--p 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e2a028000-7f1e2a19d000 r-xp 00028000 08:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e2b000000-7f1e2b001000 r--p 00000000 08:01 789 /usr/lib/x86_64-linux-gnu/libcap.so.2
";
        let (path, base) = find_libc(maps).unwrap();
        assert_eq!(path, Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert_eq!(base, 0x7f1e2a000000);
        assert!(find_libc(
            "7f1e2b000000-7f1e2b001000 r--p 00000000 08:01 789 /usr/lib/libcap.so.2\n"
        )
        .is_none());
        let old = "7f00-7f10 r-xp 00000000 08:01 1 /lib/x86_64-linux-gnu/libc-2.31.so\n";
        assert_eq!(find_libc(old).unwrap().1, 0x7f00);
    }

    #[test]
    fn a_refused_trace_says_why() {
        let e = errno_text(
            "cannot trace",
            42,
            io::Error::from_raw_os_error(libc::EPERM),
        )
        .to_string();
        assert!(
            e.starts_with("cannot trace process 42: not permitted ("),
            "{e}"
        );
        // Which reason depends on this machine's Yama setting; each names
        // what to do.
        assert!(
            e.contains("ptrace_scope") || e.contains("CAP_SYS_PTRACE"),
            "{e}"
        );
        let e = errno_text(
            "cannot trace",
            42,
            io::Error::from_raw_os_error(libc::ESRCH),
        );
        assert!(e.to_string().contains("No such process"), "{e}");
    }

    #[test]
    fn refuses_what_is_not_a_process() {
        assert!(check(0)
            .unwrap_err()
            .to_string()
            .contains("not a process id"));
        let me = std::process::id() as i32;
        assert!(check(me)
            .unwrap_err()
            .to_string()
            .contains("tracekit itself"));
    }
}
