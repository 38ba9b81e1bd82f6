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
