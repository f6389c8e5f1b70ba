//! In-process counters: exact for one instance, bounded in memory.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::{FutureExt, LocalBoxFuture};
use petstore_domain::{Ban, Counts, RateLimits, Window};

use super::{CounterError, CounterStore, Hit, Subject, first_in_10_seconds};

const SHARDS: usize = 16;
/// A shard is swept of expired entries every this many requests.
const SWEEP_EVERY: u32 = 4_096;

#[derive(Debug, Default)]
struct Entry {
    minute: u64,
    minute_used: u32,
    rejected: u32,
    day: u64,
    day_used: u32,
    ban: Option<Ban>,
    /// When the subject was last counted (Unix seconds): the eviction order.
    last_seen: u64,
    /// The minute index of the subject's last refusal: over its limit that minute.
    refused_minute: u64,
    /// The day index on which the subject used up its day's allowance.
    exhausted_day: u64,
}

#[derive(Debug, Default)]
struct Shard {
    entries: HashMap<Subject, Entry>,
    /// How many of `entries` are client addresses (the subjects a flood can make up).
    addresses: usize,
    since_sweep: u32,
    /// Until when (Unix seconds) the shard is known to hold no address it may forget: no scan
    /// for room before then.
    full_until: u64,
}

/// Counters in this process, sharded to keep lock contention low.
///
/// Memory follows the number of active subjects: entries whose day has ended (and whose ban is
/// forgotten) are dropped. Client addresses, which anyone can make up, have a budget
/// (`max_addresses`, split over the shards): when a new address finds its shard full, the
/// addresses seen least recently go first, except those over a limit now (refused this minute,
/// or out of today's allowance) or banned, whose counts a flood must not reset. Should every address in the shard be such a one, the new
/// address is served uncounted ([`MemoryCounters::untracked`]) until room frees. Keys are never
/// evicted: their number is the number of keys issued.
#[derive(Debug)]
pub struct MemoryCounters {
    shards: Box<[Mutex<Shard>]>,
    /// Picks a subject's shard, keyed at random per instance (one per process): a client cannot
    /// choose addresses that all fall into one shard, to fill its share of the address budget
    /// with a fraction of the addresses.
    shard_of: RandomState,
    remember_bans_for: u64,
    addresses_per_shard: usize,
    untracked: AtomicU64,
    last_warning: AtomicU64,
}

impl MemoryCounters {
    /// Counters that remember an ended ban for `remember_bans_for` seconds (for escalation),
    /// tracking at most about `max_addresses` client addresses.
    pub fn new(remember_bans_for: u64, max_addresses: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_of: RandomState::new(),
            remember_bans_for,
            addresses_per_shard: max_addresses.div_ceil(SHARDS).max(1),
            untracked: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
        }
    }

    fn shard(&self, subject: &Subject) -> &Mutex<Shard> {
        &self.shards[self.shard_index(subject)]
    }

    fn shard_index(&self, subject: &Subject) -> usize {
        (self.shard_of.hash_one(subject) as usize) % SHARDS
    }

    /// The decision of [`CounterStore::hit`], synchronously.
    pub fn hit_now(&self, subject: Subject, limits: RateLimits, now: u64) -> Hit {
        let mut shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shard.since_sweep += 1;
        if shard.since_sweep >= SWEEP_EVERY {
            self.sweep(&mut shard, now);
        }
        let is_address = matches!(subject, Subject::Address(_));
        if is_address
            && !shard.entries.contains_key(&subject)
            && shard.addresses >= self.addresses_per_shard
            && !self.make_room(&mut shard, now)
        {
            let untracked = self.untracked.fetch_add(1, Ordering::Relaxed) + 1;
            if first_in_10_seconds(&self.last_warning, now) {
                log::warn!(
                    "the rate-limit table is full of client addresses over their limits: new \
                     addresses are served uncounted ({untracked} requests so far); raise \
                     --rate-limit-max-clients"
                );
            }
            return count(&mut Entry::default(), limits, now);
        }
        let entry = shard.entries.entry(subject).or_default();
        let new = entry.last_seen == 0;
        let hit = count(entry, limits, now);
        if new && is_address {
            shard.addresses += 1;
        }
        hit
    }

    /// [`CounterStore::peek`], synchronously.
    pub fn peek_now(&self, subject: Subject, limits: RateLimits, now: u64) -> Hit {
        let shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let entry = shard.entries.get(&subject);
        peek(entry.unwrap_or(&Entry::default()), limits, now)
    }

    /// [`CounterStore::start_ban`], synchronously. A ban of an address not tracked here (the
    /// table was full of addresses over their limits, or these are the shared store's fallback
    /// and the store failed) needs a place: it is kept even beyond the address budget.
    pub fn start_ban_now(&self, subject: Subject, ban: Option<Ban>, now: u64) -> Option<Ban> {
        self.ban_now(subject, ban, now, true)
    }

    /// [`Self::start_ban_now`] for a ban the shared store holds: its copy here, for an outage,
    /// kept within the address budget only (beyond it the store alone keeps the ban).
    pub fn copy_ban_now(&self, subject: Subject, ban: Option<Ban>, now: u64) {
        self.ban_now(subject, ban, now, false);
    }

    fn ban_now(
        &self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
        must_hold: bool,
    ) -> Option<Ban> {
        let mut shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(entry) = shard.entries.get_mut(&subject) else {
            if let (Some(ban), Subject::Address(_)) = (ban, subject)
                && (must_hold
                    || shard.addresses < self.addresses_per_shard
                    || self.make_room(&mut shard, now))
            {
                shard.entries.insert(
                    subject,
                    Entry {
                        ban: Some(ban),
                        last_seen: now,
                        ..Entry::default()
                    },
                );
                shard.addresses += 1;
            }
            return None;
        };
        if let (Some(_), Some(current)) = (ban, entry.ban)
            && current.until > now
        {
            return Some(current);
        }
        if entry.minute == Window::Minute.index(now) {
            entry.rejected = 0;
        }
        if ban.is_some() {
            entry.ban = ban;
        }
        None
    }

    /// The ban of `subject` in force at `now`, if this instance holds one.
    pub fn ban_in_force(&self, subject: Subject, now: u64) -> Option<Ban> {
        let shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        shard
            .entries
            .get(&subject)
            .and_then(|entry| entry.ban)
            .filter(|ban| ban.until > now)
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

    /// How many requests were served uncounted because the address table was full of addresses
    /// over their limits.
    pub fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// Whether an entry must survive eviction: a key, a ban in force or remembered for the next
    /// one's length, or an address over a limit now (refused this minute, or its day's allowance
    /// used up): its counts are what keep it out. Protection by the minute lapses with the
    /// minute, so filling the table with protected addresses takes a limit's worth of requests
    /// per address every minute.
    fn protected(&self, subject: &Subject, entry: &Entry, now: u64) -> bool {
        matches!(subject, Subject::Key(_))
            || entry
                .ban
                .is_some_and(|ban| ban.until.saturating_add(self.remember_bans_for) > now)
            || entry.refused_minute == Window::Minute.index(now)
            || entry.exhausted_day == Window::Day.index(now)
    }

    /// Drops ended days, then, if the shard's addresses are still at their budget, the eighth of
    /// them seen least recently among those not protected. Whether there is room now.
    fn make_room(&self, shard: &mut Shard, now: u64) -> bool {
        if now < shard.full_until {
            return false;
        }
        self.sweep(shard, now);
        if shard.addresses < self.addresses_per_shard {
            return true;
        }
        let mut seen: Vec<u64> = shard
            .entries
            .iter()
            .filter(|(subject, entry)| !self.protected(subject, entry, now))
            .map(|(_, entry)| entry.last_seen)
            .collect();
        if seen.is_empty() {
            // Nothing to forget before protection can lapse, at the next minute: no rescan of
            // the whole shard on every request until then.
            shard.full_until = Window::Minute.reset_at(now);
            return false;
        }
        let evict = (self.addresses_per_shard / 8).clamp(1, seen.len());
        let (_, cutoff, _) = seen.select_nth_unstable(evict - 1);
        let cutoff = *cutoff;
        let mut evicted = 0;
        shard.entries.retain(|subject, entry| {
            let go = evicted < evict
                && entry.last_seen <= cutoff
                && !self.protected(subject, entry, now);
            evicted += usize::from(go);
            !go
        });
        shard.addresses -= evicted;
        true
    }

    fn sweep(&self, shard: &mut Shard, now: u64) {
        shard.since_sweep = 0;
        let day = Window::Day.index(now);
        let remember = self.remember_bans_for;
        let mut dropped = 0;
        shard.entries.retain(|subject, entry| {
            let keep = entry.day == day
                || entry
                    .ban
                    .is_some_and(|ban| ban.until.saturating_add(remember) > now);
            dropped += usize::from(!keep && matches!(subject, Subject::Address(_)));
            keep
        });
        shard.addresses -= dropped;
    }
}

/// Counts one request in `entry` (unless banned) and says what came of it.
fn count(entry: &mut Entry, limits: RateLimits, now: u64) -> Hit {
    entry.last_seen = now;
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
        entry.refused_minute = minute;
        if entry.day_used >= limits.per_day {
            entry.exhausted_day = day;
        }
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

/// What [`count`] would find in `entry`, counting nothing.
fn peek(entry: &Entry, limits: RateLimits, now: u64) -> Hit {
    if let Some(ban) = entry.ban.filter(|ban| ban.until > now) {
        return Hit::Banned(ban);
    }
    let (minute_used, rejected) = if entry.minute == Window::Minute.index(now) {
        (entry.minute_used, entry.rejected)
    } else {
        (0, 0)
    };
    let day_used = if entry.day == Window::Day.index(now) {
        entry.day_used
    } else {
        0
    };
    Hit::Counted {
        counts: Counts {
            allowed: minute_used < limits.per_minute && day_used < limits.per_day,
            minute_used,
            day_used,
            rejected,
        },
        previous_ban: entry.ban,
    }
}

impl CounterStore for MemoryCounters {
    fn peek<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
        std::future::ready(Ok(self.peek_now(subject, limits, now))).boxed_local()
    }

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
    ) -> LocalBoxFuture<'a, Result<Option<Ban>, CounterError>> {
        std::future::ready(Ok(self.start_ban_now(subject, ban, now))).boxed_local()
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
    fn which_shard_holds_a_subject_is_keyed_per_instance() {
        let subjects: Vec<Subject> = (0..64).map(Subject::Key).collect();
        let placement = |counters: &MemoryCounters| -> Vec<usize> {
            subjects.iter().map(|s| counters.shard_index(s)).collect()
        };
        let one = MemoryCounters::new(0, 1_000);
        assert_eq!(placement(&one), placement(&one), "stable within one");
        // Two independently keyed placements of 64 subjects over 16 shards agree with a
        // chance of 16^-64.
        assert_ne!(placement(&one), placement(&MemoryCounters::new(0, 1_000)));
    }

    #[test]
    fn the_minute_window_allows_exactly_its_limit_and_resets_on_the_boundary() {
        let counters = MemoryCounters::new(0, 1_000_000);
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
        let counters = MemoryCounters::new(0, 1_000_000);
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
        let counters = MemoryCounters::new(0, 1_000_000);
        let key = Subject::Key(1);
        for _ in 0..10 {
            counters.hit_now(key, LIMITS, T0);
        }
        let later = counts(counters.hit_now(key, LIMITS, T0 + 60));
        assert_eq!(later.day_used, 4, "3 counted in the first minute, 1 now");
    }

    #[test]
    fn subjects_are_counted_apart() {
        let counters = MemoryCounters::new(0, 1_000_000);
        for _ in 0..3 {
            counters.hit_now(Subject::Key(1), LIMITS, T0);
        }
        assert!(counts(counters.hit_now(Subject::Key(2), LIMITS, T0)).allowed);
        let address = Subject::Address("192.0.2.1".parse().expect("ip"));
        assert!(counts(counters.hit_now(address, LIMITS, T0)).allowed);
    }

    #[test]
    fn a_banned_subject_is_refused_until_the_ban_ends_and_the_ban_is_remembered() {
        let counters = MemoryCounters::new(1_000, 1_000_000);
        let key = Subject::Address("192.0.2.1".parse().expect("ip"));
        let ban = Ban {
            until: T0 + 300,
            level: 1,
        };
        assert_eq!(counters.start_ban_now(key, Some(ban), T0), None);
        assert_eq!(counters.hit_now(key, LIMITS, T0 + 299), Hit::Banned(ban));
        // Requests counted before it crossed the threshold too: the ban in force stays, once.
        let again = Ban {
            until: T0 + 310,
            level: 1,
        };
        assert_eq!(counters.start_ban_now(key, Some(again), T0 + 10), Some(ban));
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
        let counters = MemoryCounters::new(0, 1_000_000);
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
        let counters = MemoryCounters::new(0, 1_000_000);
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

    fn address(n: u32) -> Subject {
        Subject::Address(std::net::IpAddr::V4(n.into()))
    }

    #[test]
    fn a_flood_of_addresses_stays_within_the_budget() {
        let counters = MemoryCounters::new(0, 1_600);
        for n in 0..100_000 {
            counters.hit_now(address(n), LIMITS, T0 + u64::from(n) / 1_000);
        }
        assert!(counters.len() <= 1_600, "{} tracked", counters.len());
        assert_eq!(counters.untracked(), 0, "there was always someone to evict");
    }

    #[test]
    fn bans_kept_beside_a_shared_store_stay_within_the_budget() {
        // As the shared store's fallback: bans started there, of addresses never counted here.
        let counters = MemoryCounters::new(0, 1_600);
        let ban = Ban {
            until: T0 + 300,
            level: 1,
        };
        for n in 0..10_000 {
            counters.copy_ban_now(address(n), Some(ban), T0);
        }
        assert!(counters.len() <= 1_600, "{} tracked", counters.len());
        assert_eq!(counters.ban_in_force(address(0), T0 + 1), Some(ban));
        assert_eq!(counters.ban_in_force(address(0), T0 + 300), None);
        // Once those bans are over (and, here, forgotten at once), new ones find room.
        let later = Ban {
            until: T0 + 900,
            level: 1,
        };
        counters.copy_ban_now(address(20_000), Some(later), T0 + 600);
        assert_eq!(
            counters.ban_in_force(address(20_000), T0 + 601),
            Some(later)
        );
        assert!(counters.len() <= 1_600, "{} tracked", counters.len());
        // With the table full again, a ban held nowhere else (the store failed) is kept still.
        for n in 30_000..40_000 {
            counters.copy_ban_now(address(n), Some(later), T0 + 600);
        }
        let table = counters.len();
        let held = Ban {
            until: T0 + 1_200,
            level: 1,
        };
        counters.start_ban_now(address(50_000), Some(held), T0 + 600);
        assert_eq!(counters.ban_in_force(address(50_000), T0 + 601), Some(held));
        assert_eq!(counters.len(), table + 1);
    }

    #[test]
    fn a_flood_cannot_reset_an_address_that_is_over_its_limit_nor_a_key() {
        let counters = MemoryCounters::new(0, 1_600);
        let abuser = address(u32::MAX);
        for _ in 0..10 {
            counters.hit_now(abuser, LIMITS, T0);
        }
        for _ in 0..3 {
            counters.hit_now(Subject::Key(1), LIMITS, T0);
        }
        for n in 0..50_000 {
            counters.hit_now(address(n), LIMITS, T0 + 1 + u64::from(n) / 1_000);
        }
        let later = T0 + 59;
        let still = counts(counters.hit_now(abuser, LIMITS, later));
        assert!(
            !still.allowed,
            "the abuser's minute was not reset by the flood"
        );
        assert!(!counts(counters.hit_now(Subject::Key(1), LIMITS, later)).allowed);
    }

    #[test]
    fn a_table_full_of_refused_addresses_serves_new_ones_uncounted() {
        // One address per shard, each refused (over its limit) and so protected.
        let counters = MemoryCounters::new(0, SHARDS);
        for n in 0..200 {
            for _ in 0..4 {
                counters.hit_now(address(n), LIMITS, T0);
            }
        }
        assert!(counters.len() <= SHARDS, "{}", counters.len());
        let before = counters.untracked();
        assert!(counts(counters.hit_now(address(u32::MAX - 1), LIMITS, T0)).allowed);
        assert_eq!(counters.untracked(), before + 1, "served, uncounted");
    }
}
