//! When keys were last used, written to the storage at most once a minute per key per instance
//! (a write per request would cost more than the request).

use std::collections::HashMap;
use std::sync::Mutex;

/// How often one instance records a key's use, at most.
pub const RECORD_EVERY: u64 = 60;

/// The last time this instance recorded each key's use.
/// Keyed by key ids, the service's own values, so a fast hash rather than SipHash.
#[derive(Debug, Default)]
pub struct Usage {
    recorded: Mutex<HashMap<i64, u64, foldhash::fast::RandomState>>,
}

impl Usage {
    /// Notes a use of key `id` at `now`: `true` when it is to be written (the first use, or the
    /// first a minute after the last write).
    pub fn note(&self, id: i64, now: u64) -> bool {
        let mut recorded = self
            .recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match recorded.get(&id) {
            Some(&last) if now < last.saturating_add(RECORD_EVERY) => false,
            _ => {
                recorded.insert(id, now);
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
}
