//! How the async HTTP layer calls the synchronous storage interface: [`Database`], the only way
//! handlers and middleware reach the [`Storage`] (an `Arc<dyn Storage>`, whatever the backend).
//!
//! A call runs on actix's blocking thread pool, once one of as many slots as the storage has
//! capacity for is free. Two shortcuts are the backend's to offer, through the interface:
//! reads answered on the worker itself ([`Storage::nonblocking`]) and pet creation queued to a
//! writer of the backend's own ([`Storage::queue_create_pet`]). Nothing here knows which
//! backend it is talking to.

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use petstore_domain::{Pet, PetDraft, Storage, StorageError, StorageErrorKind};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::error::ApiError;

/// The storage, and the bound on the calls running at once.
pub struct Database {
    storage: Arc<dyn Storage>,
    slots: Semaphore,
    wait: Duration,
}

impl Database {
    /// Calls into `storage`, at most [`Capacity::max_calls`](petstore_domain::Capacity) at once.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        let capacity = storage.capacity();
        Self {
            slots: Semaphore::new(capacity.max_calls.max(1) as usize),
            wait: capacity.wait,
            storage,
        }
    }

    /// The storage itself.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Runs a storage call on the blocking thread pool, once a slot is free. A call beyond the
    /// storage's capacity waits here, as a future on the worker, instead of on a blocking thread
    /// of its own that would only wait for a connection: under load that kept dozens of threads
    /// (each with its allocator heap, and a context switch per hand-over) for 8 connections.
    /// The wait is bounded by the capacity's `wait`, after which the call answers `503`.
    pub async fn call<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
        T: Send + 'static,
    {
        let _slot = self.slot().await?;
        let storage = self.storage.clone();
        web::block(move || f(storage.as_ref()))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::from)
    }

    /// Runs a read: on the calling worker through the storage's non-blocking view when it has
    /// one and the read can run there at once, else like [`Self::call`]. `f` must be a read (one
    /// storage call) and may be called twice: once on the view, and again if that would block.
    pub async fn read<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: Fn(&dyn Storage) -> Result<T, StorageError> + Send + 'static,
        T: Send + 'static,
    {
        if let Some(view) = self.storage.nonblocking() {
            match f(view) {
                Err(error) if error.kind() == StorageErrorKind::WouldBlock => {}
                done => return done.map_err(ApiError::from),
            }
        }
        self.call(f).await
    }

    /// Stores a new pet: through the backend's own writer when it queues writes (answered once
    /// durable, with no blocking thread waiting), else like [`Self::call`].
    pub async fn create_pet(&self, draft: PetDraft) -> Result<Pet, ApiError> {
        let (sender, committed) = tokio::sync::oneshot::channel();
        let reply = Box::new(move |result| {
            // The request may have gone (client disconnected): nobody to tell.
            let _ = sender.send(result);
        });
        match self.storage.queue_create_pet(&draft, reply) {
            Ok(()) => committed
                .await
                .unwrap_or_else(|_| {
                    Err(StorageError::new(
                        StorageErrorKind::Unavailable,
                        "the storage's writer dropped a queued pet unanswered",
                    ))
                })
                .map_err(ApiError::from),
            Err(_unused) => self.call(move |storage| storage.create_pet(&draft)).await,
        }
    }

    async fn slot(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        match actix_web::rt::time::timeout(self.wait, self.slots.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed.
            Ok(Err(closed)) => Err(ApiError::internal(closed)),
            Err(_) => Err(ApiError::NoStorageSlot(self.wait)),
        }
    }
}
