//! What the report, the allocation rows and `postproc --filter-leaks`
//! share: the live set (the blocks allocated and not yet released, by
//! resource type and id, with sp-rtrace's rules), resource lookup, and
//! backtrace interning.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

/// A block's key: its resource type (an index the caller keeps) and id.
pub(crate) type Key = (usize, u64);

/// The live blocks. A refcount resource's block is released by its last
/// free; an id allocated again without a free replaces the older block
/// (which the caller counts as leaked).
pub(crate) struct LiveSet<V> {
    blocks: FxHashMap<Key, (V, u32)>,
}

/// What [`LiveSet::alloc`] did.
pub(crate) enum Allocated<V> {
    /// A reference added to a live refcounted block: `block` is handed
    /// back, not kept.
    Referenced(V),
    /// A new block, and the one it replaced.
    New { replaced: Option<V> },
}

/// What [`LiveSet::free`] did.
pub(crate) enum Freed<V> {
    /// The block is gone.
    Released(V),
    /// One reference of a refcounted block is gone; it stays live.
    Unreferenced,
    /// No such live block.
    Unmatched,
}

impl<V> Default for LiveSet<V> {
    fn default() -> Self {
        LiveSet {
            blocks: FxHashMap::default(),
        }
    }
}

impl<V> LiveSet<V> {
    pub(crate) fn alloc(&mut self, key: Key, refcount: bool, block: V) -> Allocated<V> {
        // One lookup: the block is new, or a reference, or replaces.
        match self.blocks.entry(key) {
            Entry::Vacant(v) => {
                v.insert((block, 1));
                Allocated::New { replaced: None }
            }
            Entry::Occupied(mut o) if refcount => {
                o.get_mut().1 += 1;
                Allocated::Referenced(block)
            }
            Entry::Occupied(mut o) => Allocated::New {
                replaced: Some(std::mem::replace(o.get_mut(), (block, 1)).0),
            },
        }
    }

    pub(crate) fn free(&mut self, key: Key, refcount: bool) -> Freed<V> {
        let Entry::Occupied(mut o) = self.blocks.entry(key) else {
            return Freed::Unmatched;
        };
        let refs = &mut o.get_mut().1;
        *refs = refs.saturating_sub(1);
        if *refs > 0 && refcount {
            return Freed::Unreferenced;
        }
        Freed::Released(o.remove().0)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &V)> {
        self.blocks.iter().map(|(k, (v, _))| (k, v))
    }

    pub(crate) fn into_values(self) -> impl Iterator<Item = V> {
        self.blocks.into_values().map(|(v, _)| v)
    }
}

/// The index of a call's resource type among `names` (in registry order):
/// the one it names, or the first when it names none.
pub(crate) fn resource_index<'a>(
    mut names: impl Iterator<Item = &'a str>,
    resource_type: Option<&str>,
) -> Option<usize> {
    match resource_type {
        Some(name) => names.position(|n| n == name),
        None => names.next().map(|_| 0),
    }
}

/// Distinct backtraces (by their return addresses), numbered from 0 in
/// order of first use.
#[derive(Default)]
pub(crate) struct Backtraces {
    ids: FxHashMap<Vec<u64>, u32>,
}

impl Backtraces {
    /// The backtrace's number, and whether it is new.
    pub(crate) fn intern(&mut self, addrs: &[u64]) -> (u32, bool) {
        if let Some(&id) = self.ids.get(addrs) {
            return (id, false);
        }
        let id = self.ids.len() as u32;
        self.ids.insert(addrs.to_vec(), id);
        (id, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sp-rtrace's rules: a refcounted block lives until its last free;
    /// another block is released by its first; an id allocated again
    /// without a free replaces the older block.
    #[test]
    fn refcounts_replacements_and_unmatched_frees() {
        let mut live = LiveSet::default();
        assert!(matches!(
            live.alloc((1, 7), true, "a"),
            Allocated::New { replaced: None }
        ));
        assert!(matches!(
            live.alloc((1, 7), true, "b"),
            Allocated::Referenced("b")
        ));
        assert!(matches!(live.free((1, 7), true), Freed::Unreferenced));
        assert!(matches!(live.free((1, 7), true), Freed::Released("a")));
        assert!(matches!(live.free((1, 7), true), Freed::Unmatched));

        live.alloc((0, 7), false, "c");
        assert!(matches!(
            live.alloc((0, 7), false, "d"),
            Allocated::New {
                replaced: Some("c")
            }
        ));
        assert_eq!(
            live.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(),
            [((0, 7), "d")]
        );
        assert!(matches!(live.free((0, 7), false), Freed::Released("d")));
        assert_eq!(live.into_values().count(), 0);

        let names = ["memory", "fd"];
        assert_eq!(resource_index(names.into_iter(), Some("fd")), Some(1));
        assert_eq!(resource_index(names.into_iter(), None), Some(0));
        assert_eq!(resource_index(names.into_iter(), Some("gpu")), None);
        assert_eq!(resource_index([].into_iter(), None), None);

        let mut traces = Backtraces::default();
        assert_eq!(traces.intern(&[1, 2]), (0, true));
        assert_eq!(traces.intern(&[3]), (1, true));
        assert_eq!(traces.intern(&[1, 2]), (0, false));
    }
}
