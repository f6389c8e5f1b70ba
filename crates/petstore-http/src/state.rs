//! [`AppState`]: everything the handlers and middleware share, built by one constructor that
//! the server and every test use.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use petstore_domain::Storage;
use petstore_domain::webhook::UrlPolicy;

use crate::auth::Authenticator;
use crate::clock::{Clock, SystemClock};
use crate::config::{Config, CorsOrigins, IdempotencySettings, RateLimitConfig};
use crate::db::Database;
use crate::error::Chain;
use crate::extract::BodyTimeout;
use crate::links::Links;
use crate::ratelimit::{HeaderCache, Limiter, RedisCounters, TrustedProxies};
use crate::telemetry::metric::{Exporter, RequestMetrics};

/// How many valid keys the key cache holds at most (and as many tokens known not to be keys).
const KEY_CACHE_CAPACITY: usize = 100_000;

/// Shared by every worker. Built once, outside `HttpServer::new`, so that every worker sees the
/// same storage slots, key cache and rate-limit counters (a limiter built per worker would
/// count per worker: a silent bug).
pub struct AppState {
    /// The storage, behind its one interface.
    pub db: Database,
    /// Wall-clock time.
    pub clock: Arc<dyn Clock>,
    /// Who is calling.
    pub auth: Authenticator,
    /// Addresses written into responses.
    pub links: Links,
    /// Rate limits and bans.
    pub limiter: Limiter,
    /// The rate-limit header values fixed by each distinct limits (built once each).
    pub limit_headers: HeaderCache,
    /// Proxies whose forwarding headers name the client address.
    pub trusted_proxies: TrustedProxies,
    /// How long a request body may take to arrive.
    pub body_timeout: BodyTimeout,
    /// Browser origins allowed to call the API.
    pub cors: CorsOrigins,
    /// Set when the server has been told to stop: `/readyz` answers `503` from then on, so load
    /// balancers stop sending before the listener closes.
    pub draining: AtomicBool,
    /// `Idempotency-Key` records: how long they are kept, how long a claim may stay unfinished.
    pub idempotency: IdempotencySettings,
    /// The metrics `GET /metrics` serves on the main listener; `None` when they are off or
    /// served on a listener of their own.
    pub metrics: Option<Exporter>,
    /// The handles of the metrics every request records.
    pub request_metrics: RequestMetrics,
    /// What a webhook endpoint's URL may be.
    pub webhook_policy: UrlPolicy,
}

impl AppState {
    /// The state a server runs with: the limiter, key cache and links that `config` describes,
    /// over `storage`, on the system clock. Must run inside the async runtime (a Redis client
    /// lives there).
    pub fn new(config: &Config, storage: Arc<dyn Storage>) -> Result<Self, Box<dyn Error>> {
        Ok(Self {
            db: Database::new(storage),
            clock: Arc::new(SystemClock),
            auth: Authenticator::new(config.key_cache_ttl, KEY_CACHE_CAPACITY),
            links: Links::new(config.http.clone()),
            limiter: limiter(&config.rate_limit)?,
            limit_headers: HeaderCache::default(),
            trusted_proxies: config.rate_limit.trusted_proxies.clone(),
            body_timeout: BodyTimeout(config.client_body_timeout),
            cors: config.cors.clone(),
            draining: AtomicBool::new(false),
            idempotency: IdempotencySettings {
                retention: config.idempotency_retention,
                ..IdempotencySettings::default()
            },
            metrics: None,
            request_metrics: RequestMetrics::default(),
            webhook_policy: config.webhook_policy,
        })
    }

    /// The same state on another clock (tests move time).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// The same state serving `exporter`'s metrics at `/metrics`.
    pub fn with_metrics(self, exporter: Exporter) -> Self {
        Self {
            metrics: Some(exporter),
            ..self
        }
    }

    /// The same state with another limiter (tests count in a store of their own).
    pub fn with_limiter(self, limiter: Limiter) -> Self {
        Self { limiter, ..self }
    }
}

/// The limiter `config` describes: counters in this process, or in Redis.
pub fn limiter(config: &RateLimitConfig) -> Result<Limiter, Box<dyn Error>> {
    let anonymous = config.anonymous_limits();
    Ok(match &config.redis_url {
        None => Limiter::in_memory(config.bans, anonymous, config.addresses),
        Some(url) => Limiter::shared(
            Box::new(
                RedisCounters::with_ca(
                    url,
                    ca_pem(config)?,
                    &config.prefix,
                    config.timeout,
                    config.bans.forgive_after_seconds,
                )
                .map_err(|error| {
                    // Named, as an operator wrote it, without its password.
                    let shown = petstore_domain::redacted_url(url);
                    format!("--rate-limit-store {shown:?}: {}", Chain(&error))
                })?,
            ),
            config.on_failure,
            config.bans,
            anonymous,
            config.addresses,
        ),
    })
}

/// The certificate authority `--rate-limit-ca-file` names, read once at start-up.
fn ca_pem(config: &RateLimitConfig) -> Result<Option<Vec<u8>>, Box<dyn Error>> {
    let Some(path) = &config.ca_file else {
        return Ok(None);
    };
    let pem = std::fs::read(path).map_err(|error| {
        format!(
            "cannot read --rate-limit-ca-file {}: {error}",
            path.display()
        )
    })?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        return Err(format!(
            "--rate-limit-ca-file {} holds no PEM certificate",
            path.display()
        )
        .into());
    }
    Ok(Some(pem))
}
