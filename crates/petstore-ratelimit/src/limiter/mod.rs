//! [`Limiter`]: counts a request against its subject's limits, decides, and starts bans.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use petstore_domain::{Ban, BanPolicy, RateDecision, RateLimits, async_trait};

use crate::policy::first_in_10_seconds;
use crate::store::BoxError;
use crate::{
    AddressPolicy, BanStarted, CounterError, CounterStore, FailurePolicy, Hit, MemoryCounters,
    Subject, metric,
};

#[cfg(test)]
mod tests;

/// Who is asking, as the limiter sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    /// Whom the request is counted against.
    pub subject: Subject,
    /// The subject's limits.
    pub limits: RateLimits,
    /// For a key: its current or most recent ban, as kept with the key (it feeds the next
    /// ban's length). Address bans live in the counter store instead.
    pub ban: Option<Ban>,
}

/// The limiter's verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within limits: serve it.
    Allowed(RateDecision),
    /// Over a limit: `429 rate_limited`.
    Limited(RateDecision),
    /// Banned (now, or by this very request): `429 temporarily_banned` until the ban ends.
    Banned(Ban),
}

/// Where a request was counted: what takes it back if it is answered `304`
/// ([`Limiter::revalidated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// In the counter store.
    Store,
    /// In the in-memory fallback, while the counter store failed.
    Fallback,
    /// Nowhere: refused by a ban in force before anything was counted.
    Uncounted,
}

/// The limiter could not decide.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// The counter store failed and the policy is to fail closed.
    #[error(transparent)]
    Counters(#[from] CounterError),
    /// A key crossed the ban threshold but the ban could not be recorded.
    #[error("a ban of key {key} could not be recorded")]
    BanNotRecorded {
        /// The key's id.
        key: i64,
        /// The refused request's counts, for its headers.
        decision: RateDecision,
        /// Whole seconds until the refused request could succeed (its `Retry-After`).
        retry_after: u64,
        /// Why.
        #[source]
        source: BoxError,
    },
}

/// A subject's ban in force once a request crossed the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BanInForce {
    /// The ban.
    pub ban: Ban,
    /// Whether that request started it; not when one was in force already (a request before
    /// it, on this instance or another, started it).
    pub started: bool,
}

/// Where key bans are kept (with the keys, so every instance and the operators see them).
#[async_trait(?Send)]
pub trait KeyBans {
    /// Records `ban` of key `id`, unless a ban is already in force at `now` (another request
    /// may just have imposed one), and returns the key's ban in force afterwards.
    async fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<Option<BanInForce>, BoxError>;
}

/// Counts requests and decides; shared by every worker.
pub struct Limiter {
    counters: Box<dyn CounterStore>,
    /// Used when `counters` fails under [`FailurePolicy::Open`]; `None` when `counters` is
    /// already in memory.
    fallback: Option<MemoryCounters>,
    on_failure: FailurePolicy,
    bans: BanPolicy,
    /// Limits for requests without a valid key (per client address).
    anonymous: RateLimits,
    addresses: AddressPolicy,
    failures: AtomicU64,
    last_warning: AtomicU64,
}

impl Limiter {
    /// A limiter counting in this process only.
    pub fn in_memory(bans: BanPolicy, anonymous: RateLimits, addresses: AddressPolicy) -> Self {
        let counters = MemoryCounters::new(bans.forgive_after_seconds, addresses.max_addresses);
        // Closed: memory does not fail, and needs no fallback.
        Self::shared(
            Box::new(counters),
            FailurePolicy::Closed,
            bans,
            anonymous,
            addresses,
        )
    }

    /// A limiter counting in a shared store, with a policy for when that store fails.
    pub fn shared(
        counters: Box<dyn CounterStore>,
        on_failure: FailurePolicy,
        bans: BanPolicy,
        anonymous: RateLimits,
        addresses: AddressPolicy,
    ) -> Self {
        let fallback = (on_failure == FailurePolicy::Open)
            .then(|| MemoryCounters::new(bans.forgive_after_seconds, addresses.max_addresses));
        Self {
            counters,
            fallback,
            on_failure,
            bans,
            anonymous,
            addresses,
            failures: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
        }
    }

    /// Whether the counter store answers now, readying it for requests: for a start-up check
    /// that tells a configuration that cannot work (a certificate refused) from a store that is
    /// only down for now.
    pub async fn ping(&self) -> Result<(), CounterError> {
        self.counters.ping().await
    }

    /// The subject a request from `ip` without a valid key is counted against.
    pub fn address_subject(&self, ip: IpAddr) -> Subject {
        self.addresses.subject(ip)
    }

    /// The limits of requests without a valid key.
    pub fn anonymous_limits(&self) -> RateLimits {
        self.anonymous
    }

    /// How many times the counter store has failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Counts one request of `account` at `now` and decides; says where it was counted. A
    /// refusal that crosses the ban threshold starts a ban: an address's in the counter store,
    /// a key's through `key_bans`.
    pub async fn check(
        &self,
        account: &Account,
        now: u64,
        key_bans: &dyn KeyBans,
    ) -> Result<(Verdict, Tally), LimitError> {
        if let Some(ban) = account.ban.filter(|ban| ban.until > now) {
            return Ok((Verdict::Banned(ban), Tally::Uncounted));
        }
        let (hit, tally) = self.hit(account.subject, account.limits, now).await?;
        let verdict = self.decide(account, hit, now, key_bans).await?;
        Ok((verdict, tally))
    }

    /// The verdict on a request whose count is `hit`.
    async fn decide(
        &self,
        account: &Account,
        hit: Hit,
        now: u64,
        key_bans: &dyn KeyBans,
    ) -> Result<Verdict, LimitError> {
        let (counts, previous_ban) = match hit {
            Hit::Banned(ban) => return Ok(Verdict::Banned(ban)),
            Hit::Counted {
                counts,
                previous_ban,
            } => (counts, previous_ban),
        };
        let decision = RateDecision::new(counts, account.limits, now);
        if decision.allowed {
            return Ok(Verdict::Allowed(decision));
        }
        if !self.bans.triggers(&decision) {
            return Ok(Verdict::Limited(decision));
        }
        let subject = account.subject;
        let ban = match subject {
            Subject::Key(id) => {
                let ban = self.bans.next_ban(account.ban, now);
                match key_bans.ban_key(id, ban, now).await {
                    Ok(Some(ban)) => {
                        if ban.started {
                            // A failure is noted; the ban itself is kept with the key.
                            let _ = self.start_ban(subject, None, now).await;
                        }
                        ban
                    }
                    Ok(None) => {
                        let source = format!("key {id} has no ban in force after recording one");
                        return Err(LimitError::BanNotRecorded {
                            key: id,
                            decision,
                            retry_after: decision.retry_after(now),
                            source: source.into(),
                        });
                    }
                    Err(source) => {
                        return Err(LimitError::BanNotRecorded {
                            key: id,
                            decision,
                            retry_after: decision.retry_after(now),
                            source,
                        });
                    }
                }
            }
            Subject::Address(_) => {
                let ban = self.bans.next_ban(previous_ban, now);
                // An error: recorded nowhere (the store failed, and the policy is to fail closed).
                match self.start_ban(subject, Some(ban), now).await? {
                    None => BanInForce { ban, started: true },
                    Some(in_force) => BanInForce {
                        ban: in_force,
                        started: false,
                    },
                }
            }
        };
        let BanInForce { ban, started } = ban;
        if started {
            metrics::counter!(metric::RATE_LIMIT_BANS, "subject" => subject.kind()).increment(1);
            log::warn!(
                "{subject} banned until {} (ban #{} in a row) for requests after 429s",
                ban.until,
                ban.level
            );
        }
        Ok(Verdict::Banned(ban))
    }

    /// The caller's standing at `now` without counting the request: `Banned` when banned (so a
    /// banned caller still gets its `429`), else `Allowed` with the current counts (whether or
    /// not a window is used up). For `GET {base}/rate_limit`.
    pub async fn peek(&self, account: &Account, now: u64) -> Result<Verdict, LimitError> {
        if let Some(ban) = account
            .ban
            .filter(|ban| ban.until > now)
            .or_else(|| self.fallback_ban(account.subject, now))
        {
            return Ok(Verdict::Banned(ban));
        }
        let hit = match self
            .counters
            .peek(account.subject, account.limits, now)
            .await
        {
            Ok(hit) => hit,
            Err(error) => {
                self.note_failure(&error, now);
                match &self.fallback {
                    Some(fallback) => fallback.peek_now(account.subject, account.limits, now),
                    None => return Err(LimitError::Counters(error)),
                }
            }
        };
        Ok(match hit {
            Hit::Banned(ban) => Verdict::Banned(ban),
            Hit::Counted { counts, .. } => {
                Verdict::Allowed(RateDecision::new(counts, account.limits, now))
            }
        })
    }

    /// A request of `account` counted at `now` where `tally` says was answered `304 Not
    /// Modified`: takes it back from the counts there while the subject has free revalidations
    /// left in the minute and the day ([`RateLimits::free_revalidations`]). Whether it was
    /// taken back; a store that fails leaves it counted (the failure is noted like any other).
    pub async fn revalidated(&self, account: &Account, now: u64, tally: Tally) -> bool {
        let allowance = account.limits.free_revalidations();
        match (tally, &self.fallback) {
            (Tally::Store, _) => match self
                .counters
                .revalidated(account.subject, allowance, now)
                .await
            {
                Ok(taken_back) => taken_back,
                Err(error) => {
                    self.note_failure(&error, now);
                    false
                }
            },
            (Tally::Fallback, Some(fallback)) => {
                fallback.revalidated_now(account.subject, allowance, now)
            }
            (Tally::Fallback, None) | (Tally::Uncounted, _) => false,
        }
    }

    /// An address's ban that the fallback holds: in force whatever the store says, which does
    /// not know of a ban it failed to start (the fallback keeps those, and copies of the
    /// store's while it has room).
    fn fallback_ban(&self, subject: Subject, now: u64) -> Option<Ban> {
        match (subject, &self.fallback) {
            (Subject::Address(_), Some(fallback)) => fallback.ban_in_force(subject, now),
            _ => None,
        }
    }

    /// Counts in the counter store, or in the fallback while it fails (fail open); an address
    /// banned in the fallback ([`Self::fallback_ban`]) is not counted.
    async fn hit(
        &self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> Result<(Hit, Tally), CounterError> {
        if let Some(ban) = self.fallback_ban(subject, now) {
            return Ok((Hit::Banned(ban), Tally::Uncounted));
        }
        match self.counters.hit(subject, limits, now).await {
            Ok(hit) => Ok((hit, Tally::Store)),
            Err(error) => {
                self.note_failure(&error, now);
                match &self.fallback {
                    Some(fallback) => {
                        metrics::counter!(metric::RATE_LIMIT_FALLBACKS).increment(1);
                        Ok((fallback.hit_now(subject, limits, now), Tally::Fallback))
                    }
                    None => Err(error),
                }
            }
        }
    }

    /// Starts a ban in the counter store, and copies it to the fallback while there is room (so
    /// that an address ban holds during an outage too: the store's ban in force where it found
    /// one); when the store fails, starts it in the fallback, which then keeps it whatever its
    /// budget. `ban` is `None` for keys, whose bans are kept with the key. The ban already in
    /// force, if any ([`CounterStore::start_ban`]): the counter store's answer, or while it
    /// fails, the fallback's; an error when it fails and there is no fallback.
    async fn start_ban(&self, subject: Subject, ban: Option<Ban>, now: u64) -> BanStarted {
        let stored = self.counters.start_ban(subject, ban, now).await;
        match (stored, &self.fallback) {
            (Ok(in_force), Some(fallback)) => {
                fallback.copy_ban_now(subject, in_force.or(ban), now);
                Ok(in_force)
            }
            (Ok(in_force), None) => Ok(in_force),
            (Err(error), fallback) => {
                self.note_failure(&error, now);
                match fallback {
                    Some(fallback) => Ok(fallback.start_ban_now(subject, ban, now)),
                    None => Err(error),
                }
            }
        }
    }

    /// Counts the failure; logs at most one warning every 10 seconds.
    fn note_failure(&self, error: &CounterError, now: u64) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        metrics::counter!(metric::RATE_LIMIT_REDIS_ERRORS).increment(1);
        if first_in_10_seconds(&self.last_warning, now) {
            let action = match self.on_failure {
                FailurePolicy::Open => "serving with per-instance counters",
                FailurePolicy::Closed => "answering 503",
            };
            log::warn!(
                "{}; {action} ({failures} failures so far)",
                petstore_domain::error::Chain(error)
            );
        }
    }
}
