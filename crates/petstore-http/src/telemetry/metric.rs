//! Prometheus metrics: the names this crate records under (through the `metrics` facade, a
//! no-op until the program installs a recorder), their descriptions ([`describe`]), and what
//! `GET /metrics` renders ([`Exporter`]).
//! `docs/operations.md` lists every metric with its labels and what to alert on.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use metrics::{Counter, Histogram, Unit, describe_counter, describe_gauge, describe_histogram};
use metrics_exporter_prometheus::PrometheusHandle;

/// Requests answered: `route` (the template, `unmatched` for none), `method`, `status`.
pub const HTTP_REQUESTS: &str = "petstore_http_requests_total";
/// Time from the request's arrival to its response: `route`, `method`.
pub const HTTP_DURATION: &str = "petstore_http_request_duration_seconds";
/// Rate-limit decisions: `outcome` (`allowed`, `limited`, `banned`, `error`), `plan`
/// (`anonymous` without a key), `subject` (`key`, `address`).
pub const RATE_LIMIT_DECISIONS: &str = "petstore_rate_limit_decisions_total";
/// The limiter's own: bans started (`subject`), failed calls to Redis, requests counted in
/// memory while Redis failed (recorded by `petstore-ratelimit`, described here).
pub use petstore_ratelimit::metric::{
    RATE_LIMIT_BANS, RATE_LIMIT_FALLBACKS, RATE_LIMIT_REDIS_ERRORS,
};
/// API-key lookups: `result` (`hit`: answered by the key cache; `miss`: read from the storage).
pub const KEY_CACHE_LOOKUPS: &str = "petstore_key_cache_lookups_total";
/// Storage calls, from the call to its answer (slot wait included): `operation`, `outcome`
/// (`ok`, `error`).
pub const STORE_CALL_DURATION: &str = "petstore_store_call_duration_seconds";
/// Time a storage call that found no free slot waited for one (a call that found one at once is
/// not recorded).
pub const STORE_SLOT_WAIT: &str = "petstore_store_slot_wait_seconds";
/// Storage calls refused (`503`) because no slot came free in time.
pub const STORE_SLOT_TIMEOUTS: &str = "petstore_store_slot_timeouts_total";
/// Storage calls that outlived their deadline (answered `503`).
pub const STORE_DEADLINES: &str = "petstore_store_deadline_exceeded_total";
/// Always 1: `version`, `backend`.
pub const BUILD_INFO: &str = "petstore_build_info";

/// Describes this crate's metrics to the recorder the program installed.
pub fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "Requests answered, by route template, method and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from a request's arrival to its response, by route template and method."
    );
    describe_counter!(
        RATE_LIMIT_DECISIONS,
        "Rate-limit decisions, by outcome (allowed, limited, banned, error), plan and subject kind."
    );
    describe_counter!(RATE_LIMIT_BANS, "Temporary bans started, by subject kind.");
    describe_counter!(
        RATE_LIMIT_REDIS_ERRORS,
        "Failed calls to the shared Redis rate-limit counters."
    );
    describe_counter!(
        RATE_LIMIT_FALLBACKS,
        "Requests counted in this instance's memory while Redis failed (fail open)."
    );
    describe_counter!(
        KEY_CACHE_LOOKUPS,
        "API-key lookups, by result: hit (key cache) or miss (read from the storage)."
    );
    describe_histogram!(
        STORE_CALL_DURATION,
        Unit::Seconds,
        "Storage calls from call to answer, slot wait included, by operation and outcome."
    );
    describe_histogram!(
        STORE_SLOT_WAIT,
        Unit::Seconds,
        "Time storage calls that found no free slot waited for one."
    );
    describe_counter!(
        STORE_SLOT_TIMEOUTS,
        "Storage calls answered 503 because no slot came free in time."
    );
    describe_counter!(
        STORE_DEADLINES,
        "Storage calls answered 503 because they outlived their deadline."
    );
    describe_gauge!(
        BUILD_INFO,
        "Always 1, labelled with the version and storage backend."
    );
}

/// What `GET /metrics` renders: every recorded metric, after `refresh` has set the gauges that
/// are read on demand (the connection pool's).
#[derive(Clone)]
pub struct Exporter {
    handle: PrometheusHandle,
    refresh: Arc<dyn Fn() + Send + Sync>,
}

impl Exporter {
    /// Renders `handle`'s metrics, calling `refresh` first each time.
    pub fn new(handle: PrometheusHandle, refresh: Arc<dyn Fn() + Send + Sync>) -> Self {
        Self { handle, refresh }
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        (self.refresh)();
        self.handle.render()
    }

    /// Folds recorded histogram samples into their buckets (every [`UPKEEP_EVERY`]).
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

/// Metric handles kept per label set, registered with the recorder on first use. Recording
/// through the `metrics!` macros finds the handle in the recorder's registry every time (the
/// key built from the labels, hashed and compared, several times a request); a kept handle
/// costs a map lookup here and an atomic update (the measurement: docs/performance.md).
/// Handles taken before a recorder is installed are no-ops for good: the server installs its
/// recorder before it builds its state.
/// The labels are the service's own (route templates, methods, statuses, plans), never a
/// client's: a fast hash, not a flood-resistant one.
pub struct Kept<K, H> {
    handles: RwLock<HashMap<K, H, foldhash::fast::RandomState>>,
}

impl<K, H> Default for Kept<K, H> {
    fn default() -> Self {
        Self {
            handles: RwLock::new(HashMap::default()),
        }
    }
}

impl<K: Hash + Eq, H: Clone> Kept<K, H> {
    /// The handle for `labels`, registered with `register` the first time.
    pub fn get<Q>(&self, labels: &Q, register: impl FnOnce() -> H) -> H
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let kept = self.handles.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(handle) = kept.get(labels) {
            return handle.clone();
        }
        drop(kept);
        let mut kept = self.handles.write().unwrap_or_else(PoisonError::into_inner);
        kept.entry(labels.to_owned())
            .or_insert_with(register)
            .clone()
    }
}

impl<K, H> fmt::Debug for Kept<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kept").finish_non_exhaustive()
    }
}

/// The per-request metrics' kept handles: what `observe` and `admission` record.
#[derive(Debug, Default)]
pub struct RequestMetrics {
    /// [`HTTP_REQUESTS`] and [`HTTP_DURATION`], by route template.
    routes: Kept<String, Arc<RouteMetrics>>,
    /// [`RATE_LIMIT_DECISIONS`], by outcome, plan and subject.
    decisions: Kept<(&'static str, &'static str, &'static str), Counter>,
}

#[derive(Debug, Default)]
struct RouteMetrics {
    requests: Kept<(&'static str, u16), Counter>,
    durations: Kept<&'static str, Histogram>,
}

impl RequestMetrics {
    /// Counts a request answered and records its duration.
    pub fn request(&self, route: &str, method: &'static str, status: u16, seconds: f64) {
        let kept = self.routes.get(route, Arc::default);
        let requests = kept.requests.get(&(method, status), || {
            let mut digits = itoa::Buffer::new();
            metrics::counter!(
                HTTP_REQUESTS,
                "route" => route.to_owned(),
                "method" => method,
                "status" => digits.format(status).to_owned()
            )
        });
        requests.increment(1);
        let durations = kept.durations.get(
            &method,
            || metrics::histogram!(HTTP_DURATION, "route" => route.to_owned(), "method" => method),
        );
        durations.record(seconds);
    }

    /// Counts a rate-limit decision.
    pub fn decision(&self, outcome: &'static str, plan: &'static str, subject: &'static str) {
        let counter = self.decisions.get(&(outcome, plan, subject), || {
            metrics::counter!(
                RATE_LIMIT_DECISIONS,
                "outcome" => outcome,
                "plan" => plan,
                "subject" => subject
            )
        });
        counter.increment(1);
    }
}
