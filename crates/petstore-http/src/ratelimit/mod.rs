//! The rate limiter in HTTP terms (interface section 8; `docs/rate-limits.md`). The engine
//! (windows, bans, the client-address budget, counters in memory and in Redis) is the
//! `petstore-ratelimit` crate, re-exported here; this module adds what only HTTP knows: the
//! client address behind trusted proxies ([`TrustedProxies`]) and the rate-limit headers
//! ([`headers`]).

mod address;
pub mod headers;

pub use address::{ForwardedHeader, TrustedProxies};
pub use headers::{HeaderCache, LimitHeaders};
use petstore_domain::{RateDecision, RateLimits};
pub use petstore_ratelimit::{
    Account, AddressPolicy, BanInForce, CounterError, CounterStore, FailurePolicy, Hit, KeyBans,
    LimitError, Limiter, MemoryCounters, RedisCounters, RedisTarget, Subject, Verdict,
};

/// A caller's standing, read without counting, for the rate-limit status response (put in the
/// request's extensions by admission).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    /// Both windows now.
    pub decision: RateDecision,
    /// The caller's limits.
    pub limits: RateLimits,
}
