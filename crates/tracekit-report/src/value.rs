//! Units and cell values.

use serde::{Deserialize, Serialize};

/// What a number means. Durations keep the unit their analysis measured
/// in (a renderer converts for display only); JSON carries the unit's
/// name (`"ns"`, `"bytes"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Free text (names, paths, commands).
    #[default]
    Text,
    /// How many of something.
    Count,
    Bytes,
    /// A share, 0 to 100.
    Percent,
    /// Durations and times.
    Ns,
    Us,
    Ms,
    S,
    /// Clock ticks of a clock the report names elsewhere (XRay's TSC).
    Ticks,
    /// How many per second.
    PerS,
    /// An identifier (a pid, a function id): no arithmetic, no grouping.
    Id,
    /// An identifier shown in hex (thread handles, addresses).
    HexId,
    /// A call stack: a list of frames, outermost first.
    Stack,
}

impl Unit {
    /// Seconds per one of this unit, for durations.
    pub fn seconds(self) -> Option<f64> {
        match self {
            Unit::Ns => Some(1e-9),
            Unit::Us => Some(1e-6),
            Unit::Ms => Some(1e-3),
            Unit::S => Some(1.0),
            _ => None,
        }
    }

    /// Whether values of this unit are numbers (right-aligned, sorted as
    /// numbers).
    pub fn is_numeric(self) -> bool {
        !matches!(self, Unit::Text | Unit::Stack)
    }

    /// The unit's JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Text => "text",
            Unit::Count => "count",
            Unit::Bytes => "bytes",
            Unit::Percent => "percent",
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::Ticks => "ticks",
            Unit::PerS => "per_s",
            Unit::Id => "id",
            Unit::HexId => "hex_id",
            Unit::Stack => "stack",
        }
    }
}

/// One value of a table cell or summary item. In JSON: a number, a
/// string, `true`/`false`, `null`, or (a [`Unit::Stack`]) an array of
/// strings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// Not known or not applicable (JSON `null`).
    #[default]
    Null,
    Bool(bool),
    UInt(u64),
    Int(i64),
    /// Non-finite floats are written as `null`.
    Float(f64),
    Text(String),
    List(Vec<String>),
}

impl Value {
    /// The value as a number, for sorting and drawing.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::UInt(v) => Some(*v as f64),
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) if v.is_finite() => Some(*v),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The sum of two numbers (integers stay integers), for totals.
    pub fn add(&self, other: &Value) -> Value {
        match (self, other) {
            (Value::Null, v) | (v, Value::Null) => v.clone(),
            (Value::UInt(a), Value::UInt(b)) => a
                .checked_add(*b)
                .map(Value::UInt)
                .unwrap_or(Value::Float(*a as f64 + *b as f64)),
            (Value::Int(a), Value::Int(b)) => a
                .checked_add(*b)
                .map(Value::Int)
                .unwrap_or(Value::Float(*a as f64 + *b as f64)),
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => Value::Float(x + y),
                _ => Value::Null,
            },
        }
    }
}

macro_rules! from_uint {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::UInt(v as u64)
            }
        }
    )*};
}
macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::Int(v as i64)
            }
        }
    )*};
}
from_uint!(u8, u16, u32, u64, usize);
from_int!(i8, i16, i32, i64, isize);

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(f64::from(v))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}
impl From<Vec<String>> for Value {
    fn from(v: Vec<String>) -> Value {
        Value::List(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}
