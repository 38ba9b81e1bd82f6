//! Symbolisation of real objects compiled here, without a recorder: a
//! trace is written by hand with a map record for the object and return
//! addresses inside its functions (found in its symbol table), the way a
//! recording has them. Rust (legacy mangling, hashes dropped) and C++
//! names without debug information (from `.symtab`, demangled).

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use tracekit_rtrace::report::{self, Symbolise};

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A trace with one allocation whose backtrace is one return address a
/// few bytes into each function of `exe` whose mangled name contains one
/// of `wanted`, innermost first in that order; the object mapped at a
/// made-up base.
fn trace_for(exe: &Path, wanted: &[&str]) -> String {
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let exec_page = file
        .segments()
        .find(|s| {
            matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
        })
        .map(|s| s.address() & !0xfff)
        .unwrap();
    let base = 0x5555_0000_0000u64;
    let mut frames = String::new();
    for w in wanted {
        let sym = file
            .symbols()
            .find(|s| {
                s.kind() == SymbolKind::Text
                    && s.size() > 4
                    && s.name().is_ok_and(|n| n.contains(w))
            })
            .unwrap_or_else(|| panic!("no symbol with {w} in {}", exe.display()));
        frames += &format!("\t0x{:x}\n", base + sym.address() + 4);
    }
    format!(
        "version=2.0, arch=x86_64, pid=1, \n<1> : memory (memory allocation in bytes)\n\
         : {} => 0x{:x}-0x{:x}\n1. malloc(10) = 0x1000\n{frames}\n",
        exe.display(),
        base + exec_page,
        base + exec_page + 0x100_0000
    )
}

fn names(trace: &str) -> Vec<String> {
    let sym = Symbolise {
        resolve: true,
        root: None,
        debug_dirs: Vec::new(),
    };
    let rep = report::analyse_with(trace.as_bytes(), 10, &sym).unwrap();
    rep.traces[0].frames.iter().map(|f| f.1.clone()).collect()
}

fn compile(dir: &Path, file: &str, src: &str, cmd: &str, args: &[&str]) -> PathBuf {
    let source = dir.join(file);
    std::fs::write(&source, src).unwrap();
    let exe = dir.join(file.split('.').next().unwrap());
    run(Command::new(cmd)
        .args(args)
        .arg("-o")
        .arg(&exe)
        .arg(&source));
    exe
}

#[test]
fn rust_names_lose_their_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let src = "#[inline(never)] fn make_buffers(n: usize) -> Vec<Vec<u8>> { (0..n).map(|i| vec![1u8; i]).collect() }\n\
         fn main() { std::mem::forget(make_buffers(std::env::args().count())); }\n";
    // From DWARF (linkage names), and from the symbol table alone.
    for (file, flags) in [("rusty_g.rs", "-g"), ("rusty.rs", "-Cdebuginfo=0")] {
        let exe = compile(tmp.path(), file, src, &rustc, &[flags]);
        let stem = file.trim_end_matches(".rs");
        let n = names(&trace_for(&exe, &["12make_buffers17h", "4main17h"]));
        assert_eq!(
            n,
            [format!("{stem}::make_buffers"), format!("{stem}::main")],
            "{n:?}"
        );
    }
}

#[test]
fn cxx_names_from_the_symbol_table() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(
        tmp.path(),
        "cxx.cc",
        "#include <cstdlib>\nnamespace ns { template <typename T> struct Pool {\n\
         __attribute__((noinline)) T *grow(std::size_t n) { return static_cast<T *>(std::malloc(n * sizeof(T))); } }; }\n\
         int main(int argc, char **) { ns::Pool<long> p; return p.grow(argc) != nullptr; }\n",
        "c++",
        &["-O1"],
    );
    let n = names(&trace_for(&exe, &["4PoolIlE4grow", "main"]));
    assert_eq!(n, ["ns::Pool<long>::grow(unsigned long)", "main"], "{n:?}");
}
