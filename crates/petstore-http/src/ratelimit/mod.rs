//! Per-plan rate limits with temporary bans (interface section 8; `docs/rate-limits.md`).
//!
//! Requests are counted per API key, or per client address when no valid key is sent, in two
//! fixed windows aligned to the UTC minute and day (the arithmetic is in
//! `petstore_domain::rate_limit`). Counters live behind [`CounterStore`]: in process
//! ([`MemoryCounters`], exact for one instance) or in Redis ([`RedisCounters`], exact across
//! instances). [`gate`] is the middleware that applies all of it and writes the headers.

mod address;
mod gate;
mod headers;
mod memory;
mod redis;

use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::LocalBoxFuture;
use petstore_domain::{Ban, BanPolicy, Counts, RateDecision, RateLimits};

pub use address::TrustedProxies;
pub use gate::gate;
pub(crate) use headers::LimitHeaders;
pub use memory::MemoryCounters;
pub use redis::RedisCounters;

use crate::ApiError;

/// Who a request is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An API key, by id.
    Key(i64),
    /// A client address, for requests without a valid key.
    Address(IpAddr),
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
#[error("rate-limit store unavailable: {0}")]
pub struct CounterError(pub String);

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

    /// A ban of `subject` starts: forgets its refusals in the current minute (so that, once the
    /// ban ends or is lifted, only new refusals count towards the next one) and, for an address,
    /// records the ban (key bans are kept with the key, in the database).
    fn start_ban<'a>(
        &'a self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<(), CounterError>>;
}

/// What to do when the counter store is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailurePolicy {
    /// Serve, counting in this instance's memory until the store is back (limits then hold per
    /// instance instead of across instances), and log it.
    Open,
    /// Answer `503 service_unavailable` until the store is back.
    Closed,
}

/// The limiter's verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within limits.
    Allowed(RateDecision),
    /// Over a limit: `429 rate_limited`. `previous_ban` feeds the ban escalation.
    Limited {
        /// The decision, with both windows.
        decision: RateDecision,
        /// The subject's last (ended) ban, if the store remembers one.
        previous_ban: Option<Ban>,
    },
    /// Banned: `429 temporarily_banned` until the ban ends.
    Banned(Ban),
}

/// Counts requests and decides; shared by every worker.
pub struct Limiter {
    counters: Box<dyn CounterStore>,
    /// Used when `counters` fails under [`FailurePolicy::Open`]; `None` when `counters` is
    /// already in memory.
    fallback: Option<MemoryCounters>,
    on_failure: FailurePolicy,
    /// When a client is banned, and for how long.
    pub bans: BanPolicy,
    /// Limits for requests without a valid key (per client address), and their fixed headers.
    anonymous: RateLimits,
    anonymous_headers: LimitHeaders,
    failures: AtomicU64,
    last_warning: AtomicU64,
}

impl Limiter {
    /// A limiter counting in this process only.
    pub fn in_memory(bans: BanPolicy, anonymous: RateLimits) -> Self {
        Self {
            counters: Box::new(MemoryCounters::new(bans.forgive_after_seconds)),
            fallback: None,
            on_failure: FailurePolicy::Closed,
            bans,
            anonymous,
            anonymous_headers: LimitHeaders::new(anonymous),
            failures: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
        }
    }

    /// A limiter counting in a shared store, with a policy for when that store fails.
    pub fn shared(
        counters: Box<dyn CounterStore>,
        on_failure: FailurePolicy,
        bans: BanPolicy,
        anonymous: RateLimits,
    ) -> Self {
        Self {
            counters,
            fallback: (on_failure == FailurePolicy::Open)
                .then(|| MemoryCounters::new(bans.forgive_after_seconds)),
            on_failure,
            bans,
            anonymous,
            anonymous_headers: LimitHeaders::new(anonymous),
            failures: AtomicU64::new(0),
            last_warning: AtomicU64::new(0),
        }
    }

    /// How many times the counter store has failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Counts one request of `subject` and decides.
    pub async fn check(
        &self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> Result<Verdict, ApiError> {
        let hit = match self.counters.hit(subject, limits, now).await {
            Ok(hit) => hit,
            Err(error) => {
                self.note_failure(&error, now);
                match &self.fallback {
                    Some(fallback) => fallback.hit_now(subject, limits, now),
                    None => return Err(ApiError::Unavailable(error.to_string())),
                }
            }
        };
        Ok(match hit {
            Hit::Banned(ban) => Verdict::Banned(ban),
            Hit::Counted {
                counts,
                previous_ban,
            } => {
                let decision = RateDecision::new(counts, limits, now);
                if decision.allowed {
                    Verdict::Allowed(decision)
                } else {
                    Verdict::Limited {
                        decision,
                        previous_ban,
                    }
                }
            }
        })
    }

    /// Starts a ban in the counter store (and the fallback, so an address ban holds during an
    /// outage too); `ban` is `None` for keys, whose bans are kept in the database.
    pub async fn start_ban(&self, subject: Subject, ban: Option<Ban>, now: u64) {
        if let Some(fallback) = &self.fallback {
            fallback.start_ban_now(subject, ban, now);
        }
        if let Err(error) = self.counters.start_ban(subject, ban, now).await {
            self.note_failure(&error, now);
        }
    }

    /// Counts the failure; logs at most one warning every 10 seconds.
    fn note_failure(&self, error: &CounterError, now: u64) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let last = self.last_warning.load(Ordering::Relaxed);
        if now >= last + 10
            && self
                .last_warning
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let action = match self.on_failure {
                FailurePolicy::Open => "serving with per-instance counters",
                FailurePolicy::Closed => "answering 503",
            };
            log::warn!("{error}; {action} ({failures} failures so far)");
        }
    }
}
