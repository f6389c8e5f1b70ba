//! How the sender gives way to the API ([`GivingWay`]): while requests are under way (and for a
//! tenth of a second after, as it sees them), it keeps its storage calls to a share of the time.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::MIN_SHARE;
use crate::metric;

/// Whether the API has requests under way; the sender gives way to them (see
/// [`crate::Sender::giving_way_to`]).
pub type Busy = Arc<dyn Fn() -> bool + Send + Sync>;

/// The longest a wait runs before the API's load is looked at again.
const SLICE: Duration = Duration::from_millis(20);
/// How long the API must have had no request under way (as far as the sender saw) for what is
/// owed to be forgiven: a moment between two requests of a steady load is not idleness.
const QUIET: Duration = Duration::from_millis(100);
/// The most waiting owed at once: one storage call slowed by a stalled database keeps the
/// sender back no longer.
const MAX_OWED: Duration = Duration::from_secs(5);

/// While the API is busy, each storage call of `took` is followed, before the next claim, by
/// a wait of `took × (1 − share) / share`: the sender's storage calls (its claims, records,
/// backlog and pruning: the database work its thread's lower CPU priority does not lower) then
/// take at most `share` of the time, and what the database does for the sender is that much
/// less of what the API waits for. The API is busy while a request is under way, and until it
/// has been seen with none for [`QUIET`]. Progress is kept: the sender always gets its share,
/// and claims again at once when the API is idle (what is owed is forgiven). A storage call
/// slowed by the API's own load owes more, so the sender gives way the more the busier the
/// database.
pub(crate) struct GivingWay {
    busy: Option<Busy>,
    share: f64,
    state: Mutex<State>,
}

/// What is owed, and when the API was last seen busy.
#[derive(Default)]
struct State {
    owed: Duration,
    busy_at: Option<Instant>,
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
            state: Mutex::default(),
        }
    }

    /// A storage call that ended at `now` took `took`.
    pub(crate) fn spent(&self, took: Duration, now: Instant) {
        let mut state = self.state();
        if self.share >= 1.0 || !self.busy_lately(&mut state, now) {
            return;
        }
        let wait = took.as_secs_f64() * (1.0 - self.share) / self.share;
        let wait = Duration::try_from_secs_f64(wait).unwrap_or(MAX_OWED);
        state.owed = state.owed.saturating_add(wait).min(MAX_OWED);
    }

    /// How long to wait, at `now`, before the next claim: [`SLICE`] at most (then
    /// [`GivingWay::waited`], and ask again); nothing when nothing is owed, or when the API is
    /// idle (what was owed is then forgiven).
    pub(crate) fn next_wait(&self, now: Instant) -> Duration {
        let mut state = self.state();
        if !state.owed.is_zero() && !self.busy_lately(&mut state, now) {
            state.owed = Duration::ZERO;
        }
        state.owed.min(SLICE)
    }

    /// The sender waited `waited` of what it owed.
    pub(crate) fn waited(&self, waited: Duration) {
        let mut state = self.state();
        state.owed = state.owed.saturating_sub(waited);
    }

    /// Waits what is owed, while the API stays busy; the time waited is recorded
    /// ([`metric::GIVING_WAY_SECONDS`]).
    pub(crate) async fn wait(&self) {
        let mut total = Duration::ZERO;
        loop {
            let wait = self.next_wait(Instant::now());
            if wait.is_zero() {
                break;
            }
            tokio::time::sleep(wait).await;
            self.waited(wait);
            total += wait;
        }
        if !total.is_zero() {
            metrics::histogram!(metric::GIVING_WAY_SECONDS).record(total.as_secs_f64());
        }
    }

    /// Whether the API is busy at `now`: a request under way, or one seen less than [`QUIET`]
    /// before.
    fn busy_lately(&self, state: &mut State, now: Instant) -> bool {
        if self.busy.as_ref().is_some_and(|busy| busy()) {
            state.busy_at = Some(now);
            return true;
        }
        state
            .busy_at
            .is_some_and(|at| now.saturating_duration_since(at) < QUIET)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Waits out what is owed at `now` as the sender does, without sleeping; the total.
    fn owed(giving_way: &GivingWay, now: Instant) -> Duration {
        let mut total = Duration::ZERO;
        loop {
            let wait = giving_way.next_wait(now);
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
        let now = Instant::now();
        let (giving_way, _) = giving_way(0.25);
        giving_way.spent(Duration::from_millis(10), now);
        giving_way.spent(Duration::from_millis(2), now);
        // 12 ms of calls in 48 ms: a quarter.
        assert_eq!(owed(&giving_way, now), Duration::from_millis(36));
    }

    #[test]
    fn what_is_owed_is_forgiven_once_the_api_has_been_idle_a_while() {
        let now = Instant::now();
        let (giving_way, busy) = giving_way(0.25);
        busy.store(false, Ordering::Relaxed);
        giving_way.spent(Duration::from_millis(10), now);
        assert_eq!(owed(&giving_way, now), Duration::ZERO, "never seen busy");
        busy.store(true, Ordering::Relaxed);
        giving_way.spent(Duration::from_millis(10), now);
        busy.store(false, Ordering::Relaxed);
        // A moment between two requests is not idleness: owed, and more owed.
        let between = now + QUIET / 2;
        assert_eq!(giving_way.next_wait(between), SLICE);
        giving_way.spent(Duration::from_millis(10), between);
        assert_eq!(
            giving_way.next_wait(now + QUIET),
            Duration::ZERO,
            "forgiven"
        );
        // Forgiven: a call seen busy again owes its own wait alone.
        busy.store(true, Ordering::Relaxed);
        giving_way.spent(Duration::from_millis(10), now + QUIET);
        assert_eq!(owed(&giving_way, now + QUIET), Duration::from_millis(30));
    }

    #[test]
    fn a_whole_share_nothing_to_give_way_to_or_a_share_out_of_bounds_is_kept_to_its_bounds() {
        let now = Instant::now();
        let (whole, _) = giving_way(1.0);
        whole.spent(Duration::from_secs(1), now);
        assert_eq!(owed(&whole, now), Duration::ZERO);
        let nothing = GivingWay::new(None, 0.25);
        nothing.spent(Duration::from_secs(1), now);
        assert_eq!(owed(&nothing, now), Duration::ZERO);
        for share in [f64::NAN, 2.0, f64::INFINITY] {
            let (above, _) = giving_way(share);
            above.spent(Duration::from_secs(1), now);
            assert_eq!(owed(&above, now), Duration::ZERO, "{share}");
        }
        // At the least share, a millisecond's call owes 99 ms.
        for share in [0.0, -1.0, f64::NEG_INFINITY] {
            let (below, _) = giving_way(share);
            below.spent(Duration::from_millis(1), now);
            let owed = owed(&below, now);
            assert!(owed.abs_diff(Duration::from_millis(99)) < Duration::from_micros(1));
        }
        // A stalled call owes no more than the bound.
        let (slowed, _) = giving_way(0.01);
        slowed.spent(Duration::from_secs(3600), now);
        slowed.spent(Duration::MAX, now);
        assert_eq!(owed(&slowed, now), MAX_OWED);
    }

    /// The sender's wait sleeps what is owed (never less: a lower bound only).
    #[tokio::test]
    async fn the_wait_sleeps_what_is_owed() {
        let (giving_way, _) = giving_way(0.5);
        giving_way.spent(Duration::from_millis(30), Instant::now());
        let started = Instant::now();
        giving_way.wait().await;
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
