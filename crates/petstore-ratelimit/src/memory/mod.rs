//! In-process counters: exact for one instance, bounded in memory.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use petstore_domain::{Ban, Counts, RateLimits, Window, async_trait};

use crate::policy::first_in_10_seconds;
use crate::{BanStarted, Counted, CounterStore, Hit, Subject, TakenBack};

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
    /// Requests taken back as free revalidations (`304`s) in the current minute, and day.
    revalidated: u32,
    revalidated_today: u32,
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

    /// [`CounterStore::revalidated`], synchronously.
    pub fn revalidated_now(&self, subject: Subject, allowance: RateLimits, now: u64) -> bool {
        let mut shard = self
            .shard(&subject)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match shard.entries.get_mut(&subject) {
            Some(entry) => take_back(entry, allowance, now),
            None => false,
        }
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
        entry.revalidated = 0;
    }
    if entry.day != day {
        entry.day = day;
        entry.day_used = 0;
        entry.revalidated_today = 0;
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

/// Takes a request counted at `now` back from `entry`'s windows, as a free revalidation, while
/// the minute and the day have had fewer than `allowance`.
fn take_back(entry: &mut Entry, allowance: RateLimits, now: u64) -> bool {
    let free = entry.minute == Window::Minute.index(now)
        && entry.minute_used > 0
        && entry.revalidated < allowance.per_minute
        && entry.revalidated_today < allowance.per_day;
    if free {
        entry.revalidated += 1;
        entry.revalidated_today += 1;
        entry.minute_used -= 1;
        entry.day_used = entry.day_used.saturating_sub(1);
    }
    free
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

#[async_trait(?Send)]
impl CounterStore for MemoryCounters {
    async fn peek(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        Ok(self.peek_now(subject, limits, now))
    }

    async fn hit(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        Ok(self.hit_now(subject, limits, now))
    }

    async fn start_ban(&self, subject: Subject, ban: Option<Ban>, now: u64) -> BanStarted {
        Ok(self.start_ban_now(subject, ban, now))
    }

    async fn revalidated(&self, subject: Subject, allowance: RateLimits, now: u64) -> TakenBack {
        Ok(self.revalidated_now(subject, allowance, now))
    }
}

#[cfg(test)]
mod tests;
