//! The one error type of the store. Diesel, r2d2 and migration errors never leave the crate.

use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or is too busy to answer now; retrying later may work.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The database answered with an error that retrying will not fix.
    #[error("database error: {0}")]
    Database(String),
    /// A stored row does not fit the domain (e.g. an unknown status): the data was changed
    /// outside the service.
    #[error("corrupt row in `{table}`: {reason}")]
    Corrupt {
        /// The table holding the row.
        table: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// The schema could not be brought up to date.
    #[error("migration failed: {0}")]
    Migration(String),
    /// The database URL or settings are unusable.
    #[error("invalid store configuration: {0}")]
    Config(String),
    /// The operating system's random source failed (key generation).
    #[error("random source failed: {0}")]
    Random(String),
}

impl From<DieselError> for StoreError {
    fn from(error: DieselError) -> Self {
        match &error {
            DieselError::DatabaseError(
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
                _,
            ) => Self::Unavailable(error.to_string()),
            DieselError::DatabaseError(_, info) if is_transient(info.message()) => {
                Self::Unavailable(error.to_string())
            }
            _ => Self::Database(error.to_string()),
        }
    }
}

impl From<diesel::r2d2::PoolError> for StoreError {
    fn from(error: diesel::r2d2::PoolError) -> Self {
        Self::Unavailable(error.to_string())
    }
}

/// Errors that mean "try again later" rather than "this request is wrong": SQLite's busy and
/// locked answers, PostgreSQL's statement timeout, shutdown and connection failures.
fn is_transient(message: &str) -> bool {
    const TRANSIENT: [&str; 7] = [
        "database is locked",
        "database table is locked",
        "canceling statement due to statement timeout",
        "terminating connection",
        "server closed the connection",
        "the database system is",
        "could not connect",
    ];
    TRANSIENT.iter().any(|needle| message.contains(needle))
}
