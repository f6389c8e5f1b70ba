//! The one error type of the store. Diesel, pool, driver and migration errors never leave the crate
//! except as the `source` of a [`StoreError`], and a `StoreError` leaves through the storage
//! traits as the source of a [`StorageError`] whose kind says whether a retry may help.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use petstore_domain::{StorageError, StorageErrorKind};

pub(crate) type BoxError = Box<dyn Error + Send + Sync>;

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No connection could be had: none became free within the checkout timeout, or opening
    /// one failed (the database is down, refusing, or starting).
    #[error("no database connection could be had")]
    Connect(#[source] BoxError),
    /// The connection broke during the call (the server closed it, or a command could not be
    /// sent).
    #[error("the database connection was lost")]
    ConnectionLost(#[source] BoxError),
    /// The database gave up on the call after the statement (PostgreSQL) or lock (SQLite)
    /// timeout had passed.
    #[error("the database did not complete the call within {0:?}")]
    TimedOut(Duration, #[source] BoxError),
    /// The server accepts no writes (PostgreSQL's `read_only_sql_transaction`, 25006): a standby,
    /// or a primary being demoted or not yet promoted. Another server, or this one later, may:
    /// the connection is not used again (see `postgres::connections::Connections::call`).
    #[error("the database server accepts no writes (it is a standby, or read-only)")]
    ReadOnly(#[source] BoxError),
    /// A transaction lost a race with another one (a serialization failure, or a deadlock it was
    /// chosen to end) and was rolled back; running it again may succeed.
    #[error("the transaction conflicted with another one")]
    Conflict(#[source] BoxError),
    /// The caller stopped waiting (its deadline passed, its client left) before the call
    /// started: nothing was done.
    #[error("the call was given up on before it started")]
    GivenUp,
    /// The store has been closed (the process is stopping).
    #[error("the store is closed")]
    Closed,
    /// A call on a blocking thread did not return (it panicked, or the runtime is shutting
    /// down).
    #[error("a blocking storage call did not complete")]
    Blocking(#[source] tokio::task::JoinError),
    /// A write failed for lack of space (the database's disk is full).
    #[error("the disk holding the database is full ({0} bytes free)")]
    Full(u64, #[source] BoxError),
    /// The SQLite writer thread could not be started.
    #[error("the SQLite writer thread could not start")]
    WriterStart(#[source] std::io::Error),
    /// The SQLite writer thread is gone (it only stops when the store is dropped).
    #[error("the SQLite writer has stopped")]
    WriterStopped,
    /// An idempotency claim was taken over by another request (this one outlived its lease)
    /// before its outcome could be stored: nothing was written; a retry sees the other's.
    #[error("the idempotency key's claim was taken over by another request")]
    ClaimLost,
    /// The transaction holding this write failed as a whole (SQLite group commit).
    #[error("the batch holding this write failed")]
    Batch(#[source] Arc<StoreError>),
    /// The database answered with an error that retrying will not fix.
    #[error("database error")]
    Database(#[source] BoxError),
    /// A stored row does not fit the domain (e.g. an unknown status): the data was changed
    /// outside the service.
    #[error("corrupt row in `{table}`: {reason}")]
    Corrupt {
        /// The table holding the row.
        table: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// The schema is not current: migrations are pending or could not be applied.
    #[error("migration failed: {0}")]
    Migration(String, #[source] Option<BoxError>),
    /// The database URL or settings are unusable.
    #[error("invalid store configuration: {0}")]
    Config(String),
    /// The operating system's random source failed (key generation).
    #[error("the random source failed")]
    Random(#[source] getrandom::Error),
}

impl StoreError {
    /// What the failure means to a caller: whether a retry may help.
    pub fn kind(&self) -> StorageErrorKind {
        match self {
            Self::Connect(_)
            | Self::ConnectionLost(_)
            | Self::TimedOut(..)
            | Self::ReadOnly(_)
            | Self::Conflict(_)
            | Self::WriterStopped
            | Self::GivenUp
            | Self::Closed
            | Self::ClaimLost => StorageErrorKind::Unavailable,
            Self::Full(..) => StorageErrorKind::Full,
            Self::Batch(inner) => inner.kind(),
            Self::Database(_)
            | Self::Corrupt { .. }
            | Self::Migration(..)
            | Self::Config(_)
            | Self::WriterStart(_)
            | Self::Blocking(_)
            | Self::Random(_) => StorageErrorKind::Failed,
        }
    }

    /// A database error of a call that ran for the whole `timeout`, read as that timeout. Diesel
    /// reports SQLite's `SQLITE_BUSY` (after `busy_timeout`) and PostgreSQL's `query_canceled`
    /// (after `statement_timeout`) as errors of no particular kind; what sets them apart from
    /// a fault is that they come only once the timeout has passed.
    pub(crate) fn after(self, elapsed: Duration, timeout: Duration) -> Self {
        match self {
            Self::Database(source) if elapsed >= timeout => Self::TimedOut(timeout, source),
            other => other,
        }
    }
}

/// PostgreSQL's message for a deadlock (`deadlock_detected`, 40P01), which diesel-async reports
/// as a database error of no kind, without its code: the transaction chosen to end the deadlock
/// was rolled back, and running it again may succeed, as after a serialization failure. The
/// message is the server's in English (`lc_messages` `C` or `en_*`, the usual setting); a
/// server that writes its messages in another language has its deadlocks answered as faults
/// (`500`, logged with the server's text). No other backend writes this text (MariaDB's
/// deadlock carries its code, 1213, and is read by `mysql::classify`).
const POSTGRES_DEADLOCK: &str = "deadlock detected";

impl From<DieselError> for StoreError {
    fn from(error: DieselError) -> Self {
        match &error {
            DieselError::DatabaseError(
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
                _,
            ) => Self::ConnectionLost(error.into()),
            DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => {
                Self::Conflict(error.into())
            }
            DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
                if info.message() == POSTGRES_DEADLOCK =>
            {
                Self::Conflict(error.into())
            }
            DieselError::DatabaseError(DatabaseErrorKind::ReadOnlyTransaction, _) => {
                Self::ReadOnly(error.into())
            }
            _ => Self::Database(error.into()),
        }
    }
}

#[cfg(feature = "sqlite")]
impl From<diesel::r2d2::PoolError> for StoreError {
    fn from(error: diesel::r2d2::PoolError) -> Self {
        Self::Connect(error.into())
    }
}

impl From<StoreError> for StorageError {
    fn from(error: StoreError) -> Self {
        StorageError::new(error.kind(), error)
    }
}
