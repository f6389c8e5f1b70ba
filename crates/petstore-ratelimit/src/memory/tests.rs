//! Counters in memory.

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

/// Counters that have counted `n` requests of `subject` at `T0`, allowed or refused.
fn after_hits(subject: Subject, n: usize) -> MemoryCounters {
    let counters = MemoryCounters::new(0, 1_000_000);
    for _ in 0..n {
        counters.hit_now(subject, LIMITS, T0);
    }
    counters
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
            granted += u32::from(counts(counters.hit_now(key, LIMITS, T0 + minute * 60)).allowed);
        }
    }
    assert_eq!(granted, 5, "the day allows 5 however the minutes fall");
    let midnight = Window::Day.reset_at(T0);
    assert!(counts(counters.hit_now(key, LIMITS, midnight)).allowed);
}

#[test]
fn a_refused_request_consumes_nothing() {
    let key = Subject::Key(1);
    let counters = after_hits(key, 10);
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
    let key = Subject::Key(7);
    let counters = after_hits(key, 6);
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

/// Fresh counters, with `limits` and the allowance of free revalidations, each `(per minute,
/// per day)`.
fn revalidating(
    limits: (u32, u32),
    allowance: (u32, u32),
) -> (MemoryCounters, RateLimits, RateLimits) {
    let custom = |(minute, day)| RateLimits::custom(minute, day).expect("valid limits");
    let counters = MemoryCounters::new(0, 1_000_000);
    (counters, custom(limits), custom(allowance))
}

#[test]
fn revalidations_are_taken_back_up_to_the_allowance_in_their_minute() {
    let (counters, limits, allowance) = revalidating((3, 100), (2, 100));
    let key = Subject::Key(1);
    // The first two of each minute are free: every one counted, then taken back.
    for _ in 0..2 {
        assert_eq!(counts(counters.hit_now(key, limits, T0)).minute_used, 1);
        assert!(counters.revalidated_now(key, allowance, T0 + 1));
    }
    // Past the allowance they stay counted, up to the limit, then refused.
    let outcomes: Vec<(bool, bool)> = (0..4)
        .map(|_| {
            let allowed = counts(counters.hit_now(key, limits, T0 + 2)).allowed;
            (
                allowed,
                allowed && counters.revalidated_now(key, allowance, T0 + 2),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [(true, false), (true, false), (true, false), (false, false)]
    );
    let standing = counts(counters.peek_now(key, limits, T0 + 3));
    assert_eq!((standing.minute_used, standing.day_used), (3, 3));
    // The next minute has its own allowance; a request counted in a minute that has ended is
    // not taken back from the new one.
    assert!(!counters.revalidated_now(key, allowance, T0 + 60));
    counters.hit_now(key, limits, T0 + 60);
    assert!(counters.revalidated_now(key, allowance, T0 + 61));
    let standing = counts(counters.peek_now(key, limits, T0 + 61));
    assert_eq!((standing.minute_used, standing.day_used), (0, 3));
    // A subject never counted has nothing to take back.
    assert!(!counters.revalidated_now(Subject::Key(2), allowance, T0));
}

#[test]
fn revalidations_are_free_up_to_the_days_allowance_too() {
    let (counters, limits, allowance) = revalidating((10, 100), (2, 5));
    let key = Subject::Key(1);
    // Two free a minute, five a day: the third minute has one left, the fourth none.
    let free: Vec<usize> = (0..4)
        .map(|minute| {
            let at = T0 + 60 * minute;
            (0..3)
                .filter(|_| {
                    counters.hit_now(key, limits, at);
                    counters.revalidated_now(key, allowance, at)
                })
                .count()
        })
        .collect();
    assert_eq!(free, [2, 2, 1, 0]);
    // A new day, a new allowance.
    let midnight = Window::Day.reset_at(T0);
    counters.hit_now(key, limits, midnight);
    assert!(counters.revalidated_now(key, allowance, midnight));
}
