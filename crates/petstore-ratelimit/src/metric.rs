//! The names of the metrics the limiter records (through the `metrics` facade: nothing is
//! recorded until the program installs a recorder, which describes them).

/// Temporary bans started by this instance: `subject` (`key`, `address`).
pub const RATE_LIMIT_BANS: &str = "petstore_rate_limit_bans_total";
/// Failed calls to the shared (Redis) counter store.
pub const RATE_LIMIT_REDIS_ERRORS: &str = "petstore_rate_limit_redis_errors_total";
/// Requests counted in this instance's memory because the shared store failed (fail open).
pub const RATE_LIMIT_FALLBACKS: &str = "petstore_rate_limit_fallbacks_total";
