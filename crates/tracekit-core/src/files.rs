//! Files tracekit writes with trace content (recorded and received traces,
//! conversions, reports, logs): command lines, URLs and environments make
//! them private by default, mode 0600, unless the user chooses another mode
//! (`--file-mode` or `TRACEKIT_FILE_MODE` in the CLI).
//!
//! The mode applies when a file is created (the process umask still
//! removes bits); files that already exist keep theirs.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// The default: owner read and write only.
pub const PRIVATE: u32 = 0o600;

static MODE: AtomicU32 = AtomicU32::new(PRIVATE);

/// Sets the mode of the files created from now on (process-wide).
pub fn set_mode(mode: u32) {
    MODE.store(mode & 0o7777, Ordering::Relaxed);
}

/// The mode new trace files get.
pub fn mode() -> u32 {
    MODE.load(Ordering::Relaxed)
}

/// Options that create files with [`mode`]; add the access flags.
pub fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(mode());
    }
    o
}

/// Creates (or truncates) `path` for writing, with [`mode`] if new.
pub fn create(path: &Path) -> io::Result<File> {
    options().write(true).create(true).truncate(true).open(path)
}

/// Removes `path` when it is a regular file: what tracekit leaves out
/// after a failure (an empty recording, a half-written output). An output
/// named by the user may be `/dev/null`, a FIFO or a socket, which are
/// never removed (as root, removing `/dev/null` breaks the machine).
pub fn remove_written_file(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(path);
    }
}

/// The mode of directories tracekit creates for trace files: [`mode`] with
/// search permission wherever it grants read, so 0600 gives 0700 and 0640
/// gives 0750.
pub fn dir_mode() -> u32 {
    let mode = mode();
    mode | ((mode & 0o444) >> 2)
}

/// Creates `dir` and its missing parents with [`dir_mode`]; directories
/// that exist keep their mode.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(dir_mode());
    }
    builder.create(dir)
}

/// Parses an octal mode as users write it (`600`, `0644`, `0o640`).
pub fn parse_mode(s: &str) -> Option<u32> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    if digits.is_empty() || digits.len() > 4 {
        return None;
    }
    u32::from_str_radix(digits, 8).ok().filter(|m| *m <= 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_octal_modes() {
        assert_eq!(parse_mode("600"), Some(0o600));
        assert_eq!(parse_mode("0644"), Some(0o644));
        assert_eq!(parse_mode("0o640"), Some(0o640));
        assert_eq!(parse_mode("9"), None);
        assert_eq!(parse_mode(""), None);
        assert_eq!(parse_mode("77777"), None);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tracekit-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t");
        drop(create(&p).unwrap());
        let m = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_removed() {
        let dir = std::env::temp_dir().join(format!("tracekit-rm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, b"x").unwrap();
        let socket = dir.join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        remove_written_file(&file);
        remove_written_file(&socket);
        remove_written_file(&dir);
        let (file_left, socket_left, dir_left) = (file.exists(), socket.exists(), dir.exists());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!file_left);
        assert!(socket_left && dir_left);
    }
}
