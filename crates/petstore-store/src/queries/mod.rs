//! Every query and transaction of the store, written once as async functions over a
//! [`Conn`](crate::conn::Conn), one module per aggregate. A function takes the connection by value
//! (a borrow for one call) and its inputs owned, so that a backend can run it wherever it
//! chooses; it returns domain types (rows stay private) or the store's error.

pub(crate) mod admin_tokens;
pub(crate) mod idempotency;
pub(crate) mod keys;
pub(crate) mod orders;
pub(crate) mod pets;

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Rows fetched for a page: one more than asked, to learn whether another page follows.
fn overfetch(limit: petstore_domain::Limit) -> i64 {
    i64::from(limit.get()) + 1
}
