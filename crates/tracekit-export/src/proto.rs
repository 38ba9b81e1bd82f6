//! Just enough protobuf encoding for the writers of this crate: varints,
//! fixed-width and length-delimited fields appended to a byte vector.
//!
//! The writers build each message in a reusable buffer and copy it into
//! its parent with its length (no per-message allocation), which suits
//! their small, flat messages; a generic protobuf library would build a
//! struct per message first.

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn key(buf: &mut Vec<u8>, field: u32, wire: u32) {
    varint(buf, u64::from(field << 3 | wire));
}

/// A `uint32`/`uint64`/`bool`/enum field.
pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, VARINT);
    varint(buf, v);
}

/// An `int32`/`int64` field (two's complement, as protobuf encodes them).
pub fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

pub fn fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

pub fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// A `bytes` or embedded-message field.
pub fn bytes(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(buf, field, LEN);
    varint(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

/// A `string` field: protobuf strings must be UTF-8, so invalid sequences
/// are replaced (U+FFFD), as the JSON writers do.
pub fn string(buf: &mut Vec<u8>, field: u32, s: &[u8]) {
    match std::str::from_utf8(s) {
        Ok(_) => bytes(buf, field, s),
        Err(_) => bytes(buf, field, String::from_utf8_lossy(s).as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_protobuf_does() {
        let mut b = Vec::new();
        uint(&mut b, 1, 150);
        assert_eq!(b, [0x08, 0x96, 0x01]);
        b.clear();
        string(&mut b, 2, b"testing");
        assert_eq!(b, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        b.clear();
        int(&mut b, 4, -1);
        assert_eq!(b.len(), 11);
        b.clear();
        uint(&mut b, 60, 1);
        assert_eq!(b, [0xe0, 0x03, 0x01]);
        b.clear();
        string(&mut b, 1, b"a\xff");
        assert_eq!(b, [0x0a, 0x04, b'a', 0xef, 0xbf, 0xbd]);
    }
}
