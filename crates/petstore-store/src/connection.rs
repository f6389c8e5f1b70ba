//! One connection type over both backends, and the r2d2 manager that opens it.

use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{self, R2D2Connection};
use diesel::{Connection, PgConnection, SqliteConnection};

use crate::StoreError;

/// A connection to either backend; every query in this crate is written once against it.
#[derive(diesel::MultiConnection)]
pub enum AnyConnection {
    /// PostgreSQL, for many instances on one database.
    Postgresql(PgConnection),
    /// SQLite, the embedded default.
    Sqlite(SqliteConnection),
}

/// Which database a URL points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A `postgres://` or `postgresql://` URL, passed to libpq as given.
    Postgres(String),
    /// A SQLite file path (from `sqlite://PATH` or a plain path).
    Sqlite(String),
}

impl Backend {
    /// Chooses the backend from the URL's scheme. Choosing here, rather than letting
    /// `MultiConnection::establish` try each backend in turn, keeps the real connection error.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if path.is_empty() {
            return Err(StoreError::Config("the database URL is empty".into()));
        }
        if path == ":memory:" || path.contains("mode=memory") {
            // Each pooled connection would see its own, different, in-memory database.
            return Err(StoreError::Config(
                "an in-memory SQLite database cannot be shared by a connection pool; give a file path".into(),
            ));
        }
        if let Some((scheme, _)) = path.split_once("://") {
            return Err(StoreError::Config(format!(
                "unsupported database URL scheme `{scheme}://`; use postgres://, sqlite:// or a file path"
            )));
        }
        Ok(Self::Sqlite(path.to_owned()))
    }

    /// `postgres` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
        }
    }
}

/// Opens connections for the pool and applies per-connection settings.
#[derive(Debug)]
pub(crate) struct ConnectionManager {
    pub(crate) backend: Backend,
    pub(crate) busy_timeout: Duration,
    pub(crate) statement_timeout: Duration,
}

impl r2d2::ManageConnection for ConnectionManager {
    type Connection = AnyConnection;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<AnyConnection, r2d2::Error> {
        match &self.backend {
            Backend::Postgres(url) => {
                let mut conn =
                    PgConnection::establish(url).map_err(r2d2::Error::ConnectionError)?;
                // A statement that runs longer than this is cancelled, so a stuck query cannot
                // hold a pooled connection (and a client) forever.
                conn.batch_execute(&format!(
                    "SET statement_timeout = {}",
                    self.statement_timeout.as_millis()
                ))
                .map_err(r2d2::Error::QueryError)?;
                Ok(AnyConnection::Postgresql(conn))
            }
            Backend::Sqlite(path) => {
                let mut conn =
                    SqliteConnection::establish(path).map_err(r2d2::Error::ConnectionError)?;
                // WAL lets readers run beside the writer; synchronous=FULL makes a commit durable
                // before it returns (a 201 is never lost on power failure); busy_timeout makes
                // concurrent writers wait for the lock instead of failing.
                conn.batch_execute(&format!(
                    "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; \
                     PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
                    self.busy_timeout.as_millis()
                ))
                .map_err(r2d2::Error::QueryError)?;
                Ok(AnyConnection::Sqlite(conn))
            }
        }
    }

    fn is_valid(&self, conn: &mut AnyConnection) -> Result<(), r2d2::Error> {
        conn.ping().map_err(r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut AnyConnection) -> bool {
        std::thread::panicking() || conn.is_broken()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_their_backend() {
        let cases = [
            (
                "postgres://u@h/db",
                Backend::Postgres("postgres://u@h/db".into()),
            ),
            (
                "postgresql://h/db",
                Backend::Postgres("postgresql://h/db".into()),
            ),
            (
                "sqlite://petstore.db",
                Backend::Sqlite("petstore.db".into()),
            ),
            (
                "sqlite:///var/lib/p.db",
                Backend::Sqlite("/var/lib/p.db".into()),
            ),
            ("sqlite:p.db", Backend::Sqlite("p.db".into())),
            ("data/p.db", Backend::Sqlite("data/p.db".into())),
        ];
        for (url, expected) in cases {
            assert_eq!(Backend::from_url(url).expect(url), expected, "{url}");
        }
    }

    #[test]
    fn unusable_urls_are_refused() {
        for url in [
            "",
            "sqlite://",
            ":memory:",
            "sqlite::memory:",
            "mysql://h/db",
        ] {
            assert!(Backend::from_url(url).is_err(), "{url:?} accepted");
        }
    }
}
