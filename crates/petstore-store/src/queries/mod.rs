//! Every query and transaction of the store, written once as async functions over a
//! [`Conn`](crate::conn::Conn), one module per aggregate. A function takes the connection by value
//! (a borrow for one call) and its inputs owned, so that a backend can run it wherever it
//! chooses; it returns domain types (rows stay private) or the store's error.

pub(crate) mod admin_tokens;
pub(crate) mod idempotency;
pub(crate) mod keys;
pub(crate) mod orders;
pub(crate) mod pets;
pub(crate) mod webhooks;

use diesel::Selectable;
use diesel::sql_types::{BigInt, Nullable};
use std::time::{SystemTime, UNIX_EPOCH};

use petstore_domain::TraceParent;

/// A backend the crate is built with, to name a row type's columns by: a row type's
/// `Selectable` (derived, or written once for `PetRow`) has the same columns on every backend.
#[cfg(feature = "sqlite")]
type SomeBackend = diesel::sqlite::Sqlite;
#[cfg(all(feature = "postgres", not(feature = "sqlite")))]
type SomeBackend = diesel::pg::Pg;
#[cfg(all(feature = "mysql", not(any(feature = "sqlite", feature = "postgres"))))]
type SomeBackend = diesel::mysql::Mysql;

/// The columns of row type `T`, in the order it is decoded from, for `SELECT` and `RETURNING`.
/// (Diesel's `columns::<T>()` names one backend, and every query here is built once and run on
/// whichever connection the call has.)
fn columns<T: Selectable<SomeBackend>>() -> T::SelectExpression {
    T::construct_selection()
}

diesel::define_sql_function! {
    /// SQL's `COALESCE` of two nullable integers: the first that is not `NULL`.
    fn coalesce(first: Nullable<BigInt>, second: Nullable<BigInt>) -> Nullable<BigInt>;
}

/// What a query function answers: its value, or the store's error.
type Result<T, E = crate::StoreError> = std::result::Result<T, E>;

/// The time a call runs at, read once from the store's clock (`Store::with_clock`) when the
/// call is made: what its rows are stamped with and compared against, and its events' time;
/// and the trace the call is made in, when traces are exported (its events keep it, for their
/// webhook attempts' spans to link back to).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub(crate) at: SystemTime,
    pub(crate) trace: Option<TraceParent>,
}

impl Now {
    /// In Unix seconds.
    pub(crate) fn unix(self) -> i64 {
        let seconds = self
            .at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        i64::try_from(seconds).unwrap_or(i64::MAX)
    }
}

/// Rows fetched for a page: one more than asked, to learn whether another page follows.
fn overfetch(limit: petstore_domain::Limit) -> i64 {
    i64::from(limit.get()) + 1
}
