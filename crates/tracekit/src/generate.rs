//! What is generated from the command-line definitions themselves: shell
//! completions (`tracekit completions SHELL`, clap_complete) and man pages
//! (`tracekit generate man DIR`, clap_mangen), for packages: `tracekit
//! generate` is parsed apart from the command tree (`main` hands it here),
//! so no man page or completion offers it; `cargo xtask man` and `cargo
//! xtask deb` call it (docs/install.md).
//!
//! Both see the whole command tree, `tracekit xray`'s too: that one takes
//! its arguments raw (llvm-xray's single-dash flags), so its real
//! subcommands and flags are put in from `cmd::xray::command`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

/// The shells `tracekit generate completions` writes a file for, with the
/// file names their packages install them under (bash-completion, zsh's
/// site-functions, fish's vendor completions).
pub const SHELL_FILES: [(Shell, &str); 3] = [
    (Shell::Bash, "tracekit"),
    (Shell::Zsh, "_tracekit"),
    (Shell::Fish, "tracekit.fish"),
];

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  tracekit completions bash > ~/.local/share/bash-completion/completions/tracekit
  tracekit completions zsh > ~/.zfunc/_tracekit      # with fpath+=(~/.zfunc) before compinit
  tracekit completions fish > ~/.config/fish/completions/tracekit.fish

The Debian package installs bash, zsh and fish completions and the man pages
(man tracekit, man tracekit-convert, ...).")]
pub struct CompletionsArgs {
    /// The shell to complete tracekit's subcommands and flags in.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

/// `tracekit generate`.
#[derive(clap::Parser, Debug)]
#[command(
    name = "tracekit generate",
    about = "Man pages and shell completions for packages"
)]
struct GenerateCli {
    #[command(subcommand)]
    command: GenerateCommand,
}

#[derive(clap::Subcommand, Debug)]
enum GenerateCommand {
    /// Write tracekit.1 and a page per subcommand (tracekit-convert.1,
    /// tracekit-trace2-listen.1, ...) into DIR.
    Man {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Write the bash, zsh and fish completions into DIR (tracekit,
    /// _tracekit, tracekit.fish).
    Completions {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// The whole command tree, `tracekit xray`'s subcommands included.
pub fn command() -> clap::Command {
    let cmd = crate::Cli::command();
    cmd.mut_subcommand("xray", |raw| {
        let about = raw.get_about().cloned();
        let mut x = crate::cmd::xray::command()
            .name("xray")
            .display_order(raw.get_display_order());
        if let Some(a) = about {
            x = x.about(a);
        }
        x
    })
}

/// One shell's completion script.
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tracekit", &mut buf);
    buf
}

/// `tracekit completions SHELL`: the script on standard output.
pub fn completions(args: CompletionsArgs) -> Result<ExitCode> {
    let script = completion(args.shell);
    let mut out = io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // `| head`: not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e).context("standard output"),
    }
}

/// `tracekit generate ...` (argv[1] is `generate`).
pub fn main() -> ExitCode {
    use clap::Parser;
    let cli = GenerateCli::parse_from(std::env::args_os().skip(1));
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tracekit: generate: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(c: GenerateCommand) -> Result<ExitCode> {
    match c {
        GenerateCommand::Man { dir } => {
            for name in man_pages(&dir)? {
                println!("{}", dir.join(name).display());
            }
        }
        GenerateCommand::Completions { dir } => {
            create_dir(&dir)?;
            for (shell, name) in SHELL_FILES {
                let path = dir.join(name);
                std::fs::write(&path, completion(shell))
                    .with_context(|| format!("{}", path.display()))?;
                println!("{}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))
}

/// Writes `tracekit.1` and a page for every subcommand, nested ones as
/// `tracekit-trace2-listen.1`; returns the file names written.
pub fn man_pages(dir: &Path) -> Result<Vec<String>> {
    create_dir(dir)?;
    let mut cmd = command().disable_help_subcommand(true);
    cmd.build();
    let mut names = Vec::new();
    write_pages(cmd, dir, &mut names)?;
    // `tracekit xray`'s pages from its own tree: built under `tracekit`,
    // it would list tracekit's global flags, which its raw arguments do
    // not take (`tracekit -q xray ...` works, `tracekit xray ... -q` not).
    let about = crate::Cli::command()
        .find_subcommand("xray")
        .and_then(|x| x.get_about().cloned());
    let mut xray = crate::cmd::xray::command()
        .name("xray")
        .bin_name("tracekit xray")
        .display_name("tracekit-xray")
        .disable_help_subcommand(true);
    if let Some(a) = about {
        xray = xray.about(a);
    }
    xray.build();
    write_pages(xray, dir, &mut names)?;
    Ok(names)
}

fn write_pages(cmd: clap::Command, dir: &Path, names: &mut Vec<String>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if cmd.get_name() == "tracekit" && sub.get_name() == "xray" {
            continue;
        }
        write_pages(sub.clone(), dir, names)?;
    }
    let man = clap_mangen::Man::new(cmd).manual("tracekit manual");
    let name = man.get_filename();
    let path = dir.join(&name);
    let mut page = Vec::new();
    man.render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("{}", path.display()))?;
    names.push(name);
    Ok(())
}
