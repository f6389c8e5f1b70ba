//! In-process counters: exact for one instance, bounded in memory.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use futures_util::future::{FutureExt, LocalBoxFuture};
use petstore_domain::{Ban, Counts, RateLimits, Window};

use super::{CounterError, CounterStore, Hit, Subject};

const SHARDS: usize = 16;
/// A shard is swept of expired entries every this many requests.
const SWEEP_EVERY: u32 = 4_096;
/// Most subjects one shard keeps; past it, entries outside the current minute go first.
const SHARD_CAPACITY: usize = 65_536;

#[derive(Debug, Default)]
struct Entry {
    minute: u64,
    minute_used: u32,
    rejected: u32,
    day: u64,
    day_used: u32,
    ban: Option<Ban>,
}

#[derive(Debug, Default)]
struct Shard {
    entries: HashMap<Subject, Entry>,
    since_sweep: u32,
}

/// Counters in this process, sharded to keep lock contention low. Entries whose day has ended
/// (and whose ban is forgotten) are dropped, so memory follows the number of active subjects.
#[derive(Debug)]
pub struct MemoryCounters {
    shards: Box<[Mutex<Shard>]>,
    remember_bans_for: u64,
}

impl MemoryCounters {
    /// Counters that remember an ended ban for `remember_bans_for` seconds (for escalation).
    pub fn new(remember_bans_for: u64) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            remember_bans_for,
        }
    }

    fn shard(&self, subject: &Subject) -> &Mutex<Shard> {
        let mut hasher = DefaultHasher::new();
        subject.hash(&mut hasher);
        &self.shards[(hasher.finish() as usize) % SHARDS]
    }

    /// The decision of [`CounterStore::hit`], synchronously.
    pub fn hit_now(&self, subject: Subject, limits: RateLimits, now: u64) -> Hit {
        let mut shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shard.since_sweep += 1;
        if shard.since_sweep >= SWEEP_EVERY || shard.entries.len() >= SHARD_CAPACITY {
            self.sweep(&mut shard, now);
        }
        let entry = shard.entries.entry(subject).or_default();
        if let Some(ban) = entry.ban.filter(|ban| ban.until > now) {
            return Hit::Banned(ban);
        }
        let (minute, day) = (Window::Minute.index(now), Window::Day.index(now));
        if entry.minute != minute {
            entry.minute = minute;
            entry.minute_used = 0;
            entry.rejected = 0;
        }
        if entry.day != day {
            entry.day = day;
            entry.day_used = 0;
        }
        let allowed = entry.minute_used < limits.per_minute && entry.day_used < limits.per_day;
        if allowed {
            entry.minute_used += 1;
            entry.day_used += 1;
        } else {
            entry.rejected = entry.rejected.saturating_add(1);
        }
        Hit::Counted {
            counts: Counts {
                allowed,
                minute_used: entry.minute_used,
                day_used: entry.day_used,
                rejected: entry.rejected,
            },
            previous_ban: entry.ban,
        }
    }

    /// [`CounterStore::start_ban`], synchronously.
    pub fn start_ban_now(&self, subject: Subject, ban: Option<Ban>, now: u64) {
        let mut shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let entry = shard.entries.entry(subject).or_default();
        if entry.minute == Window::Minute.index(now) {
            entry.rejected = 0;
        }
        if ban.is_some() {
            entry.ban = ban;
        }
    }

    /// How many subjects are tracked (for tests of the memory bound).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).entries.len())
            .sum()
    }

    /// Whether no subject is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn sweep(&self, shard: &mut Shard, now: u64) {
        shard.since_sweep = 0;
        let (minute, day) = (Window::Minute.index(now), Window::Day.index(now));
        let remember = self.remember_bans_for;
        let keep_ban = |entry: &Entry| {
            entry
                .ban
                .is_some_and(|ban| ban.until.saturating_add(remember) > now)
        };
        shard
            .entries
            .retain(|_, entry| entry.day == day || keep_ban(entry));
        if shard.entries.len() >= SHARD_CAPACITY {
            // Under a flood of distinct subjects, forget day counts of the idle ones rather than
            // grow without bound.
            shard
                .entries
                .retain(|_, entry| entry.minute == minute || keep_ban(entry));
        }
    }
}

impl CounterStore for MemoryCounters {
    fn hit<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
        std::future::ready(Ok(self.hit_now(subject, limits, now))).boxed_local()
    }

    fn start_ban<'a>(
        &'a self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<(), CounterError>> {
        self.start_ban_now(subject, ban, now);
        std::future::ready(Ok(())).boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: RateLimits = RateLimits {
        per_minute: 3,
        per_day: 5,
    };
    // 2026-11-21T12:34:00Z: the start of a minute.
    const T0: u64 = 1_795_264_440;

    fn counts(hit: Hit) -> Counts {
        match hit {
            Hit::Counted { counts, .. } => counts,
            Hit::Banned(ban) => panic!("unexpected ban {ban:?}"),
        }
    }

    #[test]
    fn the_minute_window_allows_exactly_its_limit_and_resets_on_the_boundary() {
        let counters = MemoryCounters::new(0);
        let key = Subject::Key(1);
        let allowed: Vec<bool> = (0..5)
            .map(|_| counts(counters.hit_now(key, LIMITS, T0 + 59)).allowed)
            .collect();
        assert_eq!(allowed, [true, true, true, false, false]);
        let refused = counts(counters.hit_now(key, LIMITS, T0 + 59));
        assert_eq!((refused.minute_used, refused.rejected), (3, 3));
        let next = counts(counters.hit_now(key, LIMITS, T0 + 60));
        assert!(next.allowed, "a new minute starts at :00");
        assert_eq!((next.minute_used, next.day_used, next.rejected), (1, 4, 0));
    }

    #[test]
    fn the_day_window_caps_the_minutes_and_resets_at_midnight() {
        let counters = MemoryCounters::new(0);
        let key = Subject::Key(1);
        let mut granted = 0;
        for minute in 0..4 {
            for _ in 0..3 {
                granted +=
                    u32::from(counts(counters.hit_now(key, LIMITS, T0 + minute * 60)).allowed);
            }
        }
        assert_eq!(granted, 5, "the day allows 5 however the minutes fall");
        let midnight = Window::Day.reset_at(T0);
        assert!(counts(counters.hit_now(key, LIMITS, midnight)).allowed);
    }

    #[test]
    fn a_refused_request_consumes_nothing() {
        let counters = MemoryCounters::new(0);
        let key = Subject::Key(1);
        for _ in 0..10 {
            counters.hit_now(key, LIMITS, T0);
        }
        let later = counts(counters.hit_now(key, LIMITS, T0 + 60));
        assert_eq!(later.day_used, 4, "3 counted in the first minute, 1 now");
    }

    #[test]
    fn subjects_are_counted_apart() {
        let counters = MemoryCounters::new(0);
        for _ in 0..3 {
            counters.hit_now(Subject::Key(1), LIMITS, T0);
        }
        assert!(counts(counters.hit_now(Subject::Key(2), LIMITS, T0)).allowed);
        let address = Subject::Address("192.0.2.1".parse().expect("ip"));
        assert!(counts(counters.hit_now(address, LIMITS, T0)).allowed);
    }

    #[test]
    fn a_banned_subject_is_refused_until_the_ban_ends_and_the_ban_is_remembered() {
        let counters = MemoryCounters::new(1_000);
        let key = Subject::Address("192.0.2.1".parse().expect("ip"));
        let ban = Ban {
            until: T0 + 300,
            level: 1,
        };
        counters.start_ban_now(key, Some(ban), T0);
        assert_eq!(counters.hit_now(key, LIMITS, T0 + 299), Hit::Banned(ban));
        match counters.hit_now(key, LIMITS, T0 + 300) {
            Hit::Counted {
                counts,
                previous_ban,
            } => {
                assert!(counts.allowed);
                assert_eq!(previous_ban, Some(ban));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn starting_a_ban_forgets_the_minutes_refusals() {
        let counters = MemoryCounters::new(0);
        let key = Subject::Key(7);
        for _ in 0..6 {
            counters.hit_now(key, LIMITS, T0);
        }
        counters.start_ban_now(key, None, T0);
        let next = counts(counters.hit_now(key, LIMITS, T0));
        assert_eq!((next.allowed, next.rejected), (false, 1));
    }

    #[test]
    fn ended_days_are_dropped_so_memory_stays_bounded() {
        let counters = MemoryCounters::new(0);
        for id in 0..10_000 {
            counters.hit_now(Subject::Key(id), LIMITS, T0);
        }
        assert_eq!(counters.len(), 10_000);
        let tomorrow = Window::Day.reset_at(T0);
        // Today's traffic, from 1,000 subjects spread over every shard, sweeps yesterday away.
        for i in 0..(SWEEP_EVERY as i64 * SHARDS as i64 * 2) {
            counters.hit_now(Subject::Key(1_000_000 + i % 1_000), LIMITS, tomorrow);
        }
        assert_eq!(counters.len(), 1_000, "yesterday's 10,000 entries are gone");
    }
}
