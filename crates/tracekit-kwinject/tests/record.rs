//! Recording real builds with `--method ptrace`: a small C project built
//! from scratch with `make -j2`, checked through the trace and the
//! compilation database derived from it. Needs gcc and make.

use std::ffi::OsString;
use std::path::Path;

use tracekit_kwinject::cdb::{CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::record::{preload, ptrace, Assembler, Method};
use tracekit_kwinject::trace::{Exit, Trace};

/// Writes a project of three sources in two directories.
pub fn small_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(
        dir.join("lib/util.c"),
        "int util(int x) { return x * 2; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("lib/more.c"), "int more(void) { return 3; }\n").unwrap();
    std::fs::write(
        dir.join("main.c"),
        "int util(int); int more(void);\nint main(void) { return util(more()) - 6; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("Makefile"),
        "CFLAGS = -O1 -DTK=1\n\
         prog: main.o lib/libutil.a\n\t$(CC) -o prog main.o lib/libutil.a\n\
         main.o: main.c\n\t$(CC) $(CFLAGS) -MD -MP -MF main.d -c -o main.o main.c\n\
         lib/libutil.a: lib/util.c lib/more.c\n\tcd lib && $(CC) $(CFLAGS) -Iinc -c util.c more.c && ar rc libutil.a util.o more.o\n",
    )
    .unwrap();
}

/// The recorder waits for any child of the process: one recording at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sh(cmd: &str) -> Vec<OsString> {
    ["sh", "-c", cmd].iter().map(OsString::from).collect()
}

/// Records `cmd` with either method into a fresh assembler.
fn record(method: Method, cmd: &[OsString], tmp: &Path) -> (Option<Exit>, Assembler) {
    match method {
        Method::Ptrace => {
            let mut asm = Assembler::new(Default::default(), None);
            let exit = ptrace::record(cmd, &mut asm).unwrap();
            (exit, asm)
        }
        Method::Preload => {
            let lib = tracekit_preload::install(Some(tmp.to_path_buf())).unwrap();
            let mut asm = Assembler::new(Default::default(), Some(lib.display().to_string()));
            let mut w = tracekit_core::Warnings::default();
            let exit = preload::record(cmd, &lib, &mut asm, &mut w).unwrap();
            assert!(w.is_empty(), "{w:?}");
            (exit, asm)
        }
    }
}

#[test]
fn ptrace_records_a_make_build() {
    records_a_make_build(Method::Ptrace);
}

#[test]
fn preload_records_a_make_build() {
    records_a_make_build(Method::Preload);
}

fn records_a_make_build(method: Method) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("proj");
    small_project(&dir);
    let cmd = sh(&format!(
        "cd {} && make -j2 -s CC=gcc && ./prog",
        dir.display()
    ));
    let (exit, asm) = record(method, &cmd, tmp.path());
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // Every record has its start; the recorder's variables are not in it.
    assert!(t.processes.iter().all(|p| p.start_us.is_some()));
    assert!(t
        .processes
        .iter()
        .all(|p| !p.env_diff.contains_key("LD_PRELOAD")
            && !p.env_diff.contains_key("TRACEKIT_PRELOAD_OUT")));
    // The processes make waited for have their exit status.
    assert!(t
        .processes
        .iter()
        .filter(|p| p.program_name() == "cc1")
        .all(|p| p.exit == Some(Exit::Code(0))));
    let names: Vec<&str> = t.processes.iter().map(|p| p.program_name()).collect();
    for want in ["sh", "make", "cc1", "as", "ar", "collect2", "ld", "prog"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert_eq!(t.processes[0].parent_id, Some(-1));
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let mut b = CdbBuilder::new(CdbOptions::default());
    for p in &t.processes {
        let env = folder.fold(p, &mut w);
        if p.program_name() == "cc1" {
            // make's variables reach the compiler through the parent chain.
            assert_eq!(env.get("MAKELEVEL").map(String::as_str), Some("1"));
        }
        b.add(p, &env);
    }
    b.finish();
    let d = dir.display().to_string();
    let mut got: Vec<(String, String, Vec<String>)> = b
        .entries
        .iter()
        .map(|e| (e.directory.clone(), e.file.clone(), e.arguments.clone()))
        .collect();
    got.sort();
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let gcc = "/usr/bin/gcc";
    assert_eq!(
        got,
        vec![
            (
                d.clone(),
                format!("{d}/main.c"),
                args(&[gcc, "-O1", "-DTK=1", "-c", "-o", "main.o", "main.c"])
            ),
            (
                format!("{d}/lib"),
                format!("{d}/lib/more.c"),
                args(&[gcc, "-O1", "-DTK=1", "-Iinc", "-c", "more.c"])
            ),
            (
                format!("{d}/lib"),
                format!("{d}/lib/util.c"),
                args(&[gcc, "-O1", "-DTK=1", "-Iinc", "-c", "util.c"])
            ),
        ]
    );
}

#[test]
fn ptrace_keeps_exit_status_and_signals() {
    keeps_exit_status_and_signals(Method::Ptrace);
}

#[test]
fn preload_keeps_exit_status_and_signals() {
    keeps_exit_status_and_signals(Method::Preload);
}

fn keeps_exit_status_and_signals(method: Method) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (exit, asm) = record(method, &sh("echo out; exit 3"), tmp.path());
    assert_eq!(exit, Some(Exit::Code(3)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    assert_eq!(t.processes.len(), 1);
    assert_eq!(t.processes[0].exit, Some(Exit::Code(3)));
    // A build killed by a signal is reported as such.
    let (exit, _) = record(method, &sh("kill -TERM $$"), tmp.path());
    assert_eq!(exit, Some(Exit::Signal(libc::SIGTERM)));
    // A build that stops itself (group stop) and is continued goes on.
    let mut asm = Assembler::new(Default::default(), None);
    let exit = ptrace::record(
        &sh("(sleep 0.2; kill -CONT $$) & kill -STOP $$; exit 5"),
        &mut asm,
    )
    .unwrap();
    assert_eq!(exit, Some(Exit::Code(5)));
}

/// `env -i` and `env -u LD_PRELOAD` do not take the build out of the
/// recording (the shim puts its variables back), and the trace shows the
/// environment the build made.
#[test]
fn preload_survives_env_clearing() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (exit, asm) = record(
        Method::Preload,
        &sh("env -u LD_PRELOAD /bin/true && env -i X=1 /bin/sh -c /bin/true"),
        tmp.path(),
    );
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    let names: Vec<&str> = t.processes.iter().map(|p| p.program_name()).collect();
    assert_eq!(names, ["sh", "env", "true", "env", "sh", "true"]);
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let envs: Vec<_> = t.processes.iter().map(|p| folder.fold(p, &mut w)).collect();
    let last: Vec<&String> = envs[5].keys().collect();
    assert!(
        last.iter()
            .all(|k| *k == "X" || *k == "PWD" || *k == "SHLVL" || *k == "_"),
        "{last:?}"
    );
    assert_eq!(envs[5].get("X").map(String::as_str), Some("1"));
}

/// Records far larger than one stream event (a 100 KB argument, several
/// hundred fragments) arrive whole, byte for byte.
#[test]
fn preload_reassembles_large_records() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let big: String = (0..100_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let (exit, asm) = record(
        Method::Preload,
        &["/bin/echo".into(), OsString::from(&big)],
        tmp.path(),
    );
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    assert_eq!(t.processes.len(), 1);
    assert_eq!(t.processes[0].args, ["/bin/echo", big.as_str()]);
}

/// A subshell that never execs (its fork reported by its parent) still
/// links the programs it starts to the shell above it.
#[test]
fn preload_links_children_of_subshells() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (exit, asm) = record(
        Method::Preload,
        &sh("( /bin/true; /bin/echo x >/dev/null; (/bin/true; /bin/true) ); /bin/true"),
        tmp.path(),
    );
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    let names: Vec<&str> = t.processes.iter().map(|p| p.program_name()).collect();
    assert_eq!(names, ["sh", "true", "echo", "true", "true", "true"]);
    let root = t.processes[0].id;
    for p in &t.processes[1..] {
        assert_eq!(p.parent_id, Some(root), "{names:?}: {p:?}");
    }
}

/// An exec the calling program reports before the call is cancelled when
/// the call fails: a command that does not exist leaves no process behind
/// (bash tries it in a fork child, which then exits 127).
#[test]
fn preload_drops_execs_that_failed() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-program");
    let cmd = format!("{} 2>/dev/null; /bin/true", missing.display());
    let (exit, asm) = record(
        Method::Preload,
        &["bash".into(), "-c".into(), cmd.into()],
        tmp.path(),
    );
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    let names: Vec<&str> = t.processes.iter().map(|p| p.program_name()).collect();
    assert_eq!(names, ["bash", "true"]);
}

/// glibc's `execvp` runs a script without `#!` through `/bin/sh` when the
/// kernel refuses it: the exec that happened is `/bin/sh SCRIPT`, which
/// replaces what the caller reported (`SCRIPT`), as strace shows it.
#[test]
fn preload_records_the_shell_glibc_runs_a_plain_script_with() {
    use std::os::unix::fs::PermissionsExt;
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("plain-script");
    std::fs::write(&script, "/bin/true\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // coreutils' env starts its command with execvp.
    let (exit, asm) = record(
        Method::Preload,
        &["/usr/bin/env".into(), script.clone().into()],
        tmp.path(),
    );
    assert_eq!(exit, Some(Exit::Code(0)));
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    let execs: Vec<(&str, &[String])> = t
        .processes
        .iter()
        .map(|p| (p.executable.as_str(), &p.args[..]))
        .collect();
    let script = script.display().to_string();
    assert_eq!(execs.len(), 3, "{execs:?}");
    assert_eq!(execs[0].0, "/usr/bin/env");
    assert_eq!(execs[1].1, ["/bin/sh", script.as_str()], "{execs:?}");
    assert_eq!(execs[2].0, "/bin/true");
}

/// The mark a caller puts on `TRACEKIT_PRELOAD_OUT` for the program it
/// starts is gone before that program runs: programs see the plain stream
/// path, and it is the same for parent and child.
#[test]
fn preload_mark_is_invisible_to_programs() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("seen");
    let cmd = format!(
        "printenv TRACEKIT_PRELOAD_OUT > {0}; sh -c 'printenv TRACEKIT_PRELOAD_OUT' >> {0}",
        out.display()
    );
    let (exit, asm) = record(Method::Preload, &sh(&cmd), tmp.path());
    assert_eq!(exit, Some(Exit::Code(0)));
    assert!(asm.len() >= 3);
    let seen = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines.len(), 2, "{seen}");
    assert!(lines[0].starts_with('/'), "{seen}");
    assert_eq!(lines[0], lines[1]);
}
