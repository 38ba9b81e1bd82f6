//! Which executions are compiler runs, and what their arguments mean.
//!
//! The rules follow Bear 3.1.1 (`build-tools.md` §5.3), the reference
//! `compile_commands.json` producer: the GCC family, the Clang family,
//! `ccache`/`distcc` launchers and `nvcc`, recognised by file name; every
//! argument classified as a known flag, a source file, or anything else.

/// A recognised compiler family, or a launcher in front of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Gcc,
    Clang,
    Nvcc,
    Ccache,
    Distcc,
}

/// Recognises a program by the file name of its executable.
pub fn recognize(executable: &str) -> Option<Tool> {
    let name = executable.rsplit('/').next().unwrap_or(executable);
    match name {
        "cc" | "c++" | "cxx" | "CC" => return Some(Tool::Gcc),
        "ccache" => return Some(Tool::Ccache),
        "distcc" => return Some(Tool::Distcc),
        "nvcc" => return Some(Tool::Nvcc),
        _ => {}
    }
    if matches_family(name, &["gcc", "g++", "mcc", "m++", "fortran", "gfortran"]) {
        return Some(Tool::Gcc);
    }
    if matches_family(name, &["clang", "clang++"]) {
        return Some(Tool::Clang);
    }
    None
}

/// `([^-]*-)*CORE(-?\d+(\.\d+){0,2})?` for one of `cores`.
fn matches_family(name: &str, cores: &[&str]) -> bool {
    let candidates = [Some(name), strip_version(name)];
    for stem in candidates.into_iter().flatten() {
        for core in cores {
            if let Some(prefix) = stem.strip_suffix(core) {
                if prefix.is_empty() || prefix.ends_with('-') {
                    return true;
                }
            }
        }
    }
    false
}

/// Removes a trailing `-?\d+(\.\d+){0,2}`, or `None` when there is none.
fn strip_version(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    let mut end = bytes.len();
    let mut groups = 0;
    loop {
        let digits_end = end;
        while end > 0 && bytes[end - 1].is_ascii_digit() {
            end -= 1;
        }
        if end == digits_end {
            return None;
        }
        groups += 1;
        if groups < 3 && end > 1 && bytes[end - 1] == b'.' && bytes[end - 2].is_ascii_digit() {
            end -= 1;
            continue;
        }
        break;
    }
    if end > 0 && bytes[end - 1] == b'-' {
        end -= 1;
    }
    Some(&name[..end])
}

/// What a flag means for the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `-c`, `-S`, `-E`: no linking.
    NoLinking,
    /// `-o FILE`.
    Output,
    /// `--help`, `--version`, `--target-help`: a query.
    Info,
    /// `-M -MM -MG -MP -MD -MMD -MF -MT -MQ`: dropped.
    DependencyMake,
    /// Linker flags and `-L`: dropped.
    Linker,
    /// Everything kept as is.
    Kept,
    Source,
}

#[derive(Clone, Copy)]
enum Match {
    Exact,
    /// A glued value is allowed (`-I.`); with `equal`, it must start with `=`.
    Partial {
        equal: bool,
    },
    Both {
        equal: bool,
    },
}

struct FlagDef {
    name: &'static str,
    /// Separate values consumed when the flag is given exactly.
    count: usize,
    how: Match,
    kind: FlagKind,
}

const fn f(name: &'static str, count: usize, how: Match, kind: FlagKind) -> FlagDef {
    FlagDef {
        name,
        count,
        how,
        kind,
    }
}

use FlagKind::*;
const EX: Match = Match::Exact;
const PA: Match = Match::Partial { equal: false };
const PAE: Match = Match::Partial { equal: true };
const BO: Match = Match::Both { equal: false };
const BOE: Match = Match::Both { equal: true };

/// GCC's flags as Bear 3.1.1 knows them, sorted by name (byte order):
/// the prefix scan takes the first glueable flag in this order.
static FLAGS: &[FlagDef] = &[
    f("-###", 0, EX, Kept),
    f("--", 0, PA, Kept),
    f("--help", 0, BOE, Info),
    f("--sysroot", 1, BOE, Kept),
    f("--target-help", 0, EX, Info),
    f("--version", 0, EX, Info),
    f("-A", 1, BO, Kept),
    f("-B", 1, BO, Kept),
    f("-C", 0, EX, Kept),
    f("-CC", 0, EX, Kept),
    f("-D", 1, BO, Kept),
    f("-E", 0, EX, NoLinking),
    f("-H", 0, EX, Kept),
    f("-I", 1, BO, Kept),
    f("-L", 1, BO, Linker),
    f("-M", 0, EX, DependencyMake),
    f("-MD", 0, EX, DependencyMake),
    f("-MF", 1, EX, DependencyMake),
    f("-MG", 0, EX, DependencyMake),
    f("-MM", 0, EX, DependencyMake),
    f("-MMD", 0, EX, DependencyMake),
    f("-MP", 0, EX, DependencyMake),
    f("-MQ", 1, EX, DependencyMake),
    f("-MT", 1, EX, DependencyMake),
    f("-O", 0, BO, Kept),
    f("-P", 0, EX, Kept),
    f("-Q", 0, PA, Kept),
    f("-S", 0, EX, NoLinking),
    f("-T", 1, EX, Linker),
    f("-U", 1, BO, Kept),
    f("-W", 0, PA, Kept),
    f("-Wa,", 0, PA, Kept),
    f("-Wl,", 0, PA, Linker),
    f("-Wp,", 0, PA, Kept),
    f("-X", 0, PA, Kept),
    f("-Xassembler", 1, EX, Kept),
    f("-Xlinker", 1, EX, Linker),
    f("-Xpreprocessor", 1, EX, Kept),
    f("-Y", 0, PA, Kept),
    f("-ansi", 0, EX, Kept),
    f("-aux-info", 1, EX, Kept),
    f("-c", 0, EX, NoLinking),
    f("-d", 0, PA, Kept),
    f("-dumpbase", 1, EX, Kept),
    f("-dumpbase-ext", 1, EX, Kept),
    f("-dumpdir", 1, EX, Kept),
    f("-e", 1, EX, Linker),
    f("-entry", 0, PAE, Linker),
    f("-f", 0, PA, Kept),
    f("-ffile-prefix-map", 0, PAE, Kept),
    f("-flinker-output", 0, PAE, Linker),
    f("-fplugin", 0, PAE, Kept),
    f("-fuse-ld", 0, PAE, Linker),
    f("-g", 0, BO, Kept),
    f("-idirafter", 1, EX, Kept),
    f("-imacros", 1, EX, Kept),
    f("-imultilib", 1, EX, Kept),
    f("-include", 1, EX, Kept),
    f("-iplugindir", 0, PAE, Kept),
    f("-iprefix", 1, EX, Kept),
    f("-iquote", 1, EX, Kept),
    f("-isysroot", 1, EX, Kept),
    f("-isystem", 1, EX, Kept),
    f("-iwithprefix", 1, EX, Kept),
    f("-iwithprefixbefore", 1, EX, Kept),
    f("-l", 1, BO, Linker),
    f("-m", 0, PA, Kept),
    f("-no", 0, PA, Kept),
    f("-no-pie", 0, EX, Linker),
    f("-nodefaultlibs", 0, EX, Linker),
    f("-nolibc", 0, EX, Linker),
    f("-nostartfiles", 0, EX, Linker),
    f("-nostdlib", 0, EX, Linker),
    f("-o", 1, EX, Output),
    f("-p", 0, PA, Kept),
    f("-pass-exit-codes", 0, EX, Kept),
    f("-pie", 0, EX, Linker),
    f("-pipe", 0, EX, Kept),
    f("-pthread", 0, EX, Kept),
    f("-r", 0, EX, Linker),
    f("-rdynamic", 0, EX, Linker),
    f("-remap", 0, EX, Kept),
    f("-s", 0, EX, Linker),
    f("-save", 0, PA, Kept),
    f("-shared", 0, BO, Linker),
    f("-specs", 0, PAE, Kept),
    f("-static", 0, BO, Linker),
    f("-static-pie", 0, EX, Linker),
    f("-std", 0, PAE, Kept),
    f("-symbolic", 0, EX, Linker),
    f("-tno", 0, PA, Kept),
    f("-traditional", 0, BO, Kept),
    f("-trigraphs", 0, EX, Kept),
    f("-u", 1, EX, Linker),
    f("-undef", 0, EX, Kept),
    f("-v", 0, EX, Kept),
    f("-wrapper", 1, EX, Kept),
    f("-x", 1, EX, Kept),
    f("-z", 1, EX, Linker),
];

/// Source extensions Bear 3.1.1 accepts (from the last `.`).
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "C", "cc", "CC", "c++", "C++", "cxx", "cpp", "cp", "cu", "m", "mi", "mm", "M", "mii", "i",
    "ii", "s", "S", "sx", "asm", "f", "for", "ftn", "F", "FOR", "fpp", "FPP", "FTN", "f90", "f95",
    "f03", "f08", "F90", "F95", "F03", "F08", "go", "brig", "d", "di", "dd", "ads", "abd", "h",
    "hh", "H", "hp", "hxx", "hpp", "HPP", "h++", "tcc",
];

pub fn is_source(token: &str) -> bool {
    match token.rfind('.') {
        Some(i) => SOURCE_EXTENSIONS.contains(&&token[i + 1..]),
        None => false,
    }
}

/// One classified argument: the tokens it covers and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    pub kind: FlagKind,
    /// The flag's name when it was recognised (`-o`, `-MF`, ...).
    pub name: &'static str,
    pub tokens: Vec<String>,
}

/// Classifies `args` (without `argv[0]`) as GCC would take them.
pub fn classify(args: &[String]) -> Vec<Flag> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let tok = &args[i];
        if let Some(def) = lookup(tok) {
            let exact = tok == def.name;
            let n = if exact { def.count } else { 0 };
            let end = (i + 1 + n).min(args.len());
            out.push(Flag {
                kind: def.kind,
                name: def.name,
                tokens: args[i..end].to_vec(),
            });
            i = end;
            continue;
        }
        let kind = if is_source(tok) { Source } else { Kept };
        out.push(Flag {
            kind,
            name: "",
            tokens: vec![tok.clone()],
        });
        i += 1;
    }
    out
}

fn lookup(tok: &str) -> Option<&'static FlagDef> {
    if !tok.starts_with('-') {
        // `@file` is kept as an ordinary argument: same outcome.
        return None;
    }
    if let Ok(i) = FLAGS.binary_search_by(|d| d.name.cmp(tok)) {
        return Some(&FLAGS[i]);
    }
    FLAGS.iter().find(|d| {
        let Some(rest) = tok.strip_prefix(d.name) else {
            return false;
        };
        match d.how {
            Match::Exact => false,
            Match::Partial { equal } | Match::Both { equal } => !equal || rest.starts_with('='),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for n in [
            "gcc",
            "/usr/bin/gcc",
            "g++",
            "cc",
            "c++",
            "x86_64-linux-gnu-gcc-12",
            "arm-none-eabi-g++",
            "gcc-12",
            "g++11.2",
            "gfortran",
        ] {
            assert_eq!(recognize(n), Some(Tool::Gcc), "{n}");
        }
        for n in ["clang", "clang++-17", "aarch64-linux-gnu-clang"] {
            assert_eq!(recognize(n), Some(Tool::Clang), "{n}");
        }
        for n in [
            "cc1",
            "collect2",
            "as",
            "ld",
            "clang-tidy",
            "ar",
            "arm-none-eabi-objcopy",
            "gcc-ar",
        ] {
            assert_eq!(recognize(n), None, "{n}");
        }
    }

    #[test]
    fn table_is_sorted() {
        for w in FLAGS.windows(2) {
            assert!(w[0].name < w[1].name, "{} {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn prefix_rules() {
        let a: Vec<String> = [
            "-Wl,--as-needed",
            "-static-libgcc",
            "-lm",
            "-MFx.d",
            "-ofoo",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let k: Vec<FlagKind> = classify(&a).iter().map(|f| f.kind).collect();
        assert_eq!(k, vec![Kept, Linker, Linker, Source, Kept]);
    }
}
