//! Which git release wrote a trace, from its `version` event, and the
//! source lines its targets write on the events they emit themselves.
//!
//! `signal`, `atexit`, `timer` and `counter` records carry the file:line of
//! the *target* that wrote them (`trace2/tr2_tgt_perf.c:216` in git 2.39,
//! `:217` in 2.47), so converting one to another format needs the other
//! target's line in the same release. [`target_lines`] picks it from the
//! table generated from git's release tags (`target_lines.rs`).

pub use super::target_lines::Release;
use super::target_lines::{TargetLines, LINE_SETS, RELEASES};
use crate::event::Kind;

/// The index of an event kind in a [`TargetLines`] row, for the events a
/// target emits itself.
pub(crate) fn emitted_by_target(kind: Kind) -> Option<usize> {
    match kind {
        Kind::Signal => Some(0),
        Kind::AtExit => Some(1),
        Kind::Timer | Kind::ThTimer => Some(2),
        Kind::Counter | Kind::ThCounter => Some(3),
        _ => None,
    }
}

/// The lines of one release's targets, and how they were found.
#[derive(Debug, Clone, Copy)]
pub struct ReleaseLines {
    pub lines: &'static TargetLines,
    /// The release the lines were taken from.
    pub release: Release,
    /// The version string is exactly that release's tag (otherwise the
    /// nearest release below it was used).
    pub exact: bool,
}

/// The newest release in the table.
pub fn newest_known() -> Release {
    RELEASES.last().map(|r| r.0).unwrap_or((0, 0, 0))
}

/// Parses the leading `X.Y.Z` of git's version string (`2.39.5`,
/// `2.45.2.windows.1`, `2.39.5 (Apple Git-154)`, `2.47.0.rc1`), and says
/// whether that is all of it.
fn parse_release(exe: &[u8]) -> Option<(Release, bool)> {
    let mut parts = [0u16; 3];
    let mut i = 0;
    for (n, part) in parts.iter_mut().enumerate() {
        let digits = exe[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 4 {
            return None;
        }
        *part = std::str::from_utf8(&exe[i..i + digits])
            .ok()?
            .parse()
            .ok()?;
        i += digits;
        if n < 2 {
            if exe.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
    }
    Some(((parts[0], parts[1], parts[2]), i == exe.len()))
}

/// The target lines of the git that reports `exe` as its version: the
/// release of that name, else the nearest release below it (`exact` is
/// false then). An error says why there is none.
pub fn target_lines(exe: &[u8]) -> Result<ReleaseLines, String> {
    let shown = String::from_utf8_lossy(exe);
    let (release, plain) = parse_release(exe)
        .ok_or_else(|| format!("git version '{shown}' is not of the form X.Y.Z"))?;
    let at = RELEASES.partition_point(|r| r.0 <= release);
    let Some(&(found, set)) = at.checked_sub(1).and_then(|i| RELEASES.get(i)) else {
        return Err(format!("git {shown} is older than any release known here"));
    };
    let Some(set) = set else {
        return Err(format!("git {shown} has no Trace2 (it came with git 2.22)"));
    };
    Ok(ReleaseLines {
        lines: &LINE_SETS[set as usize],
        release: found,
        exact: plain && found == release,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_sorted_and_cover_2_20_to_newest() {
        assert!(RELEASES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(RELEASES[0].0, (2, 20, 0));
        assert!(newest_known() >= (2, 47, 3));
    }

    /// The lines the corpus's two producers wrote (tests/corpus/trace2*).
    #[test]
    fn corpus_producers() {
        let l = target_lines(b"2.47.3").unwrap();
        assert!(l.exact);
        assert_eq!(
            [l.lines[0][1], l.lines[1][1], l.lines[2][1]],
            [205, 217, 128]
        );
        assert_eq!(
            [l.lines[0][3], l.lines[1][3], l.lines[2][3]],
            [675, 593, 371]
        );
        let l = target_lines(b"2.39.5").unwrap();
        assert!(l.exact);
        assert_eq!(
            [l.lines[0][0], l.lines[1][0], l.lines[2][0]],
            [188, 204, 116]
        );
        assert_eq!(
            [l.lines[0][1], l.lines[1][1], l.lines[2][1]],
            [204, 216, 126]
        );
    }

    #[test]
    fn unknown_versions() {
        // A vendor suffix or an unreleased patch level: nearest release below.
        let l = target_lines(b"2.39.5 (Apple Git-154)").unwrap();
        assert_eq!((l.release, l.exact), ((2, 39, 5), false));
        let l = target_lines(b"2.39.99").unwrap();
        assert!(!l.exact && l.release.1 == 39);
        let l = target_lines(b"9.0.0").unwrap();
        assert_eq!((l.release, l.exact), (newest_known(), false));
        assert!(target_lines(b"2.21.0").unwrap_err().contains("no Trace2"));
        assert!(target_lines(b"1.9.0").unwrap_err().contains("older"));
        assert!(target_lines(b"two").unwrap_err().contains("X.Y.Z"));
        assert!(target_lines(b"").is_err());
    }
}
