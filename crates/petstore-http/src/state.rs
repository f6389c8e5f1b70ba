//! [`AppState`]: everything the handlers and middleware share, built by one constructor that
//! the server and every test use. It opens nothing, reads no file and starts no thread: what
//! needs set-up (the storage, a limiter counting in Redis, the resolver checking webhook URLs)
//! and the API's documents (`petstore-openapi`) are built by the program and handed over.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use petstore_domain::webhook::ReceiverCheck;
use petstore_domain::webhook::UrlPolicy;
use petstore_domain::{Clock, Storage, SystemClock};

use crate::auth::Authenticator;
use crate::config::{Config, CorsOrigins, IdempotencySettings};
use crate::db::Database;
use crate::extract::BodyTimeout;
use crate::links::Links;
use crate::ratelimit::{HeaderCache, Limiter, TrustedProxies};
use crate::routes::openapi::Documents;
use crate::telemetry::metric::{Exporter, RequestMetrics};
use crate::telemetry::trace::Sampling;

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
    /// What the trace sampler decides before a trace has an id.
    pub sampling: Sampling,
    /// Where a webhook endpoint's host leads, checked when it is registered or changed.
    pub receivers: Arc<dyn ReceiverCheck>,
    /// The API's descriptions, served at `{base}/openapi.json` and `/admin/v1/openapi.json`.
    pub documents: Documents,
    /// The API's requests under way (those that pass admission: not health checks, metrics
    /// scrapes or the admin API).
    pub in_flight: InFlight,
}

/// How many requests are under way: what the program's webhook sender gives way to.
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// The requests under way now.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// A request is under way until what this returns is dropped (answered, or given up).
    #[must_use = "the request is under way only while this is held"]
    pub(crate) fn enter(&self) -> Entered<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Entered(&self.0)
    }
}

/// A request under way ([`InFlight::enter`]).
pub(crate) struct Entered<'a>(&'a AtomicUsize);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AppState {
    /// The state a server runs with: the key cache and links that `config` describes, over
    /// `storage`, counting with `limiter` (built by the program: in this process, or in Redis),
    /// checking webhook URLs with `receivers` and serving `documents`, on the system clock.
    pub fn new(
        config: &Config,
        storage: Arc<dyn Storage>,
        limiter: Limiter,
        receivers: Arc<dyn ReceiverCheck>,
        documents: Documents,
    ) -> Self {
        Self {
            db: Database::new(storage),
            clock: Arc::new(SystemClock),
            auth: Authenticator::new(config.key_cache_ttl, KEY_CACHE_CAPACITY),
            links: Links::new(config.http.clone()),
            limiter,
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
            sampling: config.sampling,
            receivers,
            documents,
            in_flight: InFlight::default(),
        }
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
}
