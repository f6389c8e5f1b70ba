//! The rate limiter in HTTP terms (interface section 8; `docs/rate-limits.md`). The engine
//! (windows, bans, the client-address budget, counters in memory and in Redis) is the
//! `petstore-ratelimit` crate, re-exported here; this module adds what only HTTP knows: a
//! request's client address ([`client_address`]: its peer and the header the trusted proxies
//! write) and the rate-limit headers ([`headers`]).

pub mod headers;

use std::net::IpAddr;

use actix_web::dev::ServiceRequest;
pub use headers::{HeaderCache, LimitHeaders};
use petstore_domain::{RateDecision, RateLimits};
pub use petstore_ratelimit::{
    Account, AddressPolicy, BanInForce, CounterError, CounterStore, FailurePolicy, ForwardedHeader,
    Hit, KeyBans, LimitError, Limiter, MemoryCounters, RedisCounters, RedisTarget, Subject, Tally,
    TrustedProxies, Verdict,
};

/// The address to count `req` against: [`TrustedProxies::client_address`] of its peer and of
/// the header the proxies write (a value that is not text read as `unknown`).
pub fn client_address(proxies: &TrustedProxies, req: &ServiceRequest) -> IpAddr {
    let values = req
        .headers()
        .get_all(proxies.header_name())
        .map(|value| value.to_str().unwrap_or("unknown"));
    proxies.client_address(req.peer_addr().map(|addr| addr.ip()), values)
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
