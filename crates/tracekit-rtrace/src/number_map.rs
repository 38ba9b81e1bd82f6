//! Values by a number that comes from a counter.

use rustc_hash::FxHashMap as HashMap;

/// A value with a state meaning "none" (what [`NumberMap`] fills the gaps
/// of its vector with).
pub(crate) trait Slot: Clone {
    const VACANT: Self;
    fn is_vacant(&self) -> bool;
}

impl Slot for u32 {
    const VACANT: u32 = u32::MAX;
    #[inline]
    fn is_vacant(&self) -> bool {
        *self == u32::MAX
    }
}

impl Slot for (usize, usize) {
    const VACANT: (usize, usize) = (usize::MAX, 0);
    #[inline]
    fn is_vacant(&self) -> bool {
        self.0 == usize::MAX
    }
}

impl<T: Clone> Slot for Option<T> {
    const VACANT: Option<T> = None;
    #[inline]
    fn is_vacant(&self) -> bool {
        self.is_none()
    }
}

/// Values by a `u32` number that mostly comes from a counter (backtrace
/// numbers, trace-tree nodes): numbers below a bound are kept by index in
/// a vector (as far as the largest one met), the others hashed, so the
/// usual small number costs one load and a huge one no huge vector. The
/// vacant value of `V` ([`Slot`]) cannot be stored.
pub(crate) struct NumberMap<V> {
    dense: Vec<V>,
    sparse: HashMap<u32, V>,
    bound: usize,
}

impl<V: Slot> NumberMap<V> {
    /// Numbers below `bound` are kept by index.
    pub(crate) fn new(bound: usize) -> NumberMap<V> {
        NumberMap {
            dense: Vec::new(),
            sparse: HashMap::default(),
            bound,
        }
    }

    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<&V> {
        let k = id as usize;
        if k < self.bound {
            self.dense.get(k).filter(|v| !v.is_vacant())
        } else {
            self.sparse.get(&id)
        }
    }

    /// Sets number `id`'s value (replacing one there was).
    pub(crate) fn insert(&mut self, id: u32, value: V) {
        let k = id as usize;
        if k < self.bound {
            if self.dense.len() <= k {
                self.dense.resize(k + 1, V::VACANT);
            }
            self.dense[k] = value;
        } else {
            self.sparse.insert(id, value);
        }
    }
}

impl<V: Slot> Default for NumberMap<V> {
    /// Numbers below 2^20 by index (as far as the largest: 8 to 16 bytes
    /// each).
    fn default() -> NumberMap<V> {
        NumberMap::new(1 << 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_numbers_by_index_large_ones_hashed() {
        let mut m: NumberMap<u32> = NumberMap::new(16);
        assert_eq!(m.get(3), None);
        m.insert(3, 30);
        m.insert(100, 1000);
        m.insert(u32::MAX, 7);
        assert_eq!(m.get(3), Some(&30));
        assert_eq!(m.get(2), None, "a gap is vacant");
        assert_eq!(m.get(100), Some(&1000));
        assert_eq!(m.get(u32::MAX), Some(&7));
        assert_eq!(
            m.dense.len(),
            4,
            "the vector goes as far as the largest small number"
        );
        m.insert(3, 31);
        assert_eq!(m.get(3), Some(&31));
        let mut o: NumberMap<Option<String>> = NumberMap::default();
        o.insert(5, Some("five".into()));
        assert_eq!(o.get(5), Some(&Some("five".into())));
        assert_eq!(o.get(4), None);
    }
}
