//! How to reach the database and how hard to try: [`StoreConfig`], and the [`Backend`] its URL
//! names.

use std::time::Duration;

use petstore_domain::redacted_url;

use crate::StoreError;

/// What a call's deadline ([`Capacity::deadline`](petstore_domain::Capacity)) allows beyond the
/// statement timeout: the round trips around the statement.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(1);

/// How far behind the primary a standby may be and still be read from, unless set.
pub const DEFAULT_READ_MAX_LAG: Duration = Duration::from_secs(2);

/// How to reach the database and how hard to try.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `postgres://...` (with libpq's `sslmode` and `sslrootcert`), `sqlite://PATH` or a plain
    /// SQLite file path.
    pub url: String,
    /// Most connections open at once, over all the threads that call the store.
    pub pool_size: u32,
    /// How many runtime threads (the HTTP server's workers) share `pool_size` on PostgreSQL:
    /// each thread that calls the store gets a pool of its own of `pool_size / workers`
    /// connections (at least one), whose I/O its own runtime drives. At least 1.
    pub workers: u32,
    /// Longest wait for a free connection (and for a new one) before answering "unavailable".
    pub connect_timeout: Duration,
    /// Longest a single statement may run (PostgreSQL), and how long SQLite waits for a lock.
    pub statement_timeout: Duration,
    /// Keep a SQLite connection open ahead of the first call (a server). A one-shot command
    /// sets this to `false`, so that no background thread opens one as it exits.
    pub keep_warm: bool,
    /// PostgreSQL standbys (`postgres://` URLs) that answer the reads which tolerate one: pet
    /// pages, one pet, the inventory, orders and one order. Empty: every call goes to `url`.
    /// With standbys, `url`'s write sessions commit with `synchronous_commit = remote_apply`,
    /// so that a write confirmed is visible on every synchronous standby (read-your-writes:
    /// `docs/deploy.md`).
    pub read_urls: Vec<String>,
    /// A standby further behind the primary than this is not read from until it catches up.
    pub read_max_lag: Duration,
}

impl StoreConfig {
    /// Defaults suited to one instance: 8 connections for one worker, 5 s to connect, 5 s per
    /// statement.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 8,
            workers: 1,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            keep_warm: true,
            read_urls: Vec::new(),
            read_max_lag: DEFAULT_READ_MAX_LAG,
        }
    }

    /// How long a call may take before its caller gives up on it: the statement (and lock)
    /// timeout, plus [`DEADLINE_MARGIN`] for the round trip.
    pub fn deadline(&self) -> Duration {
        self.statement_timeout + DEADLINE_MARGIN
    }
}

/// Which database a URL points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A `postgres://` or `postgresql://` URL, as given.
    Postgres(String),
    /// A SQLite file path (from `sqlite://PATH` or a plain path).
    Sqlite(String),
    /// A `mysql://` or `mariadb://` URL, as given.
    Mysql(String),
}

impl Backend {
    /// Chooses the backend from the URL's scheme.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        let url = url.trim();
        let network = ["postgres://", "postgresql://", "mysql://", "mariadb://"];
        if network.iter().any(|scheme| url.starts_with(scheme)) && url.matches('@').count() > 1 {
            // tokio-postgres reads the credentials to the first `@`, mysql_async to the last:
            // either way not what was meant.
            return Err(StoreError::Config(
                "the database URL holds `@` more than once: percent-encode it as %40 in a user \
                 name, password or parameter"
                    .into(),
            ));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            return Ok(Self::Mysql(url.to_owned()));
        }
        let explicit = url.starts_with("sqlite:");
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
        if path.contains(char::is_whitespace) || path.contains('=') {
            // Likely a key-value connection string (`host=db password=...`): taken for a file
            // name, it would be logged, password and all, and an empty database made and served.
            return Err(StoreError::Config(
                "the database URL is not a file path: it holds a space or `=`, as a key-value \
                 connection string does; give PostgreSQL a postgres:// URL and SQLite a plain \
                 file path"
                    .into(),
            ));
        }
        if let Some((scheme, _)) = path.split_once("://") {
            return Err(StoreError::Config(format!(
                "unsupported database URL scheme `{scheme}://`; use postgres://, mysql://, sqlite:// or a file path"
            )));
        }
        // A URL mistyped (`postgres:/u:pw@h/db`, `postgresql:u:pw@h/db`, `postgres//u:pw@h/db`)
        // is no file name: taken for one, it would be created and served, and its text (the
        // password with it) shown. A path that starts like a scheme, or holds `@`, is refused
        // unless `sqlite:` says it is one.
        if !explicit {
            if let Some(scheme) = scheme_like(path) {
                return Err(StoreError::Config(format!(
                    "the database URL starts with `{scheme}:` but is not a URL this service \
                     reads: write postgres://, postgresql://, mysql:// or mariadb:// with its \
                     `//` (a SQLite file whose name starts so: sqlite://{scheme}:...)"
                )));
            }
            if path.contains('@') {
                return Err(StoreError::Config(
                    "the database URL holds `@`, as a URL's credentials do, but is not a \
                     postgres://, mysql:// or mariadb:// URL (check its scheme and `//`); a \
                     SQLite file whose name holds `@`: sqlite://PATH"
                        .into(),
                ));
            }
        }
        Ok(Self::Sqlite(path.to_owned()))
    }

    /// `postgres` or `sqlite`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgres",
            Self::Sqlite(_) => "sqlite",
            Self::Mysql(_) => "mysql",
        }
    }

    /// Which database this is, as it may be shown to an operator or logged: a URL without its
    /// password ([`redacted_url`]), a SQLite file's path.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("SQLite file {path}"),
            Self::Postgres(url) => format!("PostgreSQL {}", redacted_url(url)),
            Self::Mysql(url) => format!("MariaDB/MySQL {}", redacted_url(url)),
        }
    }

    /// Whether the database is there, as far as can be told without connecting: a SQLite file
    /// exists (opening one that does not would create it); a PostgreSQL database is assumed to
    /// (connecting tells).
    pub fn exists(&self) -> bool {
        match self {
            Self::Sqlite(path) => std::path::Path::new(path).exists(),
            Self::Postgres(_) | Self::Mysql(_) => true,
        }
    }
}

/// The scheme `text` starts with, if it starts like a URL (`letters:`, RFC 3986's scheme
/// characters after the first): `postgres` of `postgres:/u@h`.
fn scheme_like(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_never_show_a_password() {
        for (url, shown) in [
            (
                "postgres://app:s3cr%40t@db:5432/pets?sslmode=require",
                "PostgreSQL postgres://app:***@db:5432/pets?sslmode=require",
            ),
            (
                "postgresql://app@db/pets?password=hunter2&sslmode=disable",
                "PostgreSQL postgresql://app@db/pets?password=***&sslmode=disable",
            ),
            ("postgres://db/pets", "PostgreSQL postgres://db/pets"),
            // A password holding `/` or `?`: tokio-postgres reads it to the `@`.
            (
                "postgres://u:se/cret@host/db",
                "PostgreSQL postgres://u:***@host/db",
            ),
            (
                "postgres://u:pw?x@host/db",
                "PostgreSQL postgres://u:***@host/db",
            ),
            (
                "postgres://u@host/db?pass%77ord=pw",
                "PostgreSQL postgres://u@host/db?pass%77ord=***",
            ),
            (
                "mysql://root:pw@h:3306/x",
                "MariaDB/MySQL mysql://root:***@h:3306/x",
            ),
            ("sqlite://data/p.db", "SQLite file data/p.db"),
        ] {
            let backend = Backend::from_url(url).expect("a URL");
            assert_eq!(backend.describe(), shown);
        }
    }

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
            ("./data:1.db", Backend::Sqlite("./data:1.db".into())),
            (
                "sqlite:///srv/petstore@blue/p.db",
                Backend::Sqlite("/srv/petstore@blue/p.db".into()),
            ),
            ("mysql://u@h/db", Backend::Mysql("mysql://u@h/db".into())),
            (
                "mariadb://u@h/db",
                Backend::Mysql("mariadb://u@h/db".into()),
            ),
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
            "redis://h/0",
        ] {
            assert!(Backend::from_url(url).is_err(), "{url:?} accepted");
        }
        // Key-value connection strings, paths with spaces or `=`, URLs mistyped (which would be
        // taken for file names) and `@` more than once: refused without repeating what was
        // given (a password).
        for url in [
            "host=db password=s3cret",
            "host=db\tpassword=s3cret",
            "dbname=pets",
            "sqlite://data/my pets.db",
            "postgres:/app:s3cret@h/x",
            "postgresql:app:s3cret@h/x",
            "postgres//app:s3cret@h/x",
            "mysql:/root:s3cret@h/x",
            "mysql:root:s3cret@h/x",
            "pets/app:s3cret@h",
            "postgres://u:a@s3cret@h/pets",
            "mysql://u:a@s3cret@h/pets",
        ] {
            let error = Backend::from_url(url).expect_err(url).to_string();
            assert!(
                !error.contains("s3cret") && !error.contains("pets"),
                "{error}"
            );
        }
    }
}
