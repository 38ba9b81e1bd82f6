//! Sets `TRACEKIT_VERSION`, what `tracekit --version` prints after the
//! name: the package version, and the git commit it was built from with
//! that commit's date (`0.1.0 (a1b2c3d 2026-11-28)`) when the build is from
//! a git checkout that tracks this crate. Anywhere else (a crates.io-style
//! tarball, a copy made with `git archive` or `tar`, no `git` program) it is
//! the package version alone: never a commit this source is not known to be.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    let full = match commit(&manifest_dir) {
        Some(c) => format!("{version} ({c})"),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=TRACEKIT_VERSION={full}");
}

/// `SHORT_HASH YYYY-MM-DD` of HEAD, when `dir` is in a git work tree whose
/// index tracks this build script; also tells cargo to run this again when
/// HEAD moves (the HEAD file, the branch it names, packed refs).
pub fn commit(dir: &Path) -> Option<String> {
    // Only a checkout that has this crate: look for its `.git` (a directory,
    // or a worktree's file) by `stat`, never opening anything above it.
    let top = dir.ancestors().find(|d| d.join(".git").exists())?;
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(top)
            .args(args)
            .env("GIT_CEILING_DIRECTORIES", top.parent().unwrap_or(top))
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let s = String::from_utf8(out.stdout).ok()?;
        Some(s.trim().to_string())
    };
    // Rerun when HEAD moves: HEAD itself, the ref it points to, packed refs.
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    let common = git(&["rev-parse", "--git-common-dir"]).map(|c| {
        let c = PathBuf::from(c);
        if c.is_absolute() {
            c
        } else {
            top.join(c)
        }
    })?;
    println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        // A branch only in packed-refs gets its loose file at the next
        // commit: watch the directory it will appear in. (A path that does
        // not exist would make cargo run this script on every build.)
        let loose = common.join(&r);
        let watch = if loose.exists() {
            Some(loose.as_path())
        } else {
            loose.parent().filter(|p| p.exists())
        };
        if let Some(w) = watch {
            println!("cargo:rerun-if-changed={}", w.display());
        }
    }
    let packed = common.join("packed-refs");
    if packed.exists() {
        println!("cargo:rerun-if-changed={}", packed.display());
    }

    // The crate must be tracked there (not a tarball unpacked inside some
    // other repository, such as a home directory kept in git). Checked after
    // the watches above: committing it moves HEAD, and this runs again.
    let me = dir.join("build.rs");
    let rel = me.strip_prefix(top).ok()?.to_str()?.to_string();
    git(&["ls-files", "--error-unmatch", "--", &rel])?;

    let line = git(&[
        "log",
        "-1",
        "--no-show-signature",
        "--abbrev=7",
        "--format=%h %cs",
    ])?;
    // `%h %cs`: a hex hash and a YYYY-MM-DD date, or nothing usable.
    let (hash, date) = line.split_once(' ')?;
    let ok = hash.len() >= 7
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
        && date.len() == 10
        && date.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    ok.then(|| format!("{hash} {date}"))
}
