//! When keys were last used, written to the storage at most once a minute per key per instance
//! (a write per request would cost more than the request).

use quick_cache::sync::Cache;

/// How often one instance records a key's use, at most.
pub const RECORD_EVERY: u64 = 60;

/// The last time this instance recorded each key's use, for at most [`Usage::CAPACITY`] keys
/// (a bounded cache: a key it has let go of is recorded again at its next use, one write
/// early). Two requests of one key at the same moment may both record it: a harmless extra
/// write.
#[derive(Debug)]
pub struct Usage {
    recorded: Cache<i64, u64>,
}

impl Default for Usage {
    fn default() -> Self {
        Self::with_capacity(Self::CAPACITY)
    }
}

impl Usage {
    /// Keys remembered at most: far more than are busy on one instance within a minute.
    pub const CAPACITY: usize = 100_000;

    fn with_capacity(capacity: usize) -> Self {
        Self {
            recorded: Cache::new(capacity),
        }
    }

    /// Notes a use of key `id` at `now`: `true` when it is to be written (the first use, or the
    /// first a minute after the last write).
    pub fn note(&self, id: i64, now: u64) -> bool {
        match self.recorded.get(&id) {
            Some(last) if now < last.saturating_add(RECORD_EVERY) => false,
            _ => {
                self.recorded.insert(id, now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_recorded_once_a_minute_at_most() {
        let usage = Usage::default();
        assert!(usage.note(1, 1000));
        assert!(!usage.note(1, 1001));
        assert!(!usage.note(1, 1059));
        assert!(usage.note(2, 1059), "keys are apart");
        assert!(usage.note(1, 1060));
        assert!(!usage.note(1, 1119));
    }

    #[test]
    fn a_flood_of_keys_stays_bounded_and_keeps_the_keys_in_use() {
        let usage = Usage::with_capacity(100);
        assert!(usage.note(0, 1000));
        for id in 1..10_000 {
            assert!(usage.note(id, 1000), "key {id}: first use");
            assert!(
                !usage.note(0, 1000),
                "the key in use was let go after {id} others"
            );
        }
        assert!(
            usage.recorded.len() <= 100,
            "bounded: {}",
            usage.recorded.len()
        );
    }
}
