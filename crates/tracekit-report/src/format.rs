//! Values as a person reads them: durations in the unit that suits them
//! (`12.3 ms`), bytes in binary multiples (`1.2 MiB`), shares with a `%`.
//! Shared by the text and HTML renderers; JSON keeps the raw numbers.

use crate::value::{Unit, Value};

/// A value of `unit` for display.
pub fn value(v: &Value, unit: Unit) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Text(s) => s.clone(),
        Value::List(frames) => frames.join(" › "),
        Value::UInt(n) => integer(*n as f64, unit, &n.to_string()),
        Value::Int(n) => integer(*n as f64, unit, &n.to_string()),
        Value::Float(x) if !x.is_finite() => String::new(),
        Value::Float(x) => number(*x, unit),
    }
}

fn integer(x: f64, unit: Unit, digits: &str) -> String {
    match unit {
        Unit::Count | Unit::Id | Unit::Text | Unit::Stack | Unit::Ticks => digits.to_string(),
        Unit::HexId => match digits.parse::<i128>() {
            Ok(n) if n >= 0 => format!("{n:#x}"),
            _ => digits.to_string(),
        },
        _ => number(x, unit),
    }
}

/// A number of `unit` for display.
pub fn number(x: f64, unit: Unit) -> String {
    if !x.is_finite() {
        return String::new();
    }
    if let Some(s) = unit.seconds() {
        return duration(x * s);
    }
    match unit {
        Unit::Bytes => bytes(x),
        Unit::Percent => format!("{}%", sig(x, 3)),
        Unit::PerS => format!("{}/s", sig(x, 3)),
        Unit::HexId if x >= 0.0 && x.fract() == 0.0 => format!("{:#x}", x as u64),
        Unit::Count | Unit::Ticks | Unit::Id | Unit::HexId | Unit::Text | Unit::Stack => {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{}", x as i64)
            } else {
                sig(x, 4)
            }
        }
        Unit::Ns | Unit::Us | Unit::Ms | Unit::S => unreachable!("durations handled above"),
    }
}

/// Seconds as `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`, `2 min 3 s`.
pub fn duration(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0 s".to_string()
    } else if a < 1e-6 {
        format!("{} ns", sig(s * 1e9, 3))
    } else if a < 1e-3 {
        format!("{} µs", sig(s * 1e6, 3))
    } else if a < 1.0 {
        format!("{} ms", sig(s * 1e3, 3))
    } else if a < 600.0 {
        format!("{} s", sig(s, 3))
    } else if a < 36_000.0 {
        let m = (s / 60.0).floor();
        format!("{m} min {:.0} s", s - m * 60.0)
    } else {
        let h = (s / 3600.0).floor();
        format!("{h} h {:.0} min", (s - h * 3600.0) / 60.0)
    }
}

/// Bytes as `512 B`, `1.50 KiB`, `12.3 MiB`.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if b.abs() < 1024.0 {
        return if b.fract() == 0.0 {
            format!("{b} B")
        } else {
            format!("{} B", sig(b, 3))
        };
    }
    let mut v = b / 1024.0;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", sig(v, 3), UNITS[i])
}

/// `x` with `digits` significant digits (at least the integer part),
/// without trailing zeros after the point.
pub fn sig(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_finite() {
            "0".into()
        } else {
            String::new()
        };
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (digits - 1 - mag).clamp(0, 9) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(850e-9), "850 ns");
        assert_eq!(duration(12.34e-6), "12.3 µs");
        assert_eq!(duration(0.004561), "4.56 ms");
        assert_eq!(duration(1.234), "1.23 s");
        assert_eq!(duration(123.0), "123 s");
        assert_eq!(duration(725.0), "12 min 5 s");
        assert_eq!(number(1500.0, Unit::Us), "1.5 ms");
        assert_eq!(value(&Value::UInt(2500), Unit::Ns), "2.5 µs");
    }

    #[test]
    fn bytes_counts_and_ids() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(12.8), "12.8 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes(12.3 * 1024.0 * 1024.0), "12.3 MiB");
        assert_eq!(value(&Value::UInt(1506), Unit::Count), "1506");
        assert_eq!(value(&Value::UInt(255), Unit::HexId), "0xff");
        assert_eq!(value(&Value::Float(29.8804), Unit::Percent), "29.9%");
        assert_eq!(value(&Value::Null, Unit::Count), "");
        assert_eq!(
            value(&Value::List(vec!["a".into(), "b".into()]), Unit::Stack),
            "a › b"
        );
    }
}
