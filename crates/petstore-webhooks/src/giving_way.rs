//! How the sender gives way to the API ([`GivingWay`]): while requests are under way, it keeps
//! its storage calls to a share of the time.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Whether the API has requests under way; the sender gives way to them (see
/// [`crate::Sender::giving_way_to`]).
pub type Busy = Arc<dyn Fn() -> bool + Send + Sync>;

/// The longest a wait runs before the API's load is looked at again.
const SLICE: Duration = Duration::from_millis(20);
/// The most waiting owed at once: one storage call slowed by a stalled database keeps the
/// sender back no longer.
const MAX_OWED: Duration = Duration::from_secs(5);
/// The least share kept: below it, a sender could be kept back by far more than its calls take.
const MIN_SHARE: f64 = 0.01;

/// While the API is busy, each storage call of `took` is followed, before the next claim, by
/// a wait of `took × (1 − share) / share`: the sender's storage calls (its claims, records,
/// backlog and pruning: the database work its thread's lower CPU priority does not lower) then
/// take at most `share` of the time, and what the database does for the sender is that much
/// less of what the API waits for. Progress is kept: the sender always gets its share, and
/// claims again at once when the API is idle (what is owed is forgiven). A storage call slowed
/// by the API's own load owes more, so the sender gives way the more the busier the database.
pub(crate) struct GivingWay {
    busy: Option<Busy>,
    share: f64,
    owed: Mutex<Duration>,
}

impl fmt::Debug for GivingWay {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("GivingWay")
            .field("share", &self.share)
            .field("owed", &*self.owed())
            .finish_non_exhaustive()
    }
}

impl GivingWay {
    /// Gives way to `busy` (`None`: to nothing), keeping `share` of the time (from
    /// [`MIN_SHARE`] to 1, which never waits).
    pub(crate) fn new(busy: Option<Busy>, share: f64) -> Self {
        Self {
            busy,
            share: if share.is_nan() {
                1.0
            } else {
                share.clamp(MIN_SHARE, 1.0)
            },
            owed: Mutex::default(),
        }
    }

    /// A storage call took `took`.
    pub(crate) fn spent(&self, took: Duration) {
        if self.share >= 1.0 || !self.is_busy() {
            return;
        }
        let wait = took.as_secs_f64() * (1.0 - self.share) / self.share;
        let wait = Duration::try_from_secs_f64(wait).unwrap_or(MAX_OWED);
        let mut owed = self.owed();
        *owed = owed.saturating_add(wait).min(MAX_OWED);
    }

    /// How long to wait before the next claim, [`SLICE`] at most (then [`GivingWay::waited`],
    /// and ask again): nothing when nothing is owed, or when the API is idle (what was owed is
    /// then forgiven).
    pub(crate) fn next_wait(&self) -> Duration {
        let mut owed = self.owed();
        if !owed.is_zero() && !self.is_busy() {
            *owed = Duration::ZERO;
        }
        owed.min(SLICE)
    }

    /// The sender waited `waited` of what it owed.
    pub(crate) fn waited(&self, waited: Duration) {
        let mut owed = self.owed();
        *owed = owed.saturating_sub(waited);
    }

    /// Waits what is owed, while the API stays busy.
    pub(crate) async fn wait(&self) {
        loop {
            let wait = self.next_wait();
            if wait.is_zero() {
                return;
            }
            tokio::time::sleep(wait).await;
            self.waited(wait);
        }
    }

    fn is_busy(&self) -> bool {
        self.busy.as_ref().is_some_and(|busy| busy())
    }

    fn owed(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.owed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn giving_way(share: f64) -> (GivingWay, Arc<AtomicBool>) {
        let load = Arc::new(AtomicBool::new(true));
        let seen = load.clone();
        let busy: Busy = Arc::new(move || seen.load(Ordering::Relaxed));
        (GivingWay::new(Some(busy), share), load)
    }

    /// Waits out what is owed as the sender does, without sleeping; the total.
    fn owed(giving_way: &GivingWay) -> Duration {
        let mut total = Duration::ZERO;
        loop {
            let wait = giving_way.next_wait();
            if wait.is_zero() {
                return total;
            }
            assert!(wait <= SLICE, "{wait:?}");
            giving_way.waited(wait);
            total += wait;
        }
    }

    #[test]
    fn while_the_api_is_busy_calls_are_followed_by_their_share() {
        let (giving_way, _) = giving_way(0.25);
        giving_way.spent(Duration::from_millis(10));
        giving_way.spent(Duration::from_millis(2));
        // 12 ms of calls in 48 ms: a quarter.
        assert_eq!(owed(&giving_way), Duration::from_millis(36));
        assert_eq!(owed(&giving_way), Duration::ZERO, "paid");
    }

    #[test]
    fn an_idle_api_is_not_given_way_to_and_what_was_owed_is_forgiven() {
        let (giving_way, busy) = giving_way(0.25);
        busy.store(false, Ordering::Relaxed);
        giving_way.spent(Duration::from_millis(10));
        assert_eq!(owed(&giving_way), Duration::ZERO, "spent while idle");
        busy.store(true, Ordering::Relaxed);
        giving_way.spent(Duration::from_millis(10));
        assert_eq!(giving_way.next_wait(), SLICE);
        busy.store(false, Ordering::Relaxed);
        assert_eq!(giving_way.next_wait(), Duration::ZERO, "forgiven");
        busy.store(true, Ordering::Relaxed);
        assert_eq!(owed(&giving_way), Duration::ZERO, "still forgiven");
    }

    #[test]
    fn a_whole_share_nothing_to_give_way_to_or_a_share_out_of_bounds_is_kept_to_its_bounds() {
        let (whole, _) = giving_way(1.0);
        whole.spent(Duration::from_secs(1));
        assert_eq!(owed(&whole), Duration::ZERO);
        let nothing = GivingWay::new(None, 0.25);
        nothing.spent(Duration::from_secs(1));
        assert_eq!(owed(&nothing), Duration::ZERO);
        for share in [f64::NAN, 2.0, f64::INFINITY] {
            let (above, _) = giving_way(share);
            above.spent(Duration::from_secs(1));
            assert_eq!(owed(&above), Duration::ZERO, "{share}");
        }
        // At the least share, a millisecond's call owes 99 ms.
        for share in [0.0, -1.0, f64::NEG_INFINITY] {
            let (below, _) = giving_way(share);
            below.spent(Duration::from_millis(1));
            let owed = owed(&below);
            assert!(owed.abs_diff(Duration::from_millis(99)) < Duration::from_micros(1));
        }
        // A stalled call owes no more than the bound.
        let (slowed, _) = giving_way(0.01);
        slowed.spent(Duration::from_secs(3600));
        slowed.spent(Duration::MAX);
        assert_eq!(owed(&slowed), MAX_OWED);
    }
}
