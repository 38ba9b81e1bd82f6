//! Output file names: a session's file name and the SID-style timestamp.

use super::*;
use crate::event::sid_own;

/// The file name for a session: the SID's last component (after the last
/// `/`), as git's directory target names it. Bytes other than ASCII
/// letters, digits, `.`, `-`, `_` become `_` and a leading `.` becomes `_`,
/// so a hostile SID cannot escape the output directory. `None` if empty.
pub fn session_file_name(sid: &[u8]) -> Option<String> {
    (!sid_own(sid).is_empty()).then(|| file_name_chars(sid).collect())
}

/// Whether `name` is [`session_file_name`] of `sid` (without building it:
/// consecutive lines mostly belong to the same session).
pub fn is_session_file_name(sid: &[u8], name: &str) -> bool {
    !sid_own(sid).is_empty() && file_name_chars(sid).eq(name.chars())
}

fn file_name_chars(sid: &[u8]) -> impl Iterator<Item = char> + '_ {
    sid_own(sid).iter().take(200).enumerate().map(|(i, &b)| {
        let keep = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') || (b == b'.' && i > 0);
        if keep {
            b as char
        } else {
            '_'
        }
    })
}

/// `YYYYMMDDTHHMMSS.uuuuuuZ` in UTC, the form of a SID's timestamp.
pub fn sid_timestamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
