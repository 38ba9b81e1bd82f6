//! The exec family, `posix_spawn` and `_exit`, wrapped for tracing (see
//! `tracekit_posix::exec`): a controller's logs are complete when it execs
//! or calls `_exit`; inherited streams follow a traced process into the
//! new image and into spawned children.
//!
//! A program linked with this library calls these instead of libc's
//! (the library comes before libc in the link order, as `-ltracekit_posix_c`
//! does). Each wrapper does what tracing needs, then the real call:
//! `execve` and `execveat` as system calls, `execvpe` and `posix_spawn(p)`
//! through `dlsym(RTLD_NEXT)` (glibc's own, which search `PATH` and call its
//! internal `execve`). The variadic `execl`, `execle` and `execlp` are
//! two-step trampolines (x86-64, aarch64) that hand their argument list to
//! [`tracekit_posix_execl_list`]. Deviation: glibc's `system` and `popen`
//! spawn through glibc-internal calls, which no library can wrap; a child
//! they start is not traced into inherited streams.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering::*};

use tracekit_posix::exec::{exit_now, Exec};

extern "C" {
    static environ: *const *const c_char;
}

fn errno() -> c_int {
    // SAFETY: errno of this thread.
    unsafe { *libc::__errno_location() }
}

fn set_errno(e: c_int) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = e };
}

/// libc's definition of `name` (NUL-terminated), resolved once.
fn real(cache: &AtomicUsize, name: &[u8]) -> usize {
    let f = cache.load(Acquire);
    if f != 0 {
        return f;
    }
    // SAFETY: dlsym with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    cache.store(f, Release);
    f
}

/// Runs an exec: `call` gets the environment to use and returns only if
/// the exec failed (-1, errno set); then the streams go on.
unsafe fn exec_with(
    envp: *const *const c_char,
    call: impl FnOnce(*const *const c_char) -> c_int,
) -> c_int {
    // SAFETY: the caller's envp is a null-terminated array (exec's contract).
    let x = unsafe { Exec::prepare(envp) };
    let r = call(x.envp(envp));
    let e = errno();
    x.done();
    set_errno(e);
    r
}

fn sys_execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: the execve system call with the caller's arguments; it
    // returns only on failure.
    unsafe { libc::syscall(libc::SYS_execve, path, argv, envp) as c_int }
}

#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: forwarding exec's arguments.
    unsafe { exec_with(envp, |env| sys_execve(path, argv, env)) }
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as above, with this process's environment.
    unsafe { execve(path, argv, environ) }
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    type F =
        unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
    let f = real(&REAL, b"execvpe\0");
    if f == 0 {
        set_errno(libc::ENOSYS);
        return -1;
    }
    // SAFETY: f is libc's execvpe.
    unsafe {
        exec_with(envp, |env| {
            std::mem::transmute::<usize, F>(f)(file, argv, env)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: as above, with this process's environment.
    unsafe { execvpe(file, argv, environ) }
}

#[no_mangle]
pub unsafe extern "C" fn fexecve(
    fd: c_int,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: execveat on the caller's descriptor (what glibc does), then
    // its /proc fallback for kernels without execveat.
    unsafe {
        exec_with(envp, |env| {
            let r = libc::syscall(
                libc::SYS_execveat,
                fd,
                c"".as_ptr(),
                argv,
                env,
                libc::AT_EMPTY_PATH,
            ) as c_int;
            if errno() != libc::ENOSYS {
                return r;
            }
            let path = format!("/proc/self/fd/{fd}\0");
            sys_execve(path.as_ptr().cast(), argv, env)
        })
    }
}

/// The argument list of `execl`, `execle` or `execlp` as the trampolines
/// below pass it: `regs` the arguments that came in registers after the
/// first, `stack` those the caller put on the stack. `kind`: 0 execl,
/// 1 execle (the environment follows the terminating null), 2 execlp.
#[no_mangle]
pub unsafe extern "C" fn tracekit_posix_execl_list(
    kind: c_int,
    path: *const c_char,
    regs: *const *const c_char,
    stack: *const *const c_char,
) -> c_int {
    let nregs = if cfg!(target_arch = "aarch64") { 7 } else { 5 };
    // SAFETY: the trampolines pass the spilled argument registers and the
    // caller's stack arguments, in order; the caller's list ends with a
    // null pointer (execl's contract), followed by envp for execle.
    let arg = |i: usize| unsafe {
        if i < nregs {
            *regs.add(i)
        } else {
            *stack.add(i - nregs)
        }
    };
    let mut argv: Vec<*const c_char> = Vec::with_capacity(16);
    let mut i = 0;
    loop {
        let a = arg(i);
        argv.push(a);
        i += 1;
        if a.is_null() {
            break;
        }
    }
    // SAFETY: forwarding to the wrappers above.
    unsafe {
        match kind {
            1 => execve(path, argv.as_ptr(), arg(i) as *const *const c_char),
            2 => execvp(path, argv.as_ptr()),
            _ => execv(path, argv.as_ptr()),
        }
    }
}

macro_rules! execl_trampoline {
    ($name:ident, $kind:literal) => {
        /// Variadic: see [`tracekit_posix_execl_list`].
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(_path: *const c_char, _arg0: *const c_char) -> c_int {
            // Spill the five argument registers after `path` below the
            // return address (rsp is 16-byte aligned after five pushes),
            // point at them and at the stack arguments, call the list
            // helper.
            core::arch::naked_asm!(
                "push r9",
                "push r8",
                "push rcx",
                "push rdx",
                "push rsi",
                "mov rsi, rdi",
                "mov edi, {kind}",
                "mov rdx, rsp",
                "lea rcx, [rsp + 48]",
                "call {f}",
                "add rsp, 40",
                "ret",
                kind = const $kind,
                f = sym tracekit_posix_execl_list,
            )
        }

        /// Variadic: see [`tracekit_posix_execl_list`].
        #[cfg(target_arch = "aarch64")]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(_path: *const c_char, _arg0: *const c_char) -> c_int {
            // Spill x1..x7 (and the link register) to the stack, point at
            // them and at the caller's stack arguments, call the helper.
            core::arch::naked_asm!(
                "sub sp, sp, #64",
                "stp x1, x2, [sp, #0]",
                "stp x3, x4, [sp, #16]",
                "stp x5, x6, [sp, #32]",
                "stp x7, x30, [sp, #48]",
                "mov x1, x0",
                "mov x0, #{kind}",
                "mov x2, sp",
                "add x3, sp, #64",
                "bl {f}",
                "ldr x30, [sp, #56]",
                "add sp, sp, #64",
                "ret",
                kind = const $kind,
                f = sym tracekit_posix_execl_list,
            )
        }
    };
}
execl_trampoline!(execl, 0);
execl_trampoline!(execle, 1);
execl_trampoline!(execlp, 2);

type SpawnFn = unsafe extern "C" fn(
    *mut libc::pid_t,
    *const c_char,
    *const c_void,
    *const c_void,
    *const *const c_char,
    *const *const c_char,
) -> c_int;

unsafe fn spawn_with(
    cache: &AtomicUsize,
    name: &[u8],
    args: (
        *mut libc::pid_t,
        *const c_char,
        *const c_void,
        *const c_void,
    ),
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let f = real(cache, name);
    if f == 0 {
        return libc::ENOSYS;
    }
    // SAFETY: the caller's envp is a null-terminated array.
    let x = unsafe { Exec::prepare_spawn(envp) };
    // SAFETY: f is libc's posix_spawn or posix_spawnp.
    let r = unsafe {
        std::mem::transmute::<usize, SpawnFn>(f)(args.0, args.1, args.2, args.3, argv, x.envp(envp))
    };
    x.done();
    r
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawn(
    pid: *mut libc::pid_t,
    path: *const c_char,
    file_actions: *const c_void,
    attrp: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: forwarding posix_spawn's arguments.
    unsafe {
        spawn_with(
            &REAL,
            b"posix_spawn\0",
            (pid, path, file_actions, attrp),
            argv,
            envp,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_spawnp(
    pid: *mut libc::pid_t,
    file: *const c_char,
    file_actions: *const c_void,
    attrp: *const c_void,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: forwarding posix_spawnp's arguments.
    unsafe {
        spawn_with(
            &REAL,
            b"posix_spawnp\0",
            (pid, file, file_actions, attrp),
            argv,
            envp,
        )
    }
}

/// `_exit`: a controller's streams are shut down first (the standard's
/// `_exit` requirement), then the process ends as libc's `_exit` ends it.
#[no_mangle]
pub extern "C" fn _exit(status: c_int) -> ! {
    exit_now();
    // SAFETY: exit_group ends the process; it does not return.
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
    unreachable_exit()
}

/// `_Exit`: as `_exit`.
#[no_mangle]
pub extern "C" fn _Exit(status: c_int) -> ! {
    _exit(status)
}

fn unreachable_exit() -> ! {
    loop {
        // SAFETY: exit_group does not return; this loop only satisfies the
        // type.
        unsafe { libc::syscall(libc::SYS_exit_group, 127) };
    }
}
