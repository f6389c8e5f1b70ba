//! How to reach the database and how hard to try: [`StoreConfig`], and the [`Backend`] its URL
//! names.

use std::time::Duration;

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
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            return Ok(Self::Mysql(url.to_owned()));
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

    /// Which database this is, as it may be shown to an operator or logged: a PostgreSQL URL
    /// without its password (in the user part or as a `password` parameter), a SQLite file's
    /// path.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("SQLite file {path}"),
            Self::Postgres(url) => format!("PostgreSQL {}", redact_url_password(url)),
            Self::Mysql(url) => format!("MariaDB/MySQL {}", redact_url_password(url)),
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

/// A database or cache URL (`postgres://`, `redis://`, ...) as it may be logged: a password in
/// the user part (`user:secret@`) or in a `password` query parameter replaced by `***`.
pub fn redact_url_password(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(start) = shown.find("://").map(|i| i + 3) {
        // The credentials end at the last `@` before the query: a password may hold `/` (or
        // `@`), so the host's end cannot be found first.
        let query = shown[start..].find('?').map_or(shown.len(), |i| start + i);
        if let Some(at) = shown[start..query].rfind('@').map(|i| start + i)
            && let Some(colon) = shown[start..at].find(':').map(|i| start + i)
        {
            shown.replace_range(colon + 1..at, "***");
        }
    }
    if let Some(query) = shown.find('?') {
        let (head, params) = shown.split_at(query + 1);
        let params: Vec<String> = params
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown = format!("{head}{}", params.join("&"));
    }
    shown
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
            // A password holding `/` or `@`: the credentials end at the last `@`.
            (
                "postgres://u:se/cret@host/db",
                "PostgreSQL postgres://u:***@host/db",
            ),
            (
                "postgres://u:a@b/c@host:5432/db?sslmode=require",
                "PostgreSQL postgres://u:***@host:5432/db?sslmode=require",
            ),
            ("sqlite://data/p.db", "SQLite file data/p.db"),
        ] {
            let backend = Backend::from_url(url).expect("a URL");
            assert_eq!(backend.describe(), shown);
        }
    }

    #[test]
    fn cache_urls_lose_their_password_too() {
        for (url, shown) in [
            ("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0"),
            (
                "rediss://app:s3cret@cache:6380",
                "rediss://app:***@cache:6380",
            ),
            (
                "redis+cluster://app:s3cret@a:7000,b:7001",
                "redis+cluster://app:***@a:7000,b:7001",
            ),
            ("redis://cache:6379", "redis://cache:6379"),
        ] {
            assert_eq!(redact_url_password(url), shown);
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
        // Key-value connection strings, and paths with spaces or `=`, are no file paths: refused
        // without repeating what was given (a password).
        for url in [
            "host=db password=s3cret",
            "host=db\tpassword=s3cret",
            "dbname=pets",
            "sqlite://data/my pets.db",
        ] {
            let error = Backend::from_url(url).expect_err(url).to_string();
            assert!(
                !error.contains("s3cret") && !error.contains("pets"),
                "{error}"
            );
        }
    }
}
