//! [`Database`]: the only way handlers and middleware reach the [`Storage`] (an
//! `Arc<dyn Storage>`, whatever the backend), with what is the same for every backend: a bound
//! on the calls in flight, a deadline per call, and each call's metrics. How a call runs (on this
//! worker, on threads of the backend's own, over connections this worker drives) is the
//! backend's business; nothing here knows which backend it is talking to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::rt::time::timeout;
use futures_util::future::BoxFuture;
use metrics::Histogram;
#[cfg(doc)]
use petstore_domain::StorageError;
use petstore_domain::{Storage, TRACES};
use tokio::sync::{Semaphore, SemaphorePermit, TryAcquireError};
use tracing::Instrument;
use tracing::field::Empty;

use crate::error::ApiError;
use crate::telemetry::metric::{self, Kept};

/// The storage, and the bounds on its calls: how many run at once, how long one waits for its
/// turn, how long one may take.
pub struct Database {
    storage: Arc<dyn Storage>,
    /// The database, as OpenTelemetry names it (`db.system.name`).
    system: &'static str,
    slots: Semaphore,
    wait: Duration,
    deadline: Duration,
    /// [`metric::STORE_CALL_DURATION`], by operation and outcome.
    durations: Kept<(&'static str, &'static str), Histogram>,
    /// The last readiness check: when it ended, and what it found.
    readiness: tokio::sync::Mutex<Option<(Instant, Readiness)>>,
}

/// `storage_call!(state.db, find_pet(id))`: [`Database::call`] making one [`Storage`] method's
/// call, labelled in the metrics and traces with that method's name.
macro_rules! storage_call {
    ($db:expr, $method:ident($($arg:expr),* $(,)?)) => {
        $db.call(stringify!($method), |storage| storage.$method($($arg),*))
    };
}
pub(crate) use storage_call;

/// What a readiness check found: ready, or why not (shared by the answers given from it).
pub type Readiness = Result<(), Arc<ApiError>>;

/// How long [`Database::check_ready`] waits for the storage's answer: load balancers poll
/// readiness with short timeouts of their own, and a silent database must read as "not ready",
/// not as a hung check.
pub const READY_DEADLINE: Duration = Duration::from_secs(2);

/// How long a readiness check's result answers for: `/readyz` needs no key and counts against
/// no limit, so a flood of it costs at most one storage read a second.
pub const READY_MAX_AGE: Duration = Duration::from_secs(1);

impl Database {
    /// Calls into `storage`, at most [`Capacity::max_calls`](petstore_domain::Capacity) at once.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        let capacity = storage.capacity();
        Self {
            slots: Semaphore::new(capacity.max_calls.max(1) as usize),
            wait: capacity.wait,
            deadline: capacity.deadline,
            system: storage.system(),
            storage,
            durations: Kept::default(),
            readiness: tokio::sync::Mutex::new(None),
        }
    }

    /// Whether the storage is ready (it answers within [`READY_DEADLINE`], its schema
    /// current), from a check at most [`READY_MAX_AGE`] old: a caller that finds none checks,
    /// and those that come meanwhile wait for that check's result rather than each making one.
    pub async fn check_ready(&self) -> Readiness {
        let mut last = self.readiness.lock().await;
        if let Some((checked, readiness)) = &*last
            && checked.elapsed() < READY_MAX_AGE
        {
            return readiness.clone();
        }
        let readiness = timeout(READY_DEADLINE, storage_call!(self, check_ready()))
            .await
            .unwrap_or(Err(ApiError::StorageDeadline(READY_DEADLINE)))
            .map_err(Arc::new);
        *last = Some((Instant::now(), readiness.clone()));
        readiness
    }

    /// Makes one storage call, `f(storage)`, once one of the storage's slots is free.
    ///
    /// A call beyond the storage's capacity waits here, as a future, up to the capacity's
    /// `wait`, after which it answers `503`. The call itself is bounded by the capacity's
    /// `deadline`: past it the request answers `503` and the call's future is dropped (the
    /// backend then leaves nothing half-done, and drops a connection it cannot trust; a write
    /// given up on may still complete once, never half).
    ///
    /// `operation` names the call in the metrics (the storage method it makes).
    /// The call's own error is anything that becomes an [`ApiError`] (a [`StorageError`], or
    /// an operation's error that wraps one).
    pub async fn call<'a, T, E, F>(&'a self, operation: &'static str, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&'a dyn Storage) -> BoxFuture<'a, Result<T, E>>,
        ApiError: From<E>,
    {
        let started = Instant::now();
        // Every field given here (worked out only when the span is made): each recorded later
        // would be a dispatch of its own.
        let span = tracing::info_span!(
            target: TRACES,
            "db",
            otel.name = call_name(operation),
            otel.kind = "client",
            otel.status_code = Empty,
            db.system.name = self.system,
            db.operation.name = operation,
            db.collection.name = collection(operation),
            error.type = Empty,
        );
        let result = self.run(f).instrument(span.clone()).await;
        let outcome = if result.is_ok() { "ok" } else { "error" };
        if let Err(error) = &result
            && !span.is_disabled()
        {
            span.record("otel.status_code", "error");
            span.record("error.type", error.code().as_str());
        }
        self.durations
            .get(&(operation, outcome), || {
                metrics::histogram!(
                    metric::STORE_CALL_DURATION,
                    "operation" => operation,
                    "outcome" => outcome
                )
            })
            .record(started.elapsed().as_secs_f64());
        result
    }

    async fn run<'a, T, E, F>(&'a self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&'a dyn Storage) -> BoxFuture<'a, Result<T, E>>,
        ApiError: From<E>,
    {
        let _slot = self.slot().await?;
        match timeout(self.deadline, f(self.storage.as_ref())).await {
            Ok(result) => result.map_err(ApiError::from),
            Err(_) => {
                metrics::counter!(metric::STORE_DEADLINES).increment(1);
                Err(ApiError::StorageDeadline(self.deadline))
            }
        }
    }

    /// A slot: at once when one is free, else after waiting (recorded in
    /// [`metric::STORE_SLOT_WAIT`]) up to the capacity's `wait`.
    async fn slot(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        match self.slots.try_acquire() {
            Ok(permit) => return Ok(permit),
            // The semaphore is never closed.
            Err(TryAcquireError::Closed) => return Err(ApiError::internal("storage slots closed")),
            Err(TryAcquireError::NoPermits) => {}
        }
        let started = Instant::now();
        let waiting = tracing::info_span!(target: TRACES, "wait for a storage slot");
        let slot = match timeout(self.wait, self.slots.acquire())
            .instrument(waiting)
            .await
        {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(closed)) => Err(ApiError::internal(closed)),
            Err(_) => {
                metrics::counter!(metric::STORE_SLOT_TIMEOUTS).increment(1);
                Err(ApiError::NoStorageSlot(self.wait))
            }
        };
        metrics::histogram!(metric::STORE_SLOT_WAIT).record(started.elapsed().as_secs_f64());
        slot
    }
}

/// A storage call's span name (semantic conventions: the operation, then its table).
fn call_name(operation: &str) -> String {
    match collection(operation) {
        Some(collection) => format!("{operation} {collection}"),
        None => operation.to_owned(),
    }
}

/// The table an operation is about (`db.collection.name`), by its name.
fn collection(operation: &str) -> Option<&'static str> {
    match operation {
        "list_pets" | "create_pet" | "find_pet" | "inventory" => Some("pets"),
        "list_orders" | "place_order" | "find_order" | "cancel_order" | "change_order" => {
            Some("orders")
        }
        "find_active_key" | "touch_key" | "ban_key" | "create_key" | "list_keys_page"
        | "find_key" | "update_key" | "rotate_key" | "revoke_key" | "unban_key" => Some("api_keys"),
        "find_admin_token" => Some("admin_tokens"),
        "claim_idempotency_key"
        | "complete_idempotency_key"
        | "release_idempotency_key"
        | "prune_idempotency_keys" => Some("idempotency_keys"),
        "check_ready" => Some("schema_migrations"),
        operation if operation.contains("deliver") => Some("webhook_deliveries"),
        operation if operation.contains("webhook") => Some("webhook_endpoints"),
        _ => None,
    }
}
