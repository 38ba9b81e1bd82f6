//! Which executions are compiler runs, and what their arguments mean.
//!
//! The rules follow Bear 3.1.1 (`build-tools.md` §5.3), the reference
//! `compile_commands.json` producer: the GCC family, the Clang family,
//! `ccache`/`distcc` launchers and `nvcc`, recognised by file name; every
//! argument classified as a known flag, a source file, or anything else,
//! with Bear's flag tables (GCC's, and GCC's plus Clang's for the Clang
//! family) and its matching rules ([`Arity`]).

/// A recognised compiler family, or a launcher in front of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Gcc,
    Clang,
    Nvcc,
    Ccache,
    Distcc,
    /// `icecc`, `sccache`: launchers Bear 3.1.1 does not know (Bear 4
    /// does); unwrapped like `ccache` except in `--bear3` mode.
    Launcher,
}

/// Recognises a program by the file name of its executable.
pub fn recognize(executable: &str) -> Option<Tool> {
    let name = executable.rsplit('/').next().unwrap_or(executable);
    match name {
        "cc" | "c++" | "cxx" | "CC" => return Some(Tool::Gcc),
        "ccache" => return Some(Tool::Ccache),
        "distcc" => return Some(Tool::Distcc),
        "icecc" | "sccache" => return Some(Tool::Launcher),
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
    /// `-c`, `-S`, `-E` (and Clang's `-cc1`, `-emit-ast`): no linking.
    NoLinking,
    /// `-o FILE`.
    Output,
    /// `--help…`, `--version`, `--target-help`: a query.
    Info,
    /// `-M -MM -MG -MP -MD -MMD -MF -MT -MQ`: dropped.
    DependencyMake,
    /// Linker flags and `-L`: dropped.
    Linker,
    /// Everything kept as is.
    Kept,
    Source,
}

/// How a flag takes its value: Bear 3.1.1's `MatchInstruction`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// The flag alone (`-c`).
    Exactly,
    /// One value in the next argument (`-o FILE`).
    Separate1,
    /// One value after `=` (`-std=c99`); the bare flag is not this flag.
    GluedEq,
    /// `--sysroot=DIR` or `--sysroot DIR`.
    GluedEqOrSeparate,
    /// One value glued on (`-current_versionX`); the bare flag is not this flag.
    Glued,
    /// `-Idir` or `-I dir`.
    GluedOrSeparate,
    /// Glued, with or without `=`, or separate.
    GluedAnyOrSeparate,
    /// The flag and two values (`-segaddr NAME ADDR`).
    Separate2,
    /// The flag and three values.
    Separate3,
    /// The flag with anything glued on (`-Wall`, `-O2`).
    Prefix,
    /// Anything glued on, then 1, 2 or 3 values.
    Prefix1,
    Prefix2,
    Prefix3,
}

impl Arity {
    fn is_prefix(self) -> bool {
        matches!(
            self,
            Arity::Prefix | Arity::Prefix1 | Arity::Prefix2 | Arity::Prefix3
        )
    }

    /// Arguments the flag covers, itself included.
    fn count(self) -> usize {
        match self {
            Arity::Exactly | Arity::Prefix => 1,
            Arity::Separate1
            | Arity::GluedEq
            | Arity::GluedEqOrSeparate
            | Arity::Glued
            | Arity::GluedOrSeparate
            | Arity::GluedAnyOrSeparate
            | Arity::Prefix1 => 2,
            Arity::Separate2 | Arity::Prefix2 => 3,
            Arity::Separate3 | Arity::Prefix3 => 4,
        }
    }

    /// Arguments covered when the token is the flag's name exactly.
    fn exact(self) -> Option<usize> {
        match self {
            Arity::GluedEq | Arity::Glued => None,
            _ => Some(self.count()),
        }
    }

    /// Arguments covered when a value is glued on (`rest` non-empty).
    fn glued(self, rest: &str) -> Option<usize> {
        if rest.starts_with('=') {
            match self {
                Arity::GluedEq | Arity::GluedEqOrSeparate | Arity::GluedAnyOrSeparate => {
                    Some(self.count() - 1)
                }
                _ => None,
            }
        } else {
            match self {
                Arity::Glued | Arity::GluedOrSeparate | Arity::GluedAnyOrSeparate => {
                    Some(self.count() - 1)
                }
                a if a.is_prefix() => Some(self.count()),
                _ => None,
            }
        }
    }
}

/// One flag of a table.
#[derive(Debug)]
pub struct FlagDef {
    pub name: &'static str,
    pub arity: Arity,
    pub kind: FlagKind,
}

const fn f(name: &'static str, arity: Arity, kind: FlagKind) -> FlagDef {
    FlagDef { name, arity, kind }
}

use Arity::*;
use FlagKind::*;

/// GCC's flags as Bear 3.1.1 knows them (`ToolGcc.cc`), sorted by name in
/// byte order: a glued value goes to the shortest flag name it extends
/// whose arity allows gluing, so `-Wl,…` is `-W` (kept) and `-fuse-ld=…`
/// is `-f` (kept).
static GCC_FLAGS: &[FlagDef] = &[
    f("-###", Exactly, Kept),
    f("--", Prefix, Kept),
    f("--help", Prefix, Info),
    f("--sysroot", GluedEq, Kept),
    f("--target-help", Exactly, Info),
    f("--version", Exactly, Info),
    f("-A", GluedOrSeparate, Kept),
    f("-B", GluedOrSeparate, Kept),
    f("-C", Exactly, Kept),
    f("-CC", Exactly, Kept),
    f("-D", GluedOrSeparate, Kept),
    f("-E", Exactly, NoLinking),
    f("-H", Exactly, Kept),
    f("-I", GluedOrSeparate, Kept),
    f("-L", GluedOrSeparate, Linker),
    f("-M", Exactly, DependencyMake),
    f("-MD", Exactly, DependencyMake),
    f("-MF", Separate1, DependencyMake),
    f("-MG", Exactly, DependencyMake),
    f("-MM", Exactly, DependencyMake),
    f("-MMD", Exactly, DependencyMake),
    f("-MP", Exactly, DependencyMake),
    f("-MQ", Separate1, DependencyMake),
    f("-MT", Separate1, DependencyMake),
    f("-O", Prefix, Kept),
    f("-P", Exactly, Kept),
    f("-Q", Prefix, Kept),
    f("-S", Exactly, NoLinking),
    f("-T", Separate1, Linker),
    f("-U", GluedOrSeparate, Kept),
    f("-W", Prefix, Kept),
    f("-Wa,", Prefix, Kept),
    f("-Wl,", Prefix, Linker),
    f("-Wp,", Prefix, Kept),
    f("-X", Prefix, Kept),
    f("-Xassembler", Separate1, Kept),
    f("-Xlinker", Separate1, Linker),
    f("-Xpreprocessor", Separate1, Kept),
    f("-Y", Prefix, Kept),
    f("-ansi", Exactly, Kept),
    f("-aux-info", Separate1, Kept),
    f("-c", Exactly, NoLinking),
    f("-d", Prefix, Kept),
    f("-dumpbase", Separate1, Kept),
    f("-dumpbase-ext", Separate1, Kept),
    f("-dumpdir", Separate1, Kept),
    f("-e", Separate1, Linker),
    f("-entry", GluedEq, Linker),
    f("-f", Prefix, Kept),
    f("-ffile-prefix-map", GluedEq, Kept),
    f("-flinker-output", GluedEq, Linker),
    f("-fplugin", GluedEq, Kept),
    f("-fuse-ld", GluedEq, Linker),
    f("-g", Prefix, Kept),
    f("-idirafter", Separate1, Kept),
    f("-imacros", Separate1, Kept),
    f("-imultilib", Separate1, Kept),
    f("-include", Separate1, Kept),
    f("-iplugindir", GluedEq, Kept),
    f("-iprefix", Separate1, Kept),
    f("-iquote", Separate1, Kept),
    f("-isysroot", Separate1, Kept),
    f("-isystem", Separate1, Kept),
    f("-iwithprefix", Separate1, Kept),
    f("-iwithprefixbefore", Separate1, Kept),
    f("-l", GluedOrSeparate, Linker),
    f("-m", Prefix, Kept),
    f("-no", Prefix, Kept),
    f("-no-pie", Exactly, Linker),
    f("-nodefaultlibs", Exactly, Linker),
    f("-nolibc", Exactly, Linker),
    f("-nostartfiles", Exactly, Linker),
    f("-nostdlib", Exactly, Linker),
    f("-o", Separate1, Output),
    f("-p", Prefix, Kept),
    f("-pass-exit-codes", Exactly, Kept),
    f("-pie", Exactly, Linker),
    f("-pipe", Exactly, Kept),
    f("-pthread", Exactly, Kept),
    f("-r", Exactly, Linker),
    f("-rdynamic", Exactly, Linker),
    f("-remap", Exactly, Kept),
    f("-s", Exactly, Linker),
    f("-save", Prefix, Kept),
    f("-shared", Prefix, Linker),
    f("-specs", GluedEq, Kept),
    f("-static", Prefix, Linker),
    f("-static-pie", Exactly, Linker),
    f("-std", GluedEq, Kept),
    f("-symbolic", Exactly, Linker),
    f("-tno", Prefix, Kept),
    f("-traditional", Prefix, Kept),
    f("-trigraphs", Exactly, Kept),
    f("-u", Separate1, Linker),
    f("-undef", Exactly, Kept),
    f("-v", Exactly, Kept),
    f("-wrapper", Separate1, Kept),
    f("-x", Separate1, Kept),
    f("-z", Separate1, Linker),
    f("@", Prefix, Kept),
];

/// The flags Bear 3.1.1 adds for the Clang family (`ToolClang.cc`), sorted.
/// Where a name is in [`GCC_FLAGS`] too (`--sysroot`, `-r`, `-traditional`,
/// `-x`, `-Xassembler`, `-Xpreprocessor`), GCC's definition is the one used.
static CLANG_EXTRA_FLAGS: &[FlagDef] = &[
    f("--analyze", Exactly, Kept),
    f("--analyzer-no-default-checks", Exactly, Kept),
    f("--analyzer-output", Glued, Kept),
    f("--autocomplete", GluedEq, Kept),
    f("--config", Separate1, Kept),
    f("--constant-cfstrings", Exactly, Kept),
    f("--cuda-compile-host-device", Exactly, Kept),
    f("--cuda-device-only", Exactly, Kept),
    f("--cuda-host-only", Exactly, Kept),
    f("--cuda-include-ptx", GluedEq, Kept),
    f("--cuda-noopt-device-debug", Exactly, Kept),
    f("--dyld-prefix", GluedEqOrSeparate, Kept),
    f("--gcc-toolchain", GluedEq, Kept),
    f("--gpu-instrument-lib", GluedEq, Kept),
    f("--gpu-max-threads-per-block", GluedEq, Kept),
    f("--hip-link", Exactly, Kept),
    f("--hip-version", GluedEq, Kept),
    f("--language", GluedEqOrSeparate, Kept),
    f("--migrate", Exactly, Kept),
    f("--no-cuda-include-ptx", GluedEq, Kept),
    f("--no-cuda-noopt-device-debug", Exactly, Kept),
    f("--output", GluedEqOrSeparate, Kept),
    f("--pipe", Exactly, Kept),
    f("--prefix", GluedEq, Kept),
    f("--print-diagnostic-categories", Exactly, Kept),
    f("--profile", Exactly, Kept),
    f("--profile-blocks", Exactly, Kept),
    f("--save", Prefix, Kept),
    f("--serialize-diagnostics", Separate1, Kept),
    f("--sysroot", GluedEqOrSeparate, Kept),
    f("--target", Prefix, Kept),
    f("--traditional", Prefix, Kept),
    f("--unwindlib", GluedEq, Kept),
    f("-EB", Exactly, Kept),
    f("-F", Prefix, Kept),
    f("-ObjC", Exactly, Kept),
    f("-ObjC++", Exactly, Kept),
    f("-Xanalyzer", GluedEq, Kept),
    f("-Xarch", Prefix1, Kept),
    f("-Xassembler", Separate1, Kept),
    f("-Xclang", Separate1, Kept),
    f("-Xcuda", Prefix1, Kept),
    f("-Xopenmp-target", Separate1, Kept),
    f("-Xopenmp-target=", Prefix1, Kept),
    f("-Xpreprocessor", Separate1, Kept),
    f("-Z", Separate1, Kept),
    f("-a", Prefix, Kept),
    f("-all_load", Exactly, Kept),
    f("-allowable_client", Separate1, Kept),
    f("-arch", Separate1, Kept),
    f("-arch_errors_fatal", Exactly, Kept),
    f("-arch_only", Separate1, Kept),
    f("-arcmt-migrate-emit-errors", Exactly, Kept),
    f("-arcmt-migrate-report-output", Separate1, Kept),
    f("-bind_at_load", Exactly, Kept),
    f("-bundle", Exactly, Kept),
    f("-bundle_loader", Separate1, Kept),
    f("-cc1", Exactly, NoLinking),
    f("-client_name", Prefix, Kept),
    f("-compatibility_version", Prefix, Kept),
    f("-cuid", GluedEq, Kept),
    f("-current_version", Glued, Kept),
    f("-dead_strip", Exactly, Kept),
    f("-dependency-dot", Separate1, Kept),
    f("-dependency-file", Separate1, Kept),
    f("-dsym-dir", Glued, Kept),
    f("-dumpmachine", Exactly, Kept),
    f("-dumpversion", Exactly, Kept),
    f("-dylib_file", Separate1, Kept),
    f("-dylinker", Exactly, Kept),
    f("-dylinker_install_name", Glued, Kept),
    f("-dynamic", Exactly, Kept),
    f("-dynamiclib", Exactly, Kept),
    f("-emit-ast", Exactly, NoLinking),
    f(
        "-enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang",
        Exactly,
        Kept,
    ),
    f("-exported_symbols_list", Separate1, Kept),
    f("-faligned-new", GluedEq, Kept),
    f("-force_load", Separate1, Kept),
    f("-framework", Separate1, Kept),
    f("-gcodeview", Exactly, Kept),
    f("-gcodeview-ghash", Exactly, Kept),
    f("-gno-codeview-ghash", Exactly, Kept),
    f("-headerpad_max_install_names", Prefix, Kept),
    f("-ibuiltininc", Exactly, Kept),
    f("-image_base", Separate1, Kept),
    f("-index-header-map", Exactly, Kept),
    f("-init", Separate1, Kept),
    f("-install_name", Separate1, Kept),
    f("-interface-stub-version", GluedEq, Kept),
    f("-keep_private_externs", Exactly, Kept),
    f("-lazy", Prefix1, Kept),
    f("-mllvm", Separate1, Kept),
    f("-module-dependency-dir", Separate1, Kept),
    f("-multiply_defined", Prefix1, Kept),
    f("-objcmt", Prefix, Kept),
    f("-object", Exactly, Kept),
    f("-r", Prefix, Kept),
    f("-sect", Prefix3, Kept),
    f("-seg1addr", Glued, Kept),
    f("-seg_", Prefix1, Kept),
    f("-segaddr", Separate2, Kept),
    f("-segcreate", Separate3, Kept),
    f("-seglinkedit", Exactly, Kept),
    f("-segprot", Separate3, Kept),
    f("-serialize-diagnostics", Separate1, Kept),
    f("-single_module", Exactly, Kept),
    f("-sub_", Prefix, Kept),
    f("-target", Separate1, Kept),
    f("-time", Exactly, Kept),
    f("-traditional", Prefix, Kept),
    f("-twolevel", Prefix, Kept),
    f("-umbrella", Separate1, Kept),
    f("-unexported_symbols_list", Separate1, Kept),
    f("-unwindlib", GluedEq, Kept),
    f("-x", Prefix, Kept),
];

/// A flag table: GCC's, or GCC's with Clang's additions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flags {
    Gcc,
    Clang,
}

impl Flags {
    /// The table for a recognised tool: Clang's for the Clang family, GCC's
    /// for everything else (launchers, `nvcc`, configured compilers), as
    /// Bear 3.1.1 does.
    pub fn for_tool(tool: Tool) -> Flags {
        match tool {
            Tool::Clang => Flags::Clang,
            _ => Flags::Gcc,
        }
    }

    fn get(self, name: &[u8]) -> Option<&'static FlagDef> {
        let find = |table: &'static [FlagDef]| {
            table
                .binary_search_by(|d| d.name.as_bytes().cmp(name))
                .ok()
                .map(|i| &table[i])
        };
        match self {
            Flags::Gcc => find(GCC_FLAGS),
            Flags::Clang => find(GCC_FLAGS).or_else(|| find(CLANG_EXTRA_FLAGS)),
        }
    }

    /// The definition that takes `token` and how many arguments it covers:
    /// the exact name first, else the shortest name the token extends whose
    /// arity allows the glued rest (Bear's scan in byte order meets the
    /// names that are prefixes of the token shortest first).
    pub fn lookup(self, token: &str) -> Option<(&'static FlagDef, usize)> {
        let bytes = token.as_bytes();
        if let Some(def) = self.get(bytes) {
            if let Some(n) = def.arity.exact() {
                return Some((def, n));
            }
        }
        for len in 1..bytes.len() {
            let Some(def) = self.get(&bytes[..len]) else {
                continue;
            };
            // Table names are ASCII, so `len` is a character boundary.
            if let Some(n) = def.arity.glued(&token[len..]) {
                return Some((def, n));
            }
        }
        None
    }
}

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

/// Why Bear 3.1.1 cannot read an argument list (and gives no entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// An empty argument (`cc -c a.c ""`): nothing matches it.
    EmptyArgument { index: usize },
}

/// Classifies `args` (without `argv[0]`) as Bear 3.1.1 does: each argument
/// is a flag of `flags`, else a source, else kept as an ordinary argument.
/// A flag short of its values is an ordinary argument. An empty argument
/// fails the whole list.
pub fn parse(args: &[String], flags: Flags) -> Result<Vec<Flag>, ParseError> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let tok = &args[i];
        if tok.is_empty() {
            return Err(ParseError::EmptyArgument { index: i + 1 });
        }
        if let Some((def, n)) = flags.lookup(tok) {
            if i + n <= args.len() {
                out.push(Flag {
                    kind: def.kind,
                    name: def.name,
                    tokens: args[i..i + n].to_vec(),
                });
                i += n;
                continue;
            }
        }
        let kind = if is_source(tok) { Source } else { Kept };
        out.push(Flag {
            kind,
            name: "",
            tokens: vec![tok.clone()],
        });
        i += 1;
    }
    Ok(out)
}

/// [`parse`] with GCC's table that never fails: an empty argument is kept
/// as an ordinary one (for the Klocwork specification, which has no
/// reference to follow there).
pub fn classify(args: &[String]) -> Vec<Flag> {
    let mut out = Vec::with_capacity(args.len());
    for (i, chunk) in args.split(|a| a.is_empty()).enumerate() {
        if i > 0 {
            out.push(Flag {
                kind: Kept,
                name: "",
                tokens: vec![String::new()],
            });
        }
        out.extend(parse(chunk, Flags::Gcc).unwrap_or_default());
    }
    out
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
        for n in ["icecc", "/usr/bin/sccache"] {
            assert_eq!(recognize(n), Some(Tool::Launcher), "{n}");
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
    fn tables_are_sorted() {
        for table in [GCC_FLAGS, CLANG_EXTRA_FLAGS] {
            for w in table.windows(2) {
                assert!(
                    w[0].name.as_bytes() < w[1].name.as_bytes(),
                    "{} {}",
                    w[0].name,
                    w[1].name
                );
            }
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn kinds(args: &[&str], flags: Flags) -> Vec<(FlagKind, usize)> {
        parse(&strings(args), flags)
            .unwrap()
            .iter()
            .map(|f| (f.kind, f.tokens.len()))
            .collect()
    }

    #[test]
    fn prefix_rules() {
        assert_eq!(
            kinds(
                &[
                    "-Wl,--as-needed",
                    "-static-libgcc",
                    "-lm",
                    "-MFx.d",
                    "-ofoo"
                ],
                Flags::Gcc
            ),
            vec![(Kept, 1), (Linker, 1), (Linker, 1), (Source, 1), (Kept, 1)]
        );
        // `-std` takes its value after `=` only; `-entry=` is the linker's.
        assert_eq!(
            kinds(&["-std=c99", "-std", "-entry=main", "@a.c"], Flags::Gcc),
            vec![(Kept, 1), (Kept, 1), (Linker, 1), (Kept, 1)]
        );
    }

    /// Bear's `clang_plugin` case: Clang's `-Xclang` takes the next
    /// argument, so `-load` is not read as `-l oad` (a linker flag).
    #[test]
    fn xclang_takes_its_value() {
        let args = ["-c", "a.c", "-Xclang", "-load", "-Xclang", "p.so"];
        assert_eq!(
            kinds(&args, Flags::Clang),
            vec![(NoLinking, 1), (Source, 1), (Kept, 2), (Kept, 2)]
        );
        assert_eq!(
            kinds(&args, Flags::Gcc),
            vec![
                (NoLinking, 1),
                (Source, 1),
                (Kept, 1),
                (Linker, 1),
                (Kept, 1),
                (Kept, 1)
            ]
        );
        // GCC's definition wins where both tables name a flag.
        assert_eq!(kinds(&["-r"], Flags::Clang), vec![(Linker, 1)]);
        assert_eq!(kinds(&["-rpath"], Flags::Clang), vec![(Kept, 1)]);
        assert_eq!(
            kinds(
                &["-segaddr", "a", "b", "-sectfoo", "1", "2", "3"],
                Flags::Clang
            ),
            vec![(Kept, 3), (Kept, 4)]
        );
    }

    #[test]
    fn short_of_values_and_empty() {
        // A flag without its value is an ordinary argument.
        assert_eq!(
            kinds(&["-c", "a.c", "-o"], Flags::Gcc),
            vec![(NoLinking, 1), (Source, 1), (Kept, 1)]
        );
        assert_eq!(
            parse(&strings(&["-c", "a.c", ""]), Flags::Gcc),
            Err(ParseError::EmptyArgument { index: 3 })
        );
        assert_eq!(classify(&strings(&["-c", "", "a.c"])).len(), 3);
    }
}
