//! A `mysql://` (or `mariadb://`) URL as MySQL's clients read it, turned into mysql_async's
//! options: TLS by rustls from `ssl-mode` (`disabled`, `preferred` (the default without
//! `ssl-ca`, as in MySQL's clients), `required`, `verify_identity` (the default with `ssl-ca`);
//! `sslmode` and `ssl_mode` are taken too; `verify_ca` is refused, see below) and `ssl-ca` (a
//! PEM file of the CAs to trust; `sslrootcert` and `ssl_ca` too), which only `verify_identity`
//! may come with. Other parameters are mysql_async's; one it does not know is refused.

use std::path::PathBuf;
use std::time::Duration;

use diesel_async::{AsyncMysqlConnection, SimpleAsyncConnection};
use mysql_async::{Opts, OptsBuilder, SslOpts};
use percent_encoding::percent_decode_str;

use crate::StoreError;

/// How to open a connection.
pub(super) struct MysqlSettings {
    /// With TLS as `ssl-mode` asks (none for `disabled`).
    opts: Opts,
    /// `preferred`: where the server offers no TLS, connect without (`opts_plain`).
    plain_fallback: Option<Opts>,
    mode: &'static str,
    /// Run on every new connection.
    session: String,
}

impl MysqlSettings {
    /// Reads `url`; `session` is what every new connection runs first.
    pub(super) fn from_url(url: &str, session: String) -> Result<Self, StoreError> {
        let url = match url.strip_prefix("mariadb://") {
            Some(rest) => format!("mysql://{rest}"),
            None => url.to_owned(),
        };
        let (base, query) = url.split_once('?').unwrap_or((&url, ""));
        let (mut mode, mut ca) = (None, None);
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = || {
                percent_decode_str(value)
                    .decode_utf8()
                    .map(|value| value.into_owned())
                    .map_err(|_| {
                        StoreError::Config(format!("the database URL's `{name}` is not UTF-8"))
                    })
            };
            match name {
                "ssl-mode" | "sslmode" | "ssl_mode" => {
                    mode = Some(value()?.to_ascii_lowercase().replace('-', "_"));
                }
                "ssl-ca" | "sslrootcert" | "ssl_ca" => ca = Some(PathBuf::from(value()?)),
                _ => rest.push(pair),
            }
        }
        let plain_url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let plain = Opts::from_url(&plain_url).map_err(|error| {
            StoreError::Config(format!("the database URL is not usable: {error}"))
        })?;
        if let Some(ca) = &ca
            && !ca.is_file()
        {
            return Err(StoreError::Config(format!(
                "the database URL's `ssl-ca` is not a file: {}",
                ca.display()
            )));
        }
        // A CA named means the server is to be verified with it (as PostgreSQL's `require`
        // with `sslrootcert` verifies): with no `ssl-mode`, `verify_identity`; with a mode that
        // would not use it, refused (MySQL's clients would verify the chain alone, which this
        // driver cannot: `verify_ca` below).
        let mode = match (mode, &ca) {
            (None, Some(_)) => "verify_identity".to_owned(),
            (None, None) => "preferred".to_owned(),
            (Some(mode), Some(_))
                if matches!(mode.as_str(), "disabled" | "preferred" | "required") =>
            {
                return Err(StoreError::Config(format!(
                    "the database URL names `ssl-ca`, but `ssl-mode={mode}` would not verify the \
                     server with it: use `ssl-mode=verify_identity` (or leave `ssl-mode` out)"
                )));
            }
            (Some(mode), _) => mode,
        };
        let trusted = || match &ca {
            Some(ca) => SslOpts::default()
                .with_root_certs(vec![ca.clone().into()])
                .with_disable_built_in_roots(true),
            None => SslOpts::default(),
        };
        let (ssl, mode): (Option<SslOpts>, &'static str) = match mode.as_str() {
            "disabled" => (None, "disabled"),
            // Encrypted, the server's certificate not checked (as MySQL's clients do).
            "preferred" | "required" => (
                Some(
                    SslOpts::default()
                        .with_danger_accept_invalid_certs(true)
                        .with_danger_skip_domain_validation(true),
                ),
                if mode == "preferred" {
                    "preferred"
                } else {
                    "required"
                },
            ),
            // mysql_async's rustls verifier cannot check the chain without the name (its
            // name exception matches an error text rustls no longer writes): refused rather
            // than quietly checking more, or less, than asked.
            "verify_ca" => {
                return Err(StoreError::Config(
                    "the database URL's `ssl-mode=verify_ca` is not supported (the driver cannot \
                     check the CA without the server's name): use `verify_identity` (with \
                     `ssl-ca`, or the built-in roots without it)"
                        .into(),
                ));
            }
            "verify_identity" => (Some(trusted()), "verify_identity"),
            other => {
                return Err(StoreError::Config(format!(
                    "the database URL's `ssl-mode` is {other:?}: disabled, preferred, required \
                     or verify_identity"
                )));
            }
        };
        let with = |ssl: Option<SslOpts>| {
            Opts::from(
                OptsBuilder::from_opts(plain.clone())
                    .ssl_opts(ssl)
                    // Rows matched, not only changed, as the other backends count them.
                    .client_found_rows(true)
                    // diesel-async keeps its own.
                    .stmt_cache_size(0),
            )
        };
        Ok(Self {
            opts: with(ssl),
            plain_fallback: (mode == "preferred").then(|| with(None)),
            mode,
            session,
        })
    }

    /// Opens a connection and sets up its session; `statement_timeout` (zero: none) bounds its
    /// statements.
    pub(super) async fn connect(
        &self,
        statement_timeout: Duration,
    ) -> Result<AsyncMysqlConnection, StoreError> {
        let conn = match mysql_async::Conn::new(self.opts.clone()).await {
            Ok(conn) => conn,
            Err(mysql_async::Error::Driver(
                mysql_async::DriverError::NoClientSslFlagFromServer,
            )) if self.plain_fallback.is_some() => {
                let plain = self
                    .plain_fallback
                    .clone()
                    .expect("BUG: the match guard checked `plain_fallback.is_some()`");
                mysql_async::Conn::new(plain)
                    .await
                    .map_err(|error| self.connect_error(&error))?
            }
            Err(error) => return Err(self.connect_error(&error)),
        };
        let mut conn = AsyncMysqlConnection::try_from(conn)
            .await
            .map_err(|error| StoreError::Connect(error.into()))?;
        conn.batch_execute(&self.session)
            .await
            .map_err(|error| StoreError::Connect(error.into()))?;
        // MariaDB's statement time limit (seconds, fractions allowed); MySQL's is for reads only
        // and named otherwise: where the first is unknown, the second.
        let seconds = statement_timeout.as_secs_f64();
        if conn
            .batch_execute(&format!("SET SESSION max_statement_time = {seconds}"))
            .await
            .is_err()
        {
            conn.batch_execute(&format!(
                "SET SESSION max_execution_time = {}",
                statement_timeout.as_millis()
            ))
            .await
            .map_err(|error| StoreError::Connect(error.into()))?;
        }
        Ok(conn)
    }

    fn connect_error(&self, error: &mysql_async::Error) -> StoreError {
        StoreError::Connect(
            format!("connecting with ssl-mode={}: {}", self.mode, explain(error)).into(),
        )
    }
}

/// A connection's failure in a sentence: the server's own words and code (with what to do for
/// a missing database or a refused login), or the network's, once (mysql_async's own text
/// quotes unevenly and repeats its I/O prefix).
fn explain(error: &mysql_async::Error) -> String {
    use mysql_async::{Error, IoError};
    match error {
        Error::Server(server) => {
            let hint = match server.code {
                // ER_BAD_DB_ERROR
                1049 => "; create it (`CREATE DATABASE name`) or name another in the URL",
                // ER_ACCESS_DENIED_ERROR, ER_DBACCESS_DENIED_ERROR
                1044 | 1045 => "; check the URL's user and password, and the user's grants",
                _ => "",
            };
            format!(
                "the server refused: {} (MySQL error {}, SQLSTATE {}){hint}",
                server.message, server.code, server.state
            )
        }
        Error::Io(IoError::Io(io)) => format!("cannot reach the server: {io}"),
        Error::Io(IoError::Tls(tls)) => format!("TLS failed: {tls}"),
        Error::Driver(driver) => format!("{driver}"),
        Error::Url(url) => format!("the URL: {url}"),
        Error::Other(other) => format!("{other}"),
    }
}
