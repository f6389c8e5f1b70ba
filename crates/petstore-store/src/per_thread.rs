//! What the two async backends (PostgreSQL, MariaDB/MySQL) keep per runtime thread, written
//! once: a connection's socket belongs to the runtime that opened it, so each thread that calls
//! gets a pool of its own, set up on its first call ([`PerThread`]), built alike
//! ([`pool`]) and checked out alike, timed ([`checkout`]).

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use deadpool::Runtime;
use deadpool::managed::{Manager, Object, Pool};

use crate::{StoreError, metrics};

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
        .await
        .map_err(|error| metrics::checkout_error(error, wait, backend))?;
    ::metrics::histogram!(metrics::POOL_CHECKOUT, "backend" => backend)
        .record(started.elapsed().as_secs_f64());
    Ok(pooled)
}
