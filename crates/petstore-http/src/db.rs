//! How the async HTTP layer calls the synchronous storage interface: [`Database`], the only way
//! handlers and middleware reach the [`Storage`] (an `Arc<dyn Storage>`, whatever the backend).
//!
//! A call runs on actix's blocking thread pool, once one of as many slots as the storage has
//! capacity for is free. Two shortcuts are the backend's to offer, through the interface:
//! reads answered on the worker itself ([`Storage::nonblocking`]) and pet creation queued to a
//! writer of the backend's own ([`Storage::queue_create_pet`]). Nothing here knows which
//! backend it is talking to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix_web::rt::time::timeout;
use actix_web::web;
use petstore_domain::{CreatePet, Pet, Storage, StorageError, StorageErrorKind};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::telemetry::metric;

/// The storage, and the bounds on its calls: how many run at once, how long one waits for its
/// turn, how long one may take.
pub struct Database {
    storage: Arc<dyn Storage>,
    slots: Arc<Semaphore>,
    wait: Duration,
    deadline: Duration,
}

impl Database {
    /// Calls into `storage`, at most [`Capacity::max_calls`](petstore_domain::Capacity) at once.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        let capacity = storage.capacity();
        Self {
            slots: Arc::new(Semaphore::new(capacity.max_calls.max(1) as usize)),
            wait: capacity.wait,
            deadline: capacity.deadline,
            storage,
        }
    }

    /// Runs a storage call on the blocking thread pool, once a slot is free. A call beyond the
    /// storage's capacity waits here, as a future on the worker, instead of on a blocking thread
    /// of its own that would only wait for a connection: under load that kept dozens of threads
    /// (each with its allocator heap, and a context switch per hand-over) for 8 connections.
    /// The wait is bounded by the capacity's `wait`, after which the call answers `503`.
    ///
    /// The call itself is bounded by the capacity's `deadline`: past it the request answers
    /// `503` while the call, if it has started, finishes on its thread whenever the storage
    /// answers (its slot stays taken until then, so a silent database cannot collect more work
    /// than it has connections); a call not yet started when the caller stops waiting (deadline,
    /// or client gone) never starts.
    ///
    /// `operation` names the call in the metrics (the storage method it makes).
    pub async fn call<T, F>(&self, operation: &'static str, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
        T: Send + 'static,
    {
        let started = Instant::now();
        let result = self.run(f).await;
        record(operation, started, &result);
        result
    }

    async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
        T: Send + 'static,
    {
        let slot = self.slot().await?;
        let storage = self.storage.clone();
        let given_up = GiveUp(Arc::new(AtomicBool::new(false)));
        let abandoned = given_up.0.clone();
        // The request's span goes along, so what the storage logs carries the request id.
        let span = tracing::Span::current();
        let call = web::block(move || {
            let _slot = slot;
            if abandoned.load(Ordering::Acquire) {
                return Err(StorageError::new(
                    StorageErrorKind::Unavailable,
                    "given up on before it started",
                ));
            }
            span.in_scope(|| f(storage.as_ref()))
        });
        match timeout(self.deadline, call).await {
            Ok(done) => done.map_err(ApiError::internal)?.map_err(ApiError::from),
            Err(_) => {
                metrics::counter!(metric::STORE_DEADLINES).increment(1);
                Err(ApiError::StorageDeadline(self.deadline))
            }
        }
    }

    /// Runs a read: on the calling worker through the storage's non-blocking view when it has
    /// one and the read can run there at once, else like [`Self::call`]. `f` must be a read (one
    /// storage call) and may be called twice: once on the view, and again if that would block.
    pub async fn read<T, F>(&self, operation: &'static str, f: F) -> Result<T, ApiError>
    where
        F: Fn(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
        T: Send + 'static,
    {
        let started = Instant::now();
        let result = match self.storage.nonblocking().map(&f) {
            Some(Err(error)) if error.kind() == StorageErrorKind::WouldBlock => self.run(f).await,
            Some(done) => done.map_err(ApiError::from),
            None => self.run(f).await,
        };
        record(operation, started, &result);
        result
    }

    /// Stores a new pet: through the backend's own writer when it queues writes (answered once
    /// durable, with no blocking thread waiting), else like [`Self::call`].
    pub async fn create_pet(&self, pet: CreatePet) -> Result<Pet, ApiError> {
        let started = Instant::now();
        let result = self.queue_create_pet(pet).await;
        record("create_pet", started, &result);
        result
    }

    async fn queue_create_pet(&self, pet: CreatePet) -> Result<Pet, ApiError> {
        let (sender, committed) = tokio::sync::oneshot::channel();
        let reply = Box::new(move |result| {
            // The request may have gone (client disconnected): nobody to tell.
            let _ = sender.send(result);
        });
        match self.storage.queue_create_pet(pet, reply) {
            Ok(()) => timeout(self.deadline, committed)
                .await
                .map_err(|_| ApiError::StorageDeadline(self.deadline))?
                .unwrap_or_else(|_| {
                    Err(StorageError::new(
                        StorageErrorKind::Unavailable,
                        "the storage's writer dropped a queued pet unanswered",
                    ))
                })
                .map_err(ApiError::from),
            Err((pet, _unused)) => self.run(move |storage| storage.create_pet(&pet)).await,
        }
    }

    async fn slot(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        let started = Instant::now();
        let slot = match timeout(self.wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed.
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

/// Records a storage call's duration and outcome.
fn record<T>(operation: &'static str, started: Instant, result: &Result<T, ApiError>) {
    let outcome = if result.is_ok() { "ok" } else { "error" };
    metrics::histogram!(
        metric::STORE_CALL_DURATION,
        "operation" => operation,
        "outcome" => outcome
    )
    .record(started.elapsed().as_secs_f64());
}

/// Raises its flag when dropped: however the caller stops waiting (an answer, the deadline, the
/// client gone), a call that has not started by then never starts.
struct GiveUp(Arc<AtomicBool>);

impl Drop for GiveUp {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}
