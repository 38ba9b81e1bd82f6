//! `trace_event_set_t`: a fixed bitset over every event type identifier.

use crate::consts::*;

pub use crate::producer::EVENTSET_WORDS;

/// A set of event types (the C `trace_event_set_t`, same layout).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EventSet {
    pub bits: [u64; EVENTSET_WORDS],
}

impl Default for EventSet {
    fn default() -> Self {
        Self::empty()
    }
}

impl EventSet {
    pub const fn empty() -> EventSet {
        EventSet {
            bits: [0; EVENTSET_WORDS],
        }
    }

    /// `posix_trace_eventset_fill`; `None` for an unknown selector.
    pub fn filled(what: i32) -> Option<EventSet> {
        let mut s = EventSet::empty();
        let range = match what {
            // No implementation-defined process-independent system events.
            POSIX_TRACE_WOPID_EVENTS => 0..0,
            POSIX_TRACE_SYSTEM_EVENTS => SYSTEM_EVENT_FIRST..SYSTEM_EVENT_END,
            POSIX_TRACE_ALL_EVENTS => {
                for id in SYSTEM_EVENT_FIRST..SYSTEM_EVENT_END {
                    s.add(id);
                }
                USER_EVENT_FIRST..EVENT_ID_END
            }
            _ => return None,
        };
        for id in range {
            s.add(id);
        }
        Some(s)
    }

    /// Adds `id`; false if it is not a valid identifier.
    pub fn add(&mut self, id: u32) -> bool {
        if id >= EVENT_ID_END {
            return false;
        }
        self.bits[id as usize / 64] |= 1 << (id % 64);
        true
    }

    pub fn del(&mut self, id: u32) -> bool {
        if id >= EVENT_ID_END {
            return false;
        }
        self.bits[id as usize / 64] &= !(1 << (id % 64));
        true
    }

    pub fn contains(&self, id: u32) -> bool {
        id < EVENT_ID_END && self.bits[id as usize / 64] & (1 << (id % 64)) != 0
    }

    pub fn union(&self, other: &EventSet) -> EventSet {
        let mut s = *self;
        for (a, b) in s.bits.iter_mut().zip(other.bits) {
            *a |= b;
        }
        s
    }

    pub fn minus(&self, other: &EventSet) -> EventSet {
        let mut s = *self;
        for (a, b) in s.bits.iter_mut().zip(other.bits) {
            *a &= !b;
        }
        s
    }

    /// The set as little-endian bytes (the payload of START and FILTER).
    pub fn to_bytes(&self) -> [u8; EVENTSET_WORDS * 8] {
        let mut out = [0u8; EVENTSET_WORDS * 8];
        for (chunk, w) in out.chunks_exact_mut(8).zip(self.bits) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_selects_ranges() {
        let sys = EventSet::filled(POSIX_TRACE_SYSTEM_EVENTS).unwrap();
        assert!(sys.contains(POSIX_TRACE_START) && sys.contains(POSIX_TRACE_FLUSH_STOP));
        assert!(!sys.contains(POSIX_TRACE_UNNAMED_USEREVENT));
        let all = EventSet::filled(POSIX_TRACE_ALL_EVENTS).unwrap();
        assert!(all.contains(EVENT_ID_END - 1) && all.contains(POSIX_TRACE_ERROR));
        assert_eq!(
            EventSet::filled(POSIX_TRACE_WOPID_EVENTS),
            Some(EventSet::empty())
        );
        assert_eq!(EventSet::filled(99), None);
    }

    #[test]
    fn add_del_are_idempotent() {
        let mut s = EventSet::empty();
        assert!(s.add(1030) && s.add(1030));
        assert!(s.contains(1030));
        assert!(s.del(1030) && s.del(1030));
        assert!(!s.contains(1030));
        assert!(!s.add(EVENT_ID_END));
    }
}
