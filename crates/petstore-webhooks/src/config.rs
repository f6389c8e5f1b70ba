//! [`SenderConfig`]: how a sender works (where deliveries may go, its attempts' timeout, how
//! many at once, how often it looks, how long the log is kept, its share of a busy API's time),
//! and the bounds derived from it.

use std::time::Duration;

use petstore_domain::webhook::UrlPolicy;

/// The least [`SenderConfig::share`] kept: below it, a sender could be kept back by far more than
/// its calls take.
pub const MIN_SHARE: f64 = 0.01;

/// How the sender works.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderConfig {
    /// Where deliveries may go.
    pub policy: UrlPolicy,
    /// How long an attempt may take, connection included (15 s by default): no answer in time
    /// is a failure.
    pub timeout: Duration,
    /// Most deliveries sent at once by this instance. One owner (a key, or the operators) has
    /// at most half of them under way ([`SenderConfig::per_owner`]).
    pub concurrency: usize,
    /// How often to look for due deliveries when none was found.
    pub poll: Duration,
    /// How long ended deliveries stay in the log before they are pruned.
    pub retention: Duration,
    /// While the API has requests under way (and for a tenth of a second after), the most of the
    /// time the sender's storage calls take (a quarter by default; from [`MIN_SHARE`] to 1, which
    /// never gives way): see [`crate::Sender::giving_way_to`].
    pub share: f64,
}

impl Default for SenderConfig {
    /// 15 s per attempt, 32 at once (16 of one owner's), a look every second, a log of 30
    /// days, a quarter of the time while the API is busy.
    fn default() -> Self {
        Self {
            policy: UrlPolicy::default(),
            timeout: Duration::from_secs(15),
            concurrency: 32,
            poll: Duration::from_secs(1),
            retention: Duration::from_secs(30 * 24 * 3600),
            share: 0.25,
        }
    }
}

impl SenderConfig {
    /// How long a claimed delivery is held: twice the attempt's timeout and five seconds, so
    /// that a live sender records its attempt well before another may claim it.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(5)
    }

    /// The most attempts of one owner's deliveries under way at once: half the slots (at least
    /// one), so that one owner's slow or dead receivers leave the other half to everyone else,
    /// whom claims take in turn.
    pub fn per_owner(&self) -> usize {
        (self.concurrency / 2).max(1)
    }

    /// Slots only an owner with no attempt under way may take: an eighth (4 of the default
    /// 32), none below 8 slots.
    pub fn reserve(&self) -> usize {
        self.concurrency / 8
    }
}
