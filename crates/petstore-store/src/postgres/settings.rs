//! A `postgres://` URL as users know it from libpq, turned into tokio-postgres' settings and a
//! rustls connector: `sslmode` (`disable`, `prefer` (the default), `require`, `verify-ca`,
//! `verify-full`) and `sslrootcert` (a PEM file, or `system` for the system's CAs) with libpq's
//! meanings; `tcp_user_timeout` in milliseconds and `keepalives_count`, as libpq spells them.
//! Every other parameter is tokio-postgres' own (which are libpq's names).
//!
//! Timeouts the URL does not set come from the store's configuration, so that a database host
//! that stops answering (rather than refusing) cannot hold a connection for the minutes TCP would
//! take to give up: `connect_timeout`, TCP keepalives, a TCP user timeout a little past the
//! statement timeout, and the statement timeout itself (sent at connection start-up; behind a
//! transaction pooler, which refuses start-up settings, set in each call's transaction or taken
//! from the role: `super::pooler`).

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use diesel_async::AsyncPgConnection;
use percent_encoding::percent_decode_str;
use tokio_postgres::config::SslMode as WireSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::pooler::{self, Pooler};
use super::tls::{self, SslMode};
use crate::{StoreConfig, StoreError};

/// How to open a connection: tokio-postgres' settings and the TLS to speak.
pub(crate) struct PgSettings {
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    mode: SslMode,
    /// What stands between this service and PostgreSQL (the URL's `pooler`).
    pub(crate) pooler: Pooler,
    /// Whether reads go to standbys too, so that a commit must have been applied there before
    /// it is answered (`synchronous_commit = remote_apply`).
    read_urls: bool,
}

/// Parameters read here rather than by tokio-postgres.
const OURS: [&str; 5] = [
    "sslmode",
    "sslrootcert",
    "tcp_user_timeout",
    "keepalives_count",
    "pooler",
];

/// libpq parameters that this service does not support, and why.
const UNSUPPORTED: [(&str, &str); 4] = [
    ("sslcert", "client certificates are not supported"),
    ("sslkey", "client certificates are not supported"),
    ("sslcrl", "certificate revocation lists are not supported"),
    ("sslpassword", "client certificates are not supported"),
];

impl PgSettings {
    /// The server as a metric's label may name it: each host and port, and the database
    /// (`db1:5432,db2:5432/pets`); never a user, password or parameter.
    pub(crate) fn label(&self) -> String {
        let ports = self.config.get_ports();
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(n, host)| {
                let host = match host {
                    tokio_postgres::config::Host::Tcp(name) => name.clone(),
                    tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                };
                let port = ports.get(n).or(ports.first()).copied().unwrap_or(5432);
                format!("{host}:{port}")
            })
            .collect();
        format!(
            "{}/{}",
            hosts.join(","),
            self.config.get_dbname().unwrap_or_default()
        )
    }

    /// Reads `url` (a `postgres://` or `postgresql://` URL) with `store`'s timeouts.
    pub(crate) fn from_url(url: &str, store: &StoreConfig) -> Result<Self, StoreError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut given = Vec::new();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if let Some((_, why)) = UNSUPPORTED.iter().find(|(n, _)| *n == name) {
                return Err(StoreError::Config(format!(
                    "the database URL's `{name}`: {why}"
                )));
            }
            if OURS.contains(&name) {
                let value = percent_decode_str(value).decode_utf8().map_err(|_| {
                    StoreError::Config(format!("the database URL's `{name}` is not UTF-8"))
                })?;
                given.push((name, value.into_owned()));
            } else {
                rest.push(pair);
            }
        }
        let ours = |name: &str| {
            given
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        let present = |name: &str| rest.iter().any(|pair| pair.split('=').next() == Some(name));
        let url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config = tokio_postgres::Config::from_str(&url).map_err(|error| {
            StoreError::Config(format!(
                "the database URL is not usable: {}",
                petstore_domain::error::Chain(&error)
            ))
        })?;

        if !present("connect_timeout") {
            // Per host, as libpq applies it: with several hosts (failover), each gets its share
            // of the wait, so that a silent first host leaves time to try the next.
            let hosts = u32::try_from(config.get_hosts().len()).unwrap_or(u32::MAX);
            config.connect_timeout(store.connect_timeout / hosts.max(1));
        }
        if !present("keepalives_idle") {
            config.keepalives_idle(Duration::from_secs(10));
        }
        if !present("keepalives_interval") {
            config.keepalives_interval(Duration::from_secs(5));
        }
        let retries = match ours("keepalives_count") {
            Some(count) => count.parse().map_err(|_| {
                StoreError::Config(format!(
                    "the database URL's `keepalives_count` is {count:?}"
                ))
            })?,
            None => 3,
        };
        config.keepalives_retries(retries);
        let unacknowledged = match ours("tcp_user_timeout") {
            Some(millis) => Duration::from_millis(millis.parse().map_err(|_| {
                StoreError::Config(format!(
                    "the database URL's `tcp_user_timeout` (milliseconds) is {millis:?}"
                ))
            })?),
            None => store.statement_timeout + Duration::from_secs(5),
        };
        if !unacknowledged.is_zero() {
            config.tcp_user_timeout(unacknowledged);
        }
        // Sent in the start-up packet (no round trip), after the URL's own options:
        // - a statement that runs longer than the statement timeout is cancelled, so a stuck
        //   query cannot hold a connection (and a client) forever;
        // - generic plans: PostgreSQL otherwise plans this service's prepared statements anew on
        //   every execution (for the list query it never settles on the generic plan, because a
        //   bound `LIMIT` makes the custom plan look cheaper); the measured gain is in
        //   docs/performance.md. Every query here is an index lookup whose
        //   best plan does not depend on the values; a URL that sets `plan_cache_mode` itself
        //   keeps its choice.
        let given = config.get_options().unwrap_or_default().trim().to_owned();
        let pooler = Pooler::parse(ours("pooler"), &given, store)?;
        let mut options = given.clone();
        let mut add = |option: String| {
            if !options.is_empty() {
                options.push(' ');
            }
            options.push_str(&option);
        };
        add(format!(
            "-c statement_timeout={}",
            store.statement_timeout.as_millis()
        ));
        if !given.contains("plan_cache_mode") {
            add("-c plan_cache_mode=force_generic_plan".to_owned());
        }
        // - with standbys read from, a commit is confirmed once the synchronous standbys have
        //   applied it, not only written it: a read sent to one after the answer sees the write
        //   (read-your-writes, `replicas`). A URL that sets `synchronous_commit` keeps its choice.
        if !store.read_urls.is_empty() && !given.contains("synchronous_commit") {
            add("-c synchronous_commit=remote_apply".to_owned());
        }
        // A transaction pooler refuses start-up options (PgBouncer: "unsupported startup
        // parameter"), and would not keep them with the session anyway: each transaction sets
        // them instead, or the role (`Pooler`).
        if !pooler.pools_transactions() {
            config.options(&options);
        }

        let mode = match ours("sslmode") {
            Some(mode) => SslMode::parse(mode)?,
            None => SslMode::Prefer,
        };
        let (wire, client) = tls::client_config(mode, ours("sslrootcert"))?;
        config.ssl_mode(match wire {
            tls::Wire::Plain => WireSslMode::Disable,
            tls::Wire::TryTls => WireSslMode::Prefer,
            tls::Wire::Tls => WireSslMode::Require,
        });
        Ok(Self {
            config,
            tls: MakeRustlsConnect::new(client),
            mode,
            pooler,
            read_urls: !store.read_urls.is_empty(),
        })
    }

    /// The TLS set-up of this database's connections (a cancel request goes the same way).
    pub(crate) fn tls(&self) -> MakeRustlsConnect {
        self.tls.clone()
    }

    /// [`Self::connect`], with a flag set once the server has closed the connection (its I/O
    /// task ended): for a connection held between calls, so that one whose server went away
    /// (a restart, a failover) is replaced before a call fails on it. Not behind a transaction
    /// pooler that keeps no statements (no connection is shared there between calls); behind
    /// one that keeps them, checked as [`Self::connect`] checks.
    pub(crate) async fn connect_watched(
        &self,
    ) -> Result<(AsyncPgConnection, Arc<AtomicBool>), StoreError> {
        let (client, connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(|error| self.connect_error(error))?;
        let gone = Arc::new(AtomicBool::new(false));
        // Set when the task ends, or is dropped with its runtime (then the connection is dead
        // too, and a later runtime on the thread must not use it).
        struct Ended(Arc<AtomicBool>);
        impl Drop for Ended {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let ended = Ended(gone.clone());
        tokio::spawn(async move {
            let _ended = ended;
            if let Err(error) = connection.await {
                log::debug!("a database connection ended: {error}");
            }
        });
        if self.pooler == Pooler::KeepsStatements {
            pooler::keeps_statements(&client, self.read_urls).await?;
        }
        // Its errors reach its calls as tokio-postgres reports them (the connection closed).
        let conn = AsyncPgConnection::try_from(client)
            .await
            .map_err(|error| StoreError::Connect(error.into()))?;
        Ok((conn, gone))
    }

    /// Opens a connection, driven by the current runtime (its I/O task is spawned there).
    /// Behind a transaction pooler that keeps no statements, it keeps none either: each one
    /// lives in the transaction that prepared it, on the server connection the pooler lent for
    /// it.
    pub(crate) async fn connect(&self) -> Result<AsyncPgConnection, StoreError> {
        use diesel::connection::CacheSize;
        use diesel_async::{AsyncConnection, SimpleAsyncConnection};
        let (client, mut connection) = self
            .config
            .connect(self.tls.clone())
            .await
            .map_err(|error| self.connect_error(error))?;
        let per_call_transaction = match &self.pooler {
            Pooler::None => false,
            Pooler::KeepsStatements => {
                let checked = pooler::keeps_statements(&client, self.read_urls);
                driven(checked, &mut connection).await?;
                false
            }
            Pooler::Transaction { .. } => {
                // diesel-async's set-up (two statements, each prepared then executed in two
                // exchanges) runs in a transaction, or the pooler could lend each exchange
                // another server connection (then "prepared statement s1 does not exist").
                let began = async {
                    client
                        .batch_execute("BEGIN; DEALLOCATE ALL")
                        .await
                        .map_err(|error| self.connect_error(error))
                };
                driven(began, &mut connection).await?;
                true
            }
        };
        let mut conn = AsyncPgConnection::try_from_client_and_connection(client, connection)
            .await
            .map_err(|error| StoreError::Connect(error.into()))?;
        if per_call_transaction {
            conn.batch_execute("COMMIT")
                .await
                .map_err(|error| StoreError::Connect(error.into()))?;
            conn.set_prepared_statement_cache_size(CacheSize::Disabled);
        }
        Ok(conn)
    }

    fn connect_error(&self, error: tokio_postgres::Error) -> StoreError {
        // A database that is not there: how to make it.
        let hint = match error.code() {
            Some(&tokio_postgres::error::SqlState::INVALID_CATALOG_NAME) => {
                let name = self.config.get_dbname().unwrap_or("the database");
                format!(
                    "; create it (`createdb {name}`, or `CREATE DATABASE {name}` as a role \
                     allowed to), then start again: the service makes its tables, not the \
                     database"
                )
            }
            _ => String::new(),
        };
        StoreError::Connect(
            format!(
                "connecting with sslmode={}: {}{hint}",
                self.mode.as_str(),
                petstore_domain::error::Chain(&error)
            )
            .into(),
        )
    }
}

/// Runs `work` on a connection's client while driving the connection (whose I/O task is not
/// spawned yet) until it is done.
async fn driven<T>(
    work: impl Future<Output = Result<T, StoreError>>,
    connection: &mut (impl Future<Output = Result<(), tokio_postgres::Error>> + Unpin),
) -> Result<T, StoreError> {
    use futures_util::future::Either;
    futures_util::pin_mut!(work);
    match futures_util::future::select(work, connection).await {
        Either::Left((done, _)) => done,
        Either::Right(_) => Err(StoreError::Connect(
            "the connection closed as it was set up".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> Result<PgSettings, StoreError> {
        PgSettings::from_url(url, &StoreConfig::new(url))
    }

    #[test]
    fn libpq_parameters_are_read_with_libpq_meanings() {
        let parsed = settings(
            "postgres://u@h:5433/db?sslmode=require&tcp_user_timeout=2500&keepalives_count=7&application_name=x",
        )
        .expect("parses");
        let config = &parsed.config;
        assert_eq!(config.get_dbname(), Some("db"));
        assert_eq!(config.get_application_name(), Some("x"));
        assert_eq!(config.get_ssl_mode(), WireSslMode::Require);
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_millis(2500))
        );
        assert_eq!(config.get_keepalives_retries(), Some(7));
        assert_eq!(
            config.get_options(),
            Some("-c statement_timeout=5000 -c plan_cache_mode=force_generic_plan")
        );
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(5)));
    }

    #[test]
    fn the_defaults_bound_every_wait() {
        let parsed = settings("postgres://u@h/db?options=-c%20search_path%3Dx").expect("parses");
        let config = &parsed.config;
        assert_eq!(
            config.get_ssl_mode(),
            WireSslMode::Prefer,
            "libpq's default"
        );
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(10))
        );
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(10));
        assert_eq!(
            config.get_options(),
            Some(
                "-c search_path=x -c statement_timeout=5000 -c plan_cache_mode=force_generic_plan"
            ),
            "the URL's options are kept"
        );
        let own =
            settings("postgres://u@h/db?options=-c%20plan_cache_mode%3Dauto").expect("parses");
        assert_eq!(
            own.config.get_options(),
            Some("-c plan_cache_mode=auto -c statement_timeout=5000"),
            "a URL's own plan_cache_mode is kept"
        );
    }

    #[test]
    fn behind_a_transaction_pooler_settings_go_with_each_transaction_or_the_role() {
        let pooled = settings("postgres://u@bouncer:6432/db?pooler=transaction").expect("parses");
        assert_eq!(
            pooled.config.get_options(),
            None,
            "no start-up options: PgBouncer refuses them"
        );
        assert_eq!(
            pooled.pooler.per_call_transaction(),
            Some("BEGIN; DEALLOCATE ALL; SET LOCAL statement_timeout = 5000")
        );
        let keeping =
            settings("postgres://u@bouncer:6432/db?pooler=transaction-prepared").expect("parses");
        assert_eq!(keeping.config.get_options(), None);
        assert_eq!(keeping.pooler, Pooler::KeepsStatements);
        assert_eq!(keeping.pooler.per_call_transaction(), None);
        assert_eq!(
            settings("postgres://u@h/db?pooler=none")
                .expect("parses")
                .pooler,
            Pooler::None
        );
        let Err(StoreError::Config(refused)) = settings("postgres://u@h/db?pooler=session") else {
            panic!("an unknown pooler mode is refused");
        };
        assert!(refused.contains("`transaction-prepared`"), "{refused}");
        for mode in ["transaction", "transaction-prepared"] {
            let Err(StoreError::Config(refused)) = settings(&format!(
                "postgres://u@h/db?pooler={mode}&options=-c%20search_path%3Dx"
            )) else {
                panic!("options a pooler would drop are refused ({mode})");
            };
            assert!(refused.contains("ALTER ROLE"), "{refused}");
        }
    }

    #[test]
    fn several_hosts_share_the_connect_timeout() {
        let one = settings("postgres://u@h1:5432/db").expect("parses");
        assert_eq!(
            one.config.get_connect_timeout(),
            Some(&Duration::from_secs(5))
        );
        let two = settings("postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write")
            .expect("parses");
        assert_eq!(
            two.config.get_connect_timeout(),
            Some(&Duration::from_millis(2500)),
            "a silent first host leaves half the wait for the second"
        );
        let own = settings("postgres://u@h1,h2/db?connect_timeout=4").expect("parses");
        assert_eq!(
            own.config.get_connect_timeout(),
            Some(&Duration::from_secs(4))
        );
    }

    #[test]
    fn with_standbys_to_read_from_commits_wait_until_they_applied() {
        let mut store = StoreConfig::new("postgres://u@h/db");
        store.read_urls = vec!["postgres://u@standby/db".to_owned()];
        let with = PgSettings::from_url("postgres://u@h/db", &store).expect("parses");
        assert_eq!(
            with.config.get_options(),
            Some(
                "-c statement_timeout=5000 -c plan_cache_mode=force_generic_plan \
                 -c synchronous_commit=remote_apply"
            )
        );
        let own = PgSettings::from_url(
            "postgres://u@h/db?options=-c%20synchronous_commit%3Don",
            &store,
        )
        .expect("parses");
        assert!(
            !own.config
                .get_options()
                .expect("options")
                .contains("remote_apply"),
            "a URL's own synchronous_commit is kept"
        );
        let without = settings("postgres://u@h/db").expect("parses");
        assert!(
            !without
                .config
                .get_options()
                .expect("options")
                .contains("synchronous_commit")
        );
    }

    #[test]
    fn unusable_parameters_are_refused_by_name() {
        for (url, named) in [
            ("postgres://h/db?sslmode=sometimes", "sslmode"),
            ("postgres://h/db?sslcert=/c.pem", "sslcert"),
            ("postgres://h/db?tcp_user_timeout=soon", "tcp_user_timeout"),
            ("postgres://h/db?no_such_option=1", "no_such_option"),
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=/nonexistent/root.crt",
                "/nonexistent/root.crt",
            ),
        ] {
            let error = match settings(url) {
                Ok(_) => panic!("{url} accepted"),
                Err(error) => error,
            };
            assert!(
                petstore_domain::error::Chain(&error)
                    .to_string()
                    .contains(named),
                "{url}: {}",
                petstore_domain::error::Chain(&error)
            );
        }
    }
}
