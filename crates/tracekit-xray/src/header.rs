//! The 32-byte file header shared by basic and FDR logs, and byte-order
//! aware integer reads.

use tracekit_core::{Error, Position, Result};

/// Size of the file header in bytes.
pub const HEADER_LEN: usize = 32;

/// Byte order of the machine that wrote the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    #[inline(always)]
    pub fn u16(self, b: &[u8], at: usize) -> u16 {
        let a = [b[at], b[at + 1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }
    #[inline(always)]
    pub fn u32(self, b: &[u8], at: usize) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(&b[at..at + 4]);
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }
    #[inline(always)]
    pub fn u64(self, b: &[u8], at: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }
    pub fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        match self {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }
    pub fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        match self {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }
    pub fn put_u64(self, out: &mut Vec<u8>, v: u64) {
        match self {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }
}

/// Which logging mode wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// "Naive" mode: 32-byte records.
    Basic,
    /// Flight Data Recorder mode: buffers of variable-size records.
    Fdr,
}

/// The decoded file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub version: u16,
    pub kind: LogKind,
    pub constant_tsc: bool,
    pub nonstop_tsc: bool,
    /// Ticks per second of the timestamp counter (0: unknown).
    pub cycle_frequency: u64,
    /// FDR: the per-thread buffer size the runtime was configured with.
    pub buffer_size: u64,
    pub endian: Endian,
}

impl FileHeader {
    /// The `type` field as written (0 basic, 1 FDR).
    pub fn type_code(&self) -> u16 {
        match self.kind {
            LogKind::Basic => 0,
            LogKind::Fdr => 1,
        }
    }
}

fn supported(version: u16, kind: u16) -> bool {
    matches!((kind, version), (0, 1..=3) | (1, 1..=5))
}

/// True when `head` starts like an XRay binary log of a supported version.
pub fn looks_like_xray(head: &[u8]) -> bool {
    head.len() >= HEADER_LEN && parse_header(head).is_ok()
}

/// Reads the header, choosing the byte order once from the version/type
/// fields (never by trial parsing of the whole file).
pub fn parse_header(data: &[u8]) -> Result<FileHeader> {
    if data.len() < HEADER_LEN {
        return Err(Error::malformed(
            Position::Offset(0),
            format!(
                "not an XRay log: {} bytes, shorter than the 32-byte file header",
                data.len()
            ),
        ));
    }
    let le = (Endian::Little.u16(data, 0), Endian::Little.u16(data, 2));
    let be = (Endian::Big.u16(data, 0), Endian::Big.u16(data, 2));
    let endian = if supported(le.0, le.1) {
        Endian::Little
    } else if supported(be.0, be.1) {
        Endian::Big
    } else {
        let what = match le.1 {
            0 => format!(
                "basic-mode log of unsupported version {} (1-3 are known)",
                le.0
            ),
            1 => format!("FDR log of unsupported version {} (1-5 are known)", le.0),
            t => format!("not an XRay log (version {}, type {t})", le.0),
        };
        return Err(Error::malformed(Position::Offset(0), what));
    };
    let version = endian.u16(data, 0);
    let kind = if endian.u16(data, 2) == 0 {
        LogKind::Basic
    } else {
        LogKind::Fdr
    };
    // Only the two low flag bits are meaningful; the writer leaves the rest
    // of the word uninitialised.
    let flags = endian.u32(data, 4);
    Ok(FileHeader {
        version,
        kind,
        constant_tsc: flags & 1 != 0,
        nonstop_tsc: flags & 2 != 0,
        cycle_frequency: endian.u64(data, 8),
        buffer_size: if kind == LogKind::Fdr {
            endian.u64(data, 16)
        } else {
            0
        },
        endian,
    })
}

/// Serialises a header the way the runtime does (flags: both TSC bits).
pub fn write_header(h: &FileHeader, out: &mut Vec<u8>) {
    let e = h.endian;
    e.put_u16(out, h.version);
    e.put_u16(out, h.type_code());
    let flags = u32::from(h.constant_tsc) | (u32::from(h.nonstop_tsc) << 1);
    e.put_u32(out, flags);
    e.put_u64(out, h.cycle_frequency);
    e.put_u64(out, h.buffer_size);
    e.put_u64(out, 0);
}
