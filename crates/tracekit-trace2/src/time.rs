//! Trace2 durations and clocks.
//!
//! Durations (`t_abs`, `t_rel`, timer totals) are written by git with
//! `%.6f`; we keep them as whole microseconds so that reading and writing
//! them back is exact.

use std::fmt::Write as _;

/// A duration in microseconds (may be negative in foreign input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Micros(pub i64);

impl Micros {
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Parses `[-]digits[.digits]`, as `%.6f` writes it (more than six
    /// fraction digits are rounded away; exponents are refused).
    pub fn parse(s: &[u8]) -> Option<Micros> {
        let (neg, s) = match s.first() {
            Some(b'-') => (true, &s[1..]),
            _ => (false, s),
        };
        if s.is_empty() {
            return None;
        }
        let (int, frac) = match memchr::memchr(b'.', s) {
            Some(i) => (&s[..i], &s[i + 1..]),
            None => (s, &b""[..]),
        };
        if int.is_empty() || int.len() > 12 || !int.iter().all(u8::is_ascii_digit) {
            return None;
        }
        if !frac.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut v: i64 = 0;
        for &d in int {
            v = v * 10 + i64::from(d - b'0');
        }
        let mut f: i64 = 0;
        for i in 0..6 {
            f = f * 10 + frac.get(i).map_or(0, |d| i64::from(d - b'0'));
        }
        if frac.get(6).is_some_and(|d| *d >= b'5') {
            f += 1;
        }
        let total = v * 1_000_000 + f;
        Some(Micros(if neg { -total } else { total }))
    }

    /// `%.6f`.
    pub fn write(self, out: &mut Vec<u8>) {
        let (neg, v) = if self.0 < 0 {
            (true, self.0.unsigned_abs())
        } else {
            (false, self.0 as u64)
        };
        if neg {
            out.push(b'-');
        }
        out.extend_from_slice(itoa::Buffer::new().format(v / 1_000_000).as_bytes());
        out.push(b'.');
        let frac = v % 1_000_000;
        let digits = [
            frac / 100_000,
            frac / 10_000 % 10,
            frac / 1_000 % 10,
            frac / 100 % 10,
            frac / 10 % 10,
            frac % 10,
        ];
        out.extend(digits.iter().map(|d| b'0' + *d as u8));
    }

    /// `%*.6f` with a minimum width, right-aligned.
    pub fn write_width(self, width: usize, out: &mut Vec<u8>) {
        // Digits before the point, plus ".uuuuuu" and the sign.
        let int_len = itoa::Buffer::new()
            .format(self.0.unsigned_abs() / 1_000_000)
            .len();
        let len = int_len + 7 + usize::from(self.0 < 0);
        for _ in len..width {
            out.push(b' ');
        }
        self.write(out);
    }
}

/// A time of day in microseconds since local midnight, as NORMAL and PERF
/// write it (`HH:MM:SS.uuuuuu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay(pub u64);

impl TimeOfDay {
    /// Parses exactly `HH:MM:SS.uuuuuu` (15 bytes).
    pub fn parse(s: &[u8]) -> Option<TimeOfDay> {
        if s.len() != 15 || s[2] != b':' || s[5] != b':' || s[8] != b'.' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<u64> {
            let mut v = 0u64;
            for &c in &s[r] {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + u64::from(c - b'0');
            }
            Some(v)
        };
        let (h, m, sec, us) = (num(0..2)?, num(3..5)?, num(6..8)?, num(9..15)?);
        Some(TimeOfDay(((h * 60 + m) * 60 + sec) * 1_000_000 + us))
    }

    pub fn write(self, out: &mut Vec<u8>) {
        let us = self.0 % 1_000_000;
        let s = self.0 / 1_000_000;
        let two = |v: u64| [b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8];
        out.extend_from_slice(&two(s / 3600 % 100));
        out.push(b':');
        out.extend_from_slice(&two(s / 60 % 60));
        out.push(b':');
        out.extend_from_slice(&two(s % 60));
        out.push(b'.');
        let mut d = [0u8; 6];
        let mut u = us;
        for slot in d.iter_mut().rev() {
            *slot = b'0' + (u % 10) as u8;
            u /= 10;
        }
        out.extend_from_slice(&d);
    }
}

/// A UTC instant in microseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMicros(pub i64);

impl UnixMicros {
    /// Parses EVENT's `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` (also `+00:00` instead
    /// of `Z`, as Git Credential Manager writes, and any fraction length).
    pub fn parse_iso(s: &[u8]) -> Option<UnixMicros> {
        if s.len() < 20
            || s[4] != b'-'
            || s[7] != b'-'
            || s[10] != b'T'
            || s[13] != b':'
            || s[16] != b':'
        {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let mut v = 0i64;
            for &c in s.get(r)? {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + i64::from(c - b'0');
            }
            Some(v)
        };
        let (y, mo, d, h, mi, sec) = (
            num(0..4)?,
            num(5..7)?,
            num(8..10)?,
            num(11..13)?,
            num(14..16)?,
            num(17..19)?,
        );
        let mut i = 19;
        let mut us = 0i64;
        if s.get(i) == Some(&b'.') {
            i += 1;
            let mut digits = 0;
            while let Some(c) = s.get(i).filter(|c| c.is_ascii_digit()) {
                if digits < 6 {
                    us = us * 10 + i64::from(c - b'0');
                    digits += 1;
                }
                i += 1;
            }
            while digits < 6 {
                us *= 10;
                digits += 1;
            }
        }
        let offset_secs = match &s[i..] {
            b"Z" | b"" => 0,
            [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
                let hh = i64::from(rest[0].wrapping_sub(b'0')) * 10
                    + i64::from(rest[1].wrapping_sub(b'0'));
                let mm = i64::from(rest[3].wrapping_sub(b'0')) * 10
                    + i64::from(rest[4].wrapping_sub(b'0'));
                let v = (hh * 60 + mm) * 60;
                if *sign == b'+' {
                    v
                } else {
                    -v
                }
            }
            _ => return None,
        };
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        let days = days_from_civil(y, mo, d);
        Some(UnixMicros(
            ((days * 86400 + h * 3600 + mi * 60 + sec) - offset_secs) * 1_000_000 + us,
        ))
    }

    /// Parses the timestamp of a SID component
    /// (`20261121T192654.231907Z-H...`).
    pub fn parse_sid(component: &[u8]) -> Option<UnixMicros> {
        if component.len() < 23
            || component[8] != b'T'
            || component[15] != b'.'
            || component[22] != b'Z'
        {
            return None;
        }
        let c = component;
        let iso = [
            &c[0..4],
            b"-",
            &c[4..6],
            b"-",
            &c[6..8],
            b"T",
            &c[9..11],
            b":",
            &c[11..13],
            b":",
            &c[13..15],
            b".",
            &c[16..22],
            b"Z",
        ]
        .concat();
        Self::parse_iso(&iso)
    }

    /// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`, as EVENT writes it.
    pub fn write_iso(self, out: &mut Vec<u8>) {
        let secs = self.0.div_euclid(1_000_000);
        let us = self.0.rem_euclid(1_000_000);
        let (y, mo, d) = civil_from_days(secs.div_euclid(86400));
        let sod = secs.rem_euclid(86400);
        let mut t = String::with_capacity(27);
        let _ = write!(
            t,
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{us:06}Z",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        );
        out.extend_from_slice(t.as_bytes());
    }

    /// The local time of day (per `TZ`, as git's `localtime_r` sees it).
    pub fn local_time_of_day(self) -> TimeOfDay {
        let secs = self.0.div_euclid(1_000_000);
        let us = self.0.rem_euclid(1_000_000) as u64;
        let offset = local_offset_secs(secs);
        let sod = (secs + offset).rem_euclid(86400) as u64;
        TimeOfDay(sod * 1_000_000 + us)
    }
}

/// The local zone's offset from UTC at `secs`, per the C library (which
/// honours `TZ`).
pub(crate) fn local_offset_secs(secs: i64) -> i64 {
    let t: libc::time_t = secs as libc::time_t;
    // SAFETY: localtime_r writes only into the zeroed `tm` we own; `t` is a
    // valid time_t.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

// Howard Hinnant's civil-calendar algorithms (public domain arithmetic).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip() {
        for s in ["0.000416", "12.500000", "1234.000001", "-0.000001"] {
            let m = Micros::parse(s.as_bytes()).unwrap();
            let mut out = Vec::new();
            m.write(&mut out);
            assert_eq!(out, s.as_bytes());
        }
        assert_eq!(Micros::parse(b"1.5"), Some(Micros(1_500_000)));
        assert_eq!(Micros::parse(b"1e5"), None);
        assert_eq!(Micros::parse(b""), None);
        let mut out = Vec::new();
        Micros(416).write_width(9, &mut out);
        assert_eq!(out, b" 0.000416");
    }

    #[test]
    fn iso_and_sid_times() {
        let t = UnixMicros::parse_iso(b"2026-11-21T19:54:27.163779Z").unwrap();
        let mut out = Vec::new();
        t.write_iso(&mut out);
        assert_eq!(out, b"2026-11-21T19:54:27.163779Z");
        let g = UnixMicros::parse_iso(b"2026-11-21T19:54:27.163779+00:00").unwrap();
        assert_eq!(g, t);
        let s = UnixMicros::parse_sid(b"20261121T195427.163686Z-H0a7c9cdf-P000032e6").unwrap();
        assert_eq!(t.0 - s.0, 93);
        assert_eq!(
            TimeOfDay::parse(b"19:54:27.163779").unwrap().0,
            (19 * 3600 + 54 * 60 + 27) * 1_000_000 + 163779
        );
        assert!(UnixMicros::parse_iso(b"2026-13-21T19:54:27Z").is_none());
    }
}
