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

    /// For PostgreSQL, adds libpq timeouts the URL does not set itself, so that a database
    /// host that stops answering (rather than refusing) cannot hold a request for the minutes
    /// TCP would otherwise take to give up: `connect_timeout` from the pool's connect timeout,
    /// TCP keepalives, and `tcp_user_timeout` a little past the statement timeout.
    pub fn with_timeouts(self, config: &crate::StoreConfig) -> Self {
        let Self::Postgres(url) = self else {
            return self;
        };
        if !url.contains("://") {
            return Self::Postgres(url);
        }
        let connect = config.connect_timeout.as_secs().max(2);
        let unacknowledged =
            (config.statement_timeout + std::time::Duration::from_secs(5)).as_millis();
        let defaults = [
            ("connect_timeout", connect.to_string()),
            ("keepalives", "1".to_owned()),
            ("keepalives_idle", "10".to_owned()),
            ("keepalives_interval", "5".to_owned()),
            ("keepalives_count", "3".to_owned()),
            ("tcp_user_timeout", unacknowledged.to_string()),
        ];
        let query = url.split_once('?').map_or("", |(_, q)| q);
        let mut out = url.clone();
        for (name, value) in defaults {
            let present = query
                .split('&')
                .any(|pair| pair.split('=').next() == Some(name));
            if !present {
                out.push(if out.contains('?') { '&' } else { '?' });
                out.push_str(&format!("{name}={value}"));
            }
        }
        Self::Postgres(out)
    }

    /// `postgres` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
        }
    }
}

/// A pooled connection, with the store's verdict on whether it still works.
pub(crate) struct Pooled {
    pub(crate) connection: AnyConnection,
    pub(crate) broken: bool,
}

/// Opens connections for the pool and applies per-connection settings.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionManager {
    pub(crate) backend: Backend,
    pub(crate) busy_timeout: Duration,
    pub(crate) statement_timeout: Duration,
}

impl r2d2::ManageConnection for ConnectionManager {
    type Connection = Pooled;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<Pooled, r2d2::Error> {
        self.open().map(|connection| Pooled {
            connection,
            broken: false,
        })
    }

    fn is_valid(&self, conn: &mut Pooled) -> Result<(), r2d2::Error> {
        conn.connection.ping().map_err(r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut Pooled) -> bool {
        conn.broken || std::thread::panicking() || conn.connection.is_broken()
    }
}

impl ConnectionManager {
    pub(crate) fn open(&self) -> Result<AnyConnection, r2d2::Error> {
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
    fn postgres_urls_get_timeouts_they_do_not_set() {
        let config = crate::StoreConfig::new("");
        let Backend::Postgres(url) =
            Backend::Postgres("postgres://h/db?connect_timeout=9".into()).with_timeouts(&config)
        else {
            panic!("still postgres");
        };
        assert!(
            url.starts_with("postgres://h/db?connect_timeout=9&keepalives=1"),
            "{url}"
        );
        assert!(url.contains("&tcp_user_timeout=10000"), "{url}");
        assert_eq!(url.matches("connect_timeout").count(), 1, "{url}");
        let sqlite = Backend::Sqlite("p.db".into());
        assert_eq!(sqlite.clone().with_timeouts(&config), sqlite);
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
