//! What the two async backends (PostgreSQL, MariaDB/MySQL) keep per runtime thread, written
//! once: a connection's socket belongs to the runtime that opened it, so each thread that calls
//! gets a pool of its own, set up on its first call ([`PerThread`]), sized alike ([`Limits`]),
//! built alike ([`pool`]), checked out alike, timed ([`checkout`]), and held alike while a call
//! runs ([`InCall`]).

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use deadpool::Runtime;
use deadpool::managed::{Manager, Object, Pool};
use futures_util::future::BoxFuture;
use petstore_domain::{Capacity, StorageErrorKind};
use tracing::Instrument;

use crate::error::BoxError;
use crate::{StoreConfig, StoreError, metrics};

/// A value per thread (a pool, and what goes with it), by the thread that uses it; `None` once
/// closed.
pub(crate) struct PerThread<T>(RwLock<Option<HashMap<ThreadId, T>>>);

impl<T: Clone> PerThread<T> {
    /// None yet.
    pub(crate) fn new() -> Self {
        Self(RwLock::new(Some(HashMap::new())))
    }

    /// This thread's, made by `make` on its first use; [`StoreError::Closed`] once closed.
    pub(crate) fn get(
        &self,
        make: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let me = thread::current().id();
        if let Some(all) = &*self.0.read().unwrap_or_else(PoisonError::into_inner)
            && let Some(found) = all.get(&me)
        {
            return Ok(found.clone());
        }
        let mut all = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let all = all.as_mut().ok_or(StoreError::Closed)?;
        if let Some(found) = all.get(&me) {
            return Ok(found.clone());
        }
        let made = make()?;
        all.insert(me, made.clone());
        Ok(made)
    }

    /// Calls `f` with every thread's (for the pool gauges, or to drop idle connections).
    pub(crate) fn each(&self, mut f: impl FnMut(&T)) {
        if let Some(all) = &*self.0.read().unwrap_or_else(PoisonError::into_inner) {
            all.values().for_each(&mut f);
        }
    }

    /// Takes every thread's out: later calls fail as closed.
    pub(crate) fn close(&self) -> Vec<T> {
        let all = self
            .0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        all.into_iter().flat_map(HashMap::into_values).collect()
    }
}

/// What both async backends take alike from the store's configuration: how large each thread's
/// pool is, how long a call waits for a connection, and how long it may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Each thread's pool: the pool size shared among the workers, at least one.
    pub(crate) per_thread: usize,
    /// Most calls at once.
    pub(crate) max_calls: u32,
    /// How long a call waits for a connection to come free or to open.
    pub(crate) wait: Duration,
    /// The longest a statement may run on the server.
    pub(crate) statement_timeout: Duration,
    /// How long a call may take before it is given up on.
    pub(crate) deadline: Duration,
}

impl Limits {
    /// `config`'s: as many calls at once as the pools have connections, and `more_calls`.
    pub(crate) fn new(config: &StoreConfig, more_calls: u32) -> Self {
        Self {
            per_thread: (config.pool_size / config.workers.max(1)).max(1) as usize,
            max_calls: config.pool_size.saturating_add(more_calls),
            wait: config.connect_timeout,
            statement_timeout: config.statement_timeout,
            deadline: config.deadline(),
        }
    }

    /// Calls run on the caller's runtime, none on its blocking threads (but migrations, once).
    pub(crate) fn capacity(&self) -> Capacity {
        Capacity {
            max_calls: self.max_calls,
            wait: self.wait,
            deadline: self.deadline,
            blocking_calls: 1,
        }
    }
}

/// A thread's pool of at most `size` connections of `manager`'s, waiting at most `wait` for one
/// to come free or to open.
pub(crate) fn pool<M: Manager>(
    manager: M,
    size: usize,
    wait: Duration,
) -> Result<Pool<M>, StoreError> {
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(wait))
        .create_timeout(Some(wait))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|error| StoreError::Config(format!("connection pool: {error}")))
}

/// A connection of `pool`, its wait recorded (`POOL_CHECKOUT`, by `backend`); a checkout that
/// failed is the store's error ([`metrics::checkout_error`]).
pub(crate) async fn checkout<M: Manager<Error = StoreError>>(
    pool: &Pool<M>,
    wait: Duration,
    backend: &'static str,
) -> Result<Object<M>, StoreError> {
    let started = Instant::now();
    let pooled = pool
        .get()
        .instrument(tracing::info_span!(
            target: petstore_domain::TRACES,
            "wait for a connection",
            db.system.name = backend,
        ))
        .await
        .map_err(|error| metrics::checkout_error(error, wait, backend))?;
    ::metrics::histogram!(metrics::POOL_CHECKOUT, "backend" => backend)
        .record(started.elapsed().as_secs_f64());
    Ok(pooled)
}

/// The longest the cancel request of a call given up on midway may take before its connection
/// is closed anyway.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);

/// A pooled connection while a call runs on it ([`InCall::new`], then [`InCall::end`] with the
/// call's result). Unless the call ended cleanly, the connection leaves the pool when this is
/// dropped, and closes: a call that failed as unavailable, or outlived its deadline, or was
/// given up on midway (its future dropped at its deadline: a statement may be in flight, a
/// transaction open, with rows locked, which the server ends only with the session). Left in
/// the pool, it would stay open until the pool next checked it, on a later call of the same
/// thread. A call given up on midway also has the statement it may be running cancelled first,
/// by `cancel`'s request (sent from another connection, on a task of its own): the server would
/// otherwise notice the closed session only once that statement ends (one waiting for a lock,
/// holding others, waits as long as the lock's holder, up to the statement timeout). The
/// connection is closed once the request has been delivered, or has taken [`CANCEL_TIMEOUT`].
pub(crate) struct InCall<M, F>
where
    M: Manager<Type: 'static>,
    F: FnOnce(&M::Type) -> BoxFuture<'static, Result<(), BoxError>>,
{
    pooled: Option<Object<M>>,
    /// `None` while the call runs; then whether its connection may be used again.
    reusable: Option<bool>,
    cancel: Option<F>,
}

impl<M, F> InCall<M, F>
where
    M: Manager<Type: 'static>,
    F: FnOnce(&M::Type) -> BoxFuture<'static, Result<(), BoxError>>,
{
    /// A call starting on `pooled`; `cancel` makes the request that cancels the statement a
    /// connection runs.
    pub(crate) fn new(pooled: Object<M>, cancel: F) -> Self {
        Self {
            pooled: Some(pooled),
            reusable: None,
            cancel: Some(cancel),
        }
    }

    /// The connection the call runs on.
    pub(crate) fn connection(&mut self) -> &mut M::Type {
        self.pooled
            .as_mut()
            .expect("BUG: the connection is taken out only by `drop`")
    }

    /// The call, started at `started`, ended with `result`: its connection goes back to the pool
    /// unless the call failed as unavailable or took longer than `deadline`.
    pub(crate) fn end<T>(
        mut self,
        result: &Result<T, StoreError>,
        started: Instant,
        deadline: Duration,
    ) {
        let unavailable = result
            .as_ref()
            .is_err_and(|error| error.kind() == StorageErrorKind::Unavailable);
        self.reusable = Some(!unavailable && started.elapsed() <= deadline);
    }
}

impl<M, F> Drop for InCall<M, F>
where
    M: Manager<Type: 'static>,
    F: FnOnce(&M::Type) -> BoxFuture<'static, Result<(), BoxError>>,
{
    fn drop(&mut self) {
        let Some(pooled) = self.pooled.take() else {
            return;
        };
        if self.reusable == Some(true) {
            return;
        }
        let connection = Object::take(pooled);
        if self.reusable.is_none()
            && let Some(cancel) = self.cancel.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let request = cancel(&connection);
            runtime.spawn(async move {
                match tokio::time::timeout(CANCEL_TIMEOUT, request).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        log::debug!("could not cancel an abandoned statement: {error}")
                    }
                    Err(_) => log::debug!("an abandoned statement's cancel request timed out"),
                }
                drop(connection);
            });
            return;
        }
        drop(connection);
    }
}
