//! Per-plan rate limits with temporary bans, for the Animal Store Service (its interface's
//! section 8; the service's `docs/rate-limits.md`), usable by any Rust service.
//!
//! Requests are counted per [`Subject`]: an API key's id, or a client address, in two fixed
//! windows aligned to the UTC minute and day (the arithmetic, and the plans' limits, are
//! `petstore_domain::rate_limit`'s). Counters live behind [`CounterStore`]: in this process
//! ([`MemoryCounters`], exact for one instance, bounded in memory) or in Redis
//! ([`RedisCounters`]: one server or a Redis Cluster, exact across instances). A [`Limiter`]
//! counts a request ([`Limiter::check`]), decides ([`Verdict`]), starts bans, and falls back to
//! memory while Redis fails when its [`FailurePolicy`] says so.
//!
//! The limiter knows counters, limits and client addresses, not where subjects come from: it
//! does not authenticate, speaks no HTTP and reaches no database. Key bans are kept wherever
//! the caller keeps keys, through the [`KeyBans`] it passes in. Start with `limiter/`; the
//! counter stores are `memory/` and `redis/` (the connection, the batches and their scripts).
//!
//! Which address an anonymous request counts against, behind proxies that are trusted to say
//! who their client is, is [`TrustedProxies::client_address`].
//!
//! Modules depend one way: `store` (the counter store's interface), `policy` and `address` at
//! the bottom; the stores `memory` and `redis`; then `limiter`.
#![deny(missing_docs)]

mod address;
mod limiter;
mod memory;
pub mod metric;
mod policy;
mod redis;
mod store;

pub use address::{ForwardedHeader, TrustedProxies};
pub use limiter::{Account, BanInForce, KeyBans, LimitError, Limiter, Tally, Verdict};
pub use memory::MemoryCounters;
pub use policy::{AddressPolicy, FailurePolicy};
pub use redis::{RedisCounters, RedisTarget};
pub use store::{BanStarted, Counted, CounterError, CounterStore, Hit, Subject, TakenBack};
