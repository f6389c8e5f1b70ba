//! Per-plan rate limits with temporary bans (interface section 8; `docs/rate-limits.md`).
//!
//! Requests are counted per subject: an API key's id, or a client address, in two fixed
//! windows aligned to the UTC minute and day (the arithmetic is in
//! `petstore_domain::rate_limit`). Counters live behind [`CounterStore`]: in process
//! ([`MemoryCounters`], exact for one instance) or in Redis ([`RedisCounters`], exact across
//! instances). [`Limiter::check`] decides, and starts bans; [`headers`] writes the response
//! fields.
//!
//! This module knows counters, limits and client addresses, not where subjects come from: it
//! does not authenticate and does not reach the database. Key bans are kept wherever the caller
//! keeps keys, through the [`KeyBans`] it passes in.

mod address;
pub mod headers;
mod memory;
mod redis;

use std::error::Error;
use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::LocalBoxFuture;
use ipnet::Ipv6Net;
use petstore_domain::{Ban, BanPolicy, Counts, RateDecision, RateLimits};

pub use address::{ForwardedHeader, TrustedProxies};
pub use headers::{HeaderCache, LimitHeaders};
pub use memory::MemoryCounters;
pub use redis::RedisCounters;

use crate::report::Chain;
use crate::telemetry::metric;

type BoxError = Box<dyn Error + Send + Sync>;

/// Who a request is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An API key, by id.
    Key(i64),
    /// A client address, for requests without a valid key.
    Address(IpAddr),
}

impl Subject {
    /// `key` or `address`: the `subject` label of the rate-limit metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Key(_) => "key",
            Self::Address(_) => "address",
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key(id) => write!(f, "key:{id}"),
            Self::Address(ip) => write!(f, "addr:{ip}"),
        }
    }
}

/// What a counter store says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The subject is banned (bans of addresses live in the counter store); nothing was counted.
    Banned(Ban),
    /// The request was considered: counted if both windows had room, refused otherwise.
    Counted {
        /// The counts after this request.
        counts: Counts,
        /// The subject's last ban in the store, ended, kept for escalation.
        previous_ban: Option<Ban>,
    },
}

/// The counter store could not answer.
#[derive(Debug, thiserror::Error)]
#[error("the rate-limit store is unavailable")]
pub struct CounterError(#[source] BoxError);

impl CounterError {
    /// A failure caused by `source`.
    pub fn new(source: impl Into<BoxError>) -> Self {
        Self(source.into())
    }
}

/// Where counters live. Each call is atomic for its subject: concurrent calls never count more
/// than the limits between them.
pub trait CounterStore: Send + Sync + 'static {
    /// Counts one request for `subject` at `now` (Unix seconds) if both windows of `limits`
    /// have room; refusals are counted too, per minute. A banned subject is not counted.
    fn hit<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>>;

    /// What [`Self::hit`] would find, without counting anything: the subject's counts now (its
    /// ban, if banned). For the rate-limit status, which spends nothing.
    fn peek<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>>;

    /// Whether the store answers now, readying what requests will use (a start-up check; in
    /// memory, always).
    fn ping(&self) -> LocalBoxFuture<'_, Result<(), CounterError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// A ban of `subject` starts: forgets its refusals in the current minute (so that, once the
    /// ban ends or is lifted, only new refusals count towards the next one) and, for an address,
    /// records the ban (key bans are kept with the key, in the database). An address's ban is
    /// not started while one is in force at `now` (requests counted together, or on several
    /// instances, cross the threshold together): nothing changes, and the ban in force is the
    /// answer. `None` when this call started it (for a key, always).
    fn start_ban<'a>(
        &'a self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Option<Ban>, CounterError>>;
}

/// What to do when the counter store is unreachable (`--rate-limit-on-failure open|closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailurePolicy {
    /// Serve, counting in this instance's memory until the store is back (limits then hold per
    /// instance instead of across instances), and log it.
    Open,
    /// Answer `503 service_unavailable` until the store is back.
    Closed,
}

/// Whether a warning may be logged at `now` (Unix seconds): at most one every 10 seconds per
/// `last` (which it updates), so an outage or a flood writes a line, not one per request.
fn first_in_10_seconds(last: &AtomicU64, now: u64) -> bool {
    let previous = last.load(Ordering::Relaxed);
    now >= previous + 10
        && last
            .compare_exchange(previous, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// How anonymous clients are told apart and how many the limiter keeps count of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    /// IPv6 clients are counted per prefix of this length (one host owns a /64, so counting
    /// per address would let it make up 2^64 clients). 128: per address.
    pub ipv6_prefix: u8,
    /// Most client addresses counted in memory at once (see [`MemoryCounters`]).
    pub max_addresses: usize,
}

impl Default for AddressPolicy {
    /// Per /64; 50,000 addresses, a bound chosen from the memory a flood of made-up addresses
    /// was measured to take (docs/performance.md, "Memory under a flood").
    fn default() -> Self {
        Self {
            ipv6_prefix: 64,
            max_addresses: 50_000,
        }
    }
}

impl AddressPolicy {
    /// The subject a request from `ip` without a valid key is counted against.
    pub fn subject(&self, ip: IpAddr) -> Subject {
        // `::ffff:192.0.2.1` (an IPv4 client on a dual-stack listener) is that IPv4 client.
        Subject::Address(match ip.to_canonical() {
            v4 @ IpAddr::V4(_) => v4,
            // The prefix is at most 128 (clamped): `new` cannot refuse it.
            IpAddr::V6(v6) => Ipv6Net::new(v6, self.ipv6_prefix.min(128))
                .map_or(v6, |block| block.network())
                .into(),
        })
    }
}

/// A caller's standing, read without counting, for the rate-limit status response (put in the
/// request's extensions by admission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    /// Both windows now.
    pub decision: RateDecision,
    /// The caller's limits.
    pub limits: RateLimits,
}

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
pub trait KeyBans {
    /// Records `ban` of key `id`, unless a ban is already in force at `now` (another request
    /// may just have imposed one), and returns the key's ban in force afterwards.
    fn ban_key(
        &self,
        id: i64,
        ban: Ban,
        now: u64,
    ) -> LocalBoxFuture<'_, Result<Option<BanInForce>, BoxError>>;
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
    headers: HeaderCache,
    failures: AtomicU64,
    last_warning: AtomicU64,
}

impl Limiter {
    /// A limiter counting in this process only.
    pub fn in_memory(bans: BanPolicy, anonymous: RateLimits, addresses: AddressPolicy) -> Self {
        let counters = MemoryCounters::new(bans.forgive_after_seconds, addresses.max_addresses);
        Self::with_counters(
            Box::new(counters),
            None,
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
        Self::with_counters(counters, fallback, on_failure, bans, anonymous, addresses)
    }

    /// Whether the counter store answers now, readying it for requests: for a start-up check
    /// that tells a configuration that cannot work (a certificate refused) from a store that is
    /// only down for now.
    pub async fn ping(&self) -> Result<(), CounterError> {
        self.counters.ping().await
    }

    fn with_counters(
        counters: Box<dyn CounterStore>,
        fallback: Option<MemoryCounters>,
        on_failure: FailurePolicy,
        bans: BanPolicy,
        anonymous: RateLimits,
        addresses: AddressPolicy,
    ) -> Self {
        Self {
            counters,
            fallback,
            on_failure,
            bans,
            anonymous,
            addresses,
            headers: HeaderCache::default(),
            failures: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
        }
    }

    /// The subject a request from `ip` without a valid key is counted against.
    pub fn address_subject(&self, ip: IpAddr) -> Subject {
        self.addresses.subject(ip)
    }

    /// The limits of requests without a valid key.
    pub fn anonymous_limits(&self) -> RateLimits {
        self.anonymous
    }

    /// The header values fixed by `limits` (built once per distinct limits).
    pub fn limit_headers(&self, limits: RateLimits) -> LimitHeaders {
        self.headers.get(limits)
    }

    /// How many times the counter store has failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Counts one request of `account` at `now` and decides. A refusal that crosses the ban
    /// threshold starts a ban: an address's in the counter store, a key's through `key_bans`.
    pub async fn check(
        &self,
        account: &Account,
        now: u64,
        key_bans: &dyn KeyBans,
    ) -> Result<Verdict, LimitError> {
        if let Some(ban) = account.ban.filter(|ban| ban.until > now) {
            return Ok(Verdict::Banned(ban));
        }
        let (counts, previous_ban) = match self.hit(account.subject, account.limits, now).await? {
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
                            source: source.into(),
                        });
                    }
                    Err(source) => {
                        return Err(LimitError::BanNotRecorded {
                            key: id,
                            decision,
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
    ) -> Result<Hit, CounterError> {
        if let Some(ban) = self.fallback_ban(subject, now) {
            return Ok(Hit::Banned(ban));
        }
        match self.counters.hit(subject, limits, now).await {
            Ok(hit) => Ok(hit),
            Err(error) => {
                self.note_failure(&error, now);
                match &self.fallback {
                    Some(fallback) => {
                        metrics::counter!(metric::RATE_LIMIT_FALLBACKS).increment(1);
                        Ok(fallback.hit_now(subject, limits, now))
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
    async fn start_ban(
        &self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> Result<Option<Ban>, CounterError> {
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
            log::warn!("{}; {action} ({failures} failures so far)", Chain(error));
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    const NOW: u64 = 1_700_000_000;
    const LIMITS: RateLimits = RateLimits {
        per_minute: 1,
        per_day: 100,
    };
    /// Two refusals in a minute are tolerated; the third starts a ban of 300 seconds.
    const BANS: BanPolicy = BanPolicy {
        threshold: 2,
        base_seconds: 300,
        max_seconds: 3_600,
        forgive_after_seconds: 3_600,
    };
    const FIRST_BAN: Ban = Ban {
        until: NOW + BANS.base_seconds,
        level: 1,
    };

    /// A shared store that counts (in memory) but fails to start a ban: the store failing
    /// between a request's count and its ban.
    struct BanStartFails(MemoryCounters);

    impl CounterStore for BanStartFails {
        fn hit<'a>(
            &'a self,
            subject: Subject,
            limits: RateLimits,
            now: u64,
        ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
            self.0.hit(subject, limits, now)
        }

        fn peek<'a>(
            &'a self,
            subject: Subject,
            limits: RateLimits,
            now: u64,
        ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
            self.0.peek(subject, limits, now)
        }

        fn start_ban<'a>(
            &'a self,
            _: Subject,
            _: Option<Ban>,
            _: u64,
        ) -> LocalBoxFuture<'a, Result<Option<Ban>, CounterError>> {
            Box::pin(std::future::ready(Err(CounterError::new(
                "connection reset by peer",
            ))))
        }
    }

    fn limiter(on_failure: FailurePolicy) -> Limiter {
        let counters = MemoryCounters::new(BANS.forgive_after_seconds, 100);
        Limiter::shared(
            Box::new(BanStartFails(counters)),
            on_failure,
            BANS,
            LIMITS,
            AddressPolicy::default(),
        )
    }

    /// What the keys' storage does with a key's ban.
    enum KeyStorage {
        /// Records it.
        Records,
        /// Answers, but has no ban in force after recording it.
        Loses,
        /// Fails.
        Fails,
    }

    impl KeyBans for KeyStorage {
        fn ban_key(
            &self,
            _: i64,
            ban: Ban,
            _: u64,
        ) -> LocalBoxFuture<'_, Result<Option<BanInForce>, BoxError>> {
            let answer = match self {
                Self::Records => Ok(Some(BanInForce { ban, started: true })),
                Self::Loses => Ok(None),
                Self::Fails => Err("database is locked".into()),
            };
            Box::pin(std::future::ready(answer))
        }
    }

    /// The verdict on a request of `account` at `now` (every future here is ready at once: the
    /// counters are in memory).
    fn verdict(
        limiter: &Limiter,
        account: &Account,
        key_bans: &KeyStorage,
        now: u64,
    ) -> Result<Verdict, LimitError> {
        limiter
            .check(account, now, key_bans)
            .now_or_never()
            .expect("in memory, a decision is ready at once")
    }

    /// The verdicts on `requests` requests of `account` at [`NOW`].
    fn verdicts(
        limiter: &Limiter,
        account: &Account,
        key_bans: &KeyStorage,
        requests: usize,
    ) -> Vec<Result<Verdict, LimitError>> {
        (0..requests)
            .map(|_| verdict(limiter, account, key_bans, NOW))
            .collect()
    }

    /// One allowed request, then the two refusals the policy tolerates.
    fn assert_allowed_then_limited(verdicts: &[Result<Verdict, LimitError>]) {
        assert!(
            matches!(verdicts[0], Ok(Verdict::Allowed(_))),
            "{verdicts:?}"
        );
        for verdict in &verdicts[1..3] {
            assert!(matches!(verdict, Ok(Verdict::Limited(_))), "{verdicts:?}");
        }
    }

    fn address() -> Account {
        Account {
            subject: Subject::Address("192.0.2.7".parse().expect("ip")),
            limits: LIMITS,
            ban: None,
        }
    }

    fn key() -> Account {
        Account {
            subject: Subject::Key(42),
            limits: LIMITS,
            ban: None,
        }
    }

    #[test]
    fn an_address_ban_the_store_cannot_start_is_a_refusal_when_failing_closed() {
        let limiter = limiter(FailurePolicy::Closed);
        let verdicts = verdicts(&limiter, &address(), &KeyStorage::Records, 5);
        assert_allowed_then_limited(&verdicts);
        // Never served: the request that crosses the threshold, and every one after it while
        // the store cannot record the ban, is refused as the store's failure.
        for verdict in &verdicts[3..] {
            assert!(
                matches!(verdict, Err(LimitError::Counters(_))),
                "{verdicts:?}"
            );
        }
        assert_eq!(limiter.failures.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn an_address_ban_the_store_cannot_start_holds_in_memory_when_failing_open() {
        let limiter = limiter(FailurePolicy::Open);
        let verdicts = verdicts(&limiter, &address(), &KeyStorage::Records, 5);
        assert_allowed_then_limited(&verdicts);
        // Started in this instance's memory, and the same ban (not a longer one) after it:
        // the next request is not counted in the store, which knows of no ban.
        for verdict in &verdicts[3..] {
            assert_eq!(verdict.as_ref().ok(), Some(&Verdict::Banned(FIRST_BAN)));
        }
        assert_eq!(limiter.failures.load(Ordering::Relaxed), 1);
        // It holds to its end, in the next minutes too, when the store's counts start afresh.
        for now in [NOW + 60, FIRST_BAN.until - 1] {
            let later = verdict(&limiter, &address(), &KeyStorage::Records, now);
            assert_eq!(later.ok(), Some(Verdict::Banned(FIRST_BAN)), "at {now}");
        }
        let after = verdict(&limiter, &address(), &KeyStorage::Records, FIRST_BAN.until);
        assert!(matches!(after, Ok(Verdict::Allowed(_))), "{after:?}");
    }

    #[test]
    fn a_key_ban_is_kept_with_the_key_when_the_store_cannot_start_it() {
        let limiter = limiter(FailurePolicy::Closed);
        let verdicts = verdicts(&limiter, &key(), &KeyStorage::Records, 4);
        assert_allowed_then_limited(&verdicts);
        // Whatever the failure policy: the ban is in the keys' storage, the store's failure
        // only noted.
        assert_eq!(verdicts[3].as_ref().ok(), Some(&Verdict::Banned(FIRST_BAN)));
        assert_eq!(limiter.failures.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_key_ban_the_keys_storage_does_not_keep_is_a_refusal_with_the_counts() {
        for storage in [KeyStorage::Fails, KeyStorage::Loses] {
            let limiter = limiter(FailurePolicy::Open);
            let verdicts = verdicts(&limiter, &key(), &storage, 4);
            assert_allowed_then_limited(&verdicts);
            match &verdicts[3] {
                Err(LimitError::BanNotRecorded { key, decision, .. }) => {
                    assert_eq!(*key, 42);
                    assert!(!decision.allowed);
                    assert_eq!(decision.rejected, 3);
                }
                other => panic!("expected BanNotRecorded, got {other:?}"),
            }
            // The counter store did not fail.
            assert_eq!(limiter.failures.load(Ordering::Relaxed), 0);
        }
    }

    #[test]
    fn ipv6_clients_are_counted_per_prefix_and_ipv4_per_address() {
        let policy = AddressPolicy::default();
        let ip = |text: &str| text.parse::<IpAddr>().expect("ip");
        assert_eq!(
            policy.subject(ip("2001:db8:1:2:aaaa::1")),
            policy.subject(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        );
        assert_ne!(
            policy.subject(ip("2001:db8:1:2::1")),
            policy.subject(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            policy.subject(ip("2001:db8:1:2::1")),
            Subject::Address(ip("2001:db8:1:2::"))
        );
        assert_ne!(
            policy.subject(ip("192.0.2.1")),
            policy.subject(ip("192.0.2.2"))
        );
        let exact = AddressPolicy {
            ipv6_prefix: 128,
            ..policy
        };
        assert_ne!(
            exact.subject(ip("2001:db8::1")),
            exact.subject(ip("2001:db8::2"))
        );
        let all = AddressPolicy {
            ipv6_prefix: 0,
            ..policy
        };
        assert_eq!(all.subject(ip("2001:db8::1")), all.subject(ip("ffff::1")));
    }
}
