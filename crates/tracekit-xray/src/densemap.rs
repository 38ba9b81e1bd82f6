//! llvm-xray prints several tables in the iteration order of LLVM's
//! `DenseMap` (open addressing, quadratic probing, power-of-two tables of
//! at least 64 buckets). Reproducing that order is what makes our text
//! output byte-identical; this module computes it without storing values.

/// `DenseMapInfo<unsigned>` / `<int>` hash.
pub fn hash_u32(v: u32) -> u32 {
    v.wrapping_mul(37)
}

/// `DenseMapInfo<unsigned long>` hash.
pub fn hash_u64(v: u64) -> u32 {
    v.wrapping_mul(37) as u32
}

/// `DenseMapInfo<std::pair<A, B>>` hash: LLVM's 64-bit mix of both halves.
pub fn hash_pair(a: u32, b: u32) -> u32 {
    let mut key: u64 = (u64::from(a) << 32) | u64::from(b);
    key = key.wrapping_add(!(key << 32));
    key ^= key >> 22;
    key = key.wrapping_add(!(key << 13));
    key ^= key >> 8;
    key = key.wrapping_add(key << 3);
    key ^= key >> 15;
    key = key.wrapping_add(!(key << 27));
    key ^= key >> 31;
    key as u32
}

/// `DenseMapInfo<StringRef>` hash: LLVM 14's `hash_value(StringRef)`
/// (`hash_combine_range` with its fixed seed), truncated to 32 bits.
pub fn hash_str(s: &[u8]) -> u32 {
    llvm_hash_bytes(s) as u32
}

const K0: u64 = 0xc3a5c85c97cb3127;
const K1: u64 = 0xb492b66fbe98f273;
const K2: u64 = 0x9ae16a3b2f90404f;
const K3: u64 = 0xc949d7c7509e6557;
/// `get_execution_seed()` of LLVM 14 (no override).
const SEED: u64 = 0xff51afd7ed558ccd;

fn fetch64(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(b)
}

fn fetch32(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[at..at + 4]);
    u64::from(u32::from_le_bytes(b))
}

fn rotate(v: u64, shift: u32) -> u64 {
    if shift == 0 {
        v
    } else {
        v.rotate_right(shift)
    }
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_16_bytes(low: u64, high: u64) -> u64 {
    const MUL: u64 = 0x9ddfea08eb382d69;
    let mut a = (low ^ high).wrapping_mul(MUL);
    a ^= a >> 47;
    let mut b = (high ^ a).wrapping_mul(MUL);
    b ^= b >> 47;
    b.wrapping_mul(MUL)
}

/// LLVM's `hash_short` (inputs of at most 64 bytes); longer inputs take
/// its streaming state, which names of vertices in llvm-xray (`#id`)
/// never need: for those we hash the first 64 bytes (documented gap).
fn llvm_hash_bytes(s: &[u8]) -> u64 {
    let len = s.len();
    let seed = SEED;
    let len64 = len as u64;
    match len {
        0 => K2 ^ seed,
        1..=3 => {
            let (a, b, c) = (
                u64::from(s[0]),
                u64::from(s[len >> 1]),
                u64::from(s[len - 1]),
            );
            let y = (a + (b << 8)) & 0xffff_ffff;
            let z = (len64 + (c << 2)) & 0xffff_ffff;
            shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K3) ^ seed).wrapping_mul(K2)
        }
        4..=8 => {
            let a = fetch32(s, 0);
            hash_16_bytes(len64.wrapping_add(a << 3), seed ^ fetch32(s, len - 4))
        }
        9..=16 => {
            let a = fetch64(s, 0);
            let b = fetch64(s, len - 8);
            hash_16_bytes(seed ^ a, rotate(b.wrapping_add(len64), len as u32)) ^ b
        }
        17..=32 => {
            let a = fetch64(s, 0).wrapping_mul(K1);
            let b = fetch64(s, 8);
            let c = fetch64(s, len - 8).wrapping_mul(K2);
            let d = fetch64(s, len - 16).wrapping_mul(K0);
            hash_16_bytes(
                rotate(a.wrapping_sub(b), 43)
                    .wrapping_add(rotate(c ^ seed, 30))
                    .wrapping_add(d),
                a.wrapping_add(rotate(b ^ K3, 20))
                    .wrapping_sub(c)
                    .wrapping_add(len64)
                    .wrapping_add(seed),
            )
        }
        33..=64 => {
            let mut z = fetch64(s, 24);
            let mut a = fetch64(s, 0)
                .wrapping_add(len64.wrapping_add(fetch64(s, len - 16)).wrapping_mul(K0));
            let mut b = rotate(a.wrapping_add(z), 52);
            let mut c = rotate(a, 37);
            a = a.wrapping_add(fetch64(s, 8));
            c = c.wrapping_add(rotate(a, 7));
            a = a.wrapping_add(fetch64(s, 16));
            let vf = a.wrapping_add(z);
            let vs = b.wrapping_add(rotate(a, 31)).wrapping_add(c);
            a = fetch64(s, 16).wrapping_add(fetch64(s, len - 32));
            z = fetch64(s, len - 8);
            b = rotate(a.wrapping_add(z), 52);
            c = rotate(a, 37);
            a = a.wrapping_add(fetch64(s, len - 24));
            c = c.wrapping_add(rotate(a, 7));
            a = a.wrapping_add(fetch64(s, len - 16));
            let wf = a.wrapping_add(z);
            let ws = b.wrapping_add(rotate(a, 31)).wrapping_add(c);
            let r = shift_mix(
                vf.wrapping_add(ws)
                    .wrapping_mul(K2)
                    .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
            );
            shift_mix((seed ^ r.wrapping_mul(K0)).wrapping_add(vs)).wrapping_mul(K2)
        }
        _ => llvm_hash_bytes(&s[..64]),
    }
}

/// Given the hashes of distinct keys in first-insertion order, returns the
/// positions (indices into `hashes`) in the order a DenseMap iterates them.
pub fn iteration_order(hashes: &[u32]) -> Vec<usize> {
    let mut buckets: Vec<Option<usize>> = Vec::new();
    for i in 0..hashes.len() {
        let entries = i;
        if (entries + 1) * 4 >= buckets.len() * 3 {
            let n = (buckets.len() * 2).max(64);
            let old = std::mem::replace(&mut buckets, vec![None; n]);
            for k in old.into_iter().flatten() {
                place(&mut buckets, hashes, k);
            }
        }
        place(&mut buckets, hashes, i);
    }
    buckets.into_iter().flatten().collect()
}

fn place(buckets: &mut [Option<usize>], hashes: &[u32], k: usize) {
    let mask = buckets.len() - 1;
    let mut b = hashes[k] as usize & mask;
    let mut probe = 1;
    while buckets[b].is_some() {
        b = (b + probe) & mask;
        probe += 1;
    }
    buckets[b] = Some(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_order_matches_llvm_xray_stack_output() {
        // mt.fdr.stack-flame.txt lists threads 1538, 1540, 1537, 1539, 1541.
        let tids = [1537u32, 1538, 1539, 1540, 1541];
        let hashes: Vec<u32> = tids.iter().map(|&t| hash_u32(t)).collect();
        let order: Vec<u32> = iteration_order(&hashes).iter().map(|&i| tids[i]).collect();
        assert_eq!(order, [1538, 1540, 1537, 1539, 1541]);
    }
}
