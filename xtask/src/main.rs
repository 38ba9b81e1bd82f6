//! tracekit's packaging tasks, run as `cargo xtask TASK` (an alias in
//! `.cargo/config.toml`). The man pages and completions come from the
//! command-line definitions themselves, through tracekit's hidden
//! `tracekit generate` command, so they always match the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "\
Usage:
  cargo xtask man DIR [--profile P] [--no-build]
      tracekit.1 and a page per subcommand (tracekit-convert.1,
      tracekit-trace2-listen.1, ...) into DIR
  cargo xtask completions DIR [--profile P] [--no-build]
      bash, zsh and fish completions into DIR
  cargo xtask deb [--profile P] [--no-build] [-- CARGO_DEB_ARGS...]
      the Debian package: builds tracekit (release unless --profile), writes
      its man pages and completions beside the binary
      (TARGET/PROFILE/assets/), then runs `cargo deb --no-build` on it
      (cargo install --locked cargo-deb); prints the .deb's path

--profile P   the cargo profile of the tracekit binary (man and completions:
              dev by default; deb: release)
--no-build    use the binary already built with that profile";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("xtask: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(msg)) => {
            eprintln!("xtask: {msg}");
            ExitCode::from(1)
        }
    }
}

enum Failure {
    Usage(String),
    Failed(String),
}

struct Options {
    task: String,
    dir: Option<PathBuf>,
    profile: Option<String>,
    no_build: bool,
    rest: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, Failure> {
    let mut it = args.iter();
    let task = it
        .next()
        .ok_or_else(|| Failure::Usage("which task?".into()))?
        .clone();
    if task == "-h" || task == "--help" || task == "help" {
        println!("{USAGE}");
        std::process::exit(0);
    }
    let mut o = Options {
        task,
        dir: None,
        profile: None,
        no_build: false,
        rest: Vec::new(),
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--profile" => {
                let p = it
                    .next()
                    .ok_or_else(|| Failure::Usage("--profile needs a name".into()))?;
                o.profile = Some(p.clone());
            }
            "--no-build" => o.no_build = true,
            "--" => o.rest.extend(it.by_ref().cloned()),
            s if s.starts_with('-') => return Err(Failure::Usage(format!("unknown option {s}"))),
            s if o.dir.is_none() => o.dir = Some(PathBuf::from(s)),
            s => return Err(Failure::Usage(format!("unexpected argument {s}"))),
        }
    }
    Ok(o)
}

fn run(args: &[String]) -> Result<(), Failure> {
    let o = parse(args)?;
    match o.task.as_str() {
        "man" | "completions" => {
            let dir = o
                .dir
                .clone()
                .ok_or_else(|| Failure::Usage(format!("{} needs a directory", o.task)))?;
            let bin = tracekit_binary(o.profile.as_deref().unwrap_or("dev"), o.no_build)?;
            generate(&bin, &o.task, &dir)
        }
        "deb" => {
            if let Some(d) = &o.dir {
                return Err(Failure::Usage(format!(
                    "deb takes no directory ({})",
                    d.display()
                )));
            }
            let profile = o.profile.as_deref().unwrap_or("release");
            let bin = tracekit_binary(profile, o.no_build)?;
            // cargo-deb takes assets from target/PROFILE/ (its
            // `target/release/` prefix in Cargo.toml stands for that).
            let assets = bin
                .parent()
                .map(|p| p.join("assets"))
                .ok_or_else(|| Failure::Failed(format!("{}: no directory", bin.display())))?;
            // No stale pages of a subcommand that is gone.
            let _ = std::fs::remove_dir_all(&assets);
            generate(&bin, "man", &assets.join("man"))?;
            gzip_pages(&assets.join("man"))?;
            generate(&bin, "completions", &assets.join("completions"))?;
            let mut deb = Command::new(cargo());
            deb.args(["deb", "-p", "tracekit", "--no-build", "--profile", profile])
                .args(&o.rest);
            let status = deb.status().map_err(|e| {
                Failure::Failed(format!(
                    "cargo deb: {e} (install it: cargo install --locked cargo-deb)"
                ))
            })?;
            if !status.success() {
                return Err(Failure::Failed(format!(
                    "cargo deb failed ({status}); is cargo-deb installed? (cargo install --locked cargo-deb)"
                )));
            }
            Ok(())
        }
        t => Err(Failure::Usage(format!("unknown task {t}"))),
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Builds tracekit with `profile` (unless `no_build`) and returns its path.
fn tracekit_binary(profile: &str, no_build: bool) -> Result<PathBuf, Failure> {
    if !no_build {
        let status = Command::new(cargo())
            .args(["build", "-p", "tracekit", "--profile", profile])
            .status()
            .map_err(|e| Failure::Failed(format!("cargo build: {e}")))?;
        if !status.success() {
            return Err(Failure::Failed(format!("cargo build failed ({status})")));
        }
    }
    let dir = if profile == "dev" || profile == "test" {
        "debug"
    } else if profile == "bench" {
        "release"
    } else {
        profile
    };
    let bin = target_dir()?.join(dir).join("tracekit");
    if !bin.is_file() {
        return Err(Failure::Failed(format!(
            "{}: no tracekit built with profile {profile}{}",
            bin.display(),
            if no_build { " (drop --no-build)" } else { "" }
        )));
    }
    Ok(bin)
}

/// The workspace's target directory, as cargo resolves it
/// (`CARGO_TARGET_DIR`, config, or `target/`).
fn target_dir() -> Result<PathBuf, Failure> {
    let out = Command::new(cargo())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| Failure::Failed(format!("cargo metadata: {e}")))?;
    if !out.status.success() {
        return Err(Failure::Failed(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let json = String::from_utf8_lossy(&out.stdout);
    json_string_field(&json, "target_directory")
        .map(PathBuf::from)
        .ok_or_else(|| Failure::Failed("cargo metadata: no target_directory".into()))
}

/// The first `"key":"value"` string of a JSON document, unescaped (cargo
/// writes it compact; no dependency for one field).
fn json_string_field(json: &str, key: &str) -> Option<String> {
    let start = json.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut out = String::new();
    let mut chars = json[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Debian installs man pages gzipped (policy 12.1); cargo-deb compresses
/// only assets that are not build products, and these sit in the target
/// directory. `-n`: no name or time stamp, so the package is reproducible.
fn gzip_pages(dir: &Path) -> Result<(), Failure> {
    let pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Failure::Failed(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect();
    let status = Command::new("gzip")
        .args(["-9", "-n", "-f"])
        .args(&pages)
        .status()
        .map_err(|e| Failure::Failed(format!("gzip: {e}")))?;
    if !status.success() {
        return Err(Failure::Failed(format!("gzip failed ({status})")));
    }
    Ok(())
}

/// `tracekit generate WHAT DIR`.
fn generate(bin: &Path, what: &str, dir: &Path) -> Result<(), Failure> {
    let status = Command::new(bin)
        .args(["generate", what])
        .arg(dir)
        .status()
        .map_err(|e| Failure::Failed(format!("{}: {e}", bin.display())))?;
    if !status.success() {
        return Err(Failure::Failed(format!(
            "{} generate {what} {} failed ({status})",
            bin.display(),
            dir.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::json_string_field;

    #[test]
    fn reads_the_target_directory_of_cargo_metadata() {
        let j = r#"{"packages":[],"target_directory":"/a/b \"c\"\\d\u00e9","version":1}"#;
        assert_eq!(
            json_string_field(j, "target_directory").as_deref(),
            Some("/a/b \"c\"\\d\u{e9}")
        );
        assert_eq!(json_string_field(j, "workspace_root"), None);
    }
}
