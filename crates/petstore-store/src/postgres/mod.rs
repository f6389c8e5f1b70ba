//! The PostgreSQL backend: diesel-async over tokio-postgres (no libpq), TLS with rustls, and a
//! pool per runtime thread.
//!
//! A tokio-postgres connection's I/O is driven by a task on the runtime that opened it, and each
//! actix worker runs a runtime of its own. A pool shared by every worker would send each round
//! trip through another worker's thread (a cross-thread wake-up both ways), and its connections
//! would die with the worker that happened to open them. So each thread that calls the store
//! gets a pool of its own, opened on first use, of `pool_size / workers` connections (at least
//! one): every connection it holds was opened, and is driven, by the thread that uses it. The
//! server's workers, plus its main thread (background work: the key bootstrap, pruning), make
//! `pool_size` and a little more connections per instance (`docs/deploy.md`).

mod settings;
mod tls;

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use deadpool::Runtime;
use deadpool::managed::{self, Metrics, PoolError, RecycleError, RecycleResult, TimeoutType};
use diesel_async::AsyncPgConnection;
use petstore_domain::StorageErrorKind;

use crate::conn::{Conn, Op};
use crate::{StoreConfig, StoreError, metrics, migrations};
use settings::PgSettings;

/// The PostgreSQL database behind a store.
pub(crate) struct Postgres {
    settings: std::sync::Arc<PgSettings>,
    /// This store's pools, by the thread that uses each; `None` once closed.
    pools: RwLock<Option<HashMap<ThreadId, Pool>>>,
    per_thread: usize,
    /// Most connections over every thread's pool, as configured.
    pool_size: u32,
    wait: Duration,
    statement_timeout: Duration,
    deadline: Duration,
}

type Pool = managed::Pool<Manager>;

impl Postgres {
    /// Reads the URL's settings (TLS included: a bad CA file fails here, at start-up). Opens no
    /// connection: a database that is down now does not stop the process.
    pub(crate) fn open(url: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        let per_thread = (config.pool_size / config.workers.max(1)).max(1) as usize;
        Ok(Self {
            settings: std::sync::Arc::new(PgSettings::from_url(url, config)?),
            pools: RwLock::new(Some(HashMap::new())),
            per_thread,
            pool_size: config.pool_size,
            wait: config.connect_timeout,
            statement_timeout: config.statement_timeout,
            deadline: config.deadline(),
        })
    }

    /// This thread's pool, opened on first use.
    fn pool(&self) -> Result<Pool, StoreError> {
        let me = thread::current().id();
        if let Some(pools) = &*self.pools.read().unwrap_or_else(PoisonError::into_inner)
            && let Some(pool) = pools.get(&me)
        {
            return Ok(pool.clone());
        }
        let mut pools = self.pools.write().unwrap_or_else(PoisonError::into_inner);
        let pools = pools.as_mut().ok_or(StoreError::Closed)?;
        if let Some(pool) = pools.get(&me) {
            return Ok(pool.clone());
        }
        let pool = Pool::builder(Manager {
            settings: self.settings.clone(),
        })
        .max_size(self.per_thread)
        .wait_timeout(Some(self.wait))
        .create_timeout(Some(self.wait))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|error| StoreError::Config(format!("connection pool: {error}")))?;
        pools.insert(me, pool.clone());
        Ok(pool)
    }

    /// Runs `op` on a connection of this thread's pool. A call that failed as unavailable, or
    /// outlived its deadline, or was given up on midway (its future dropped: a statement may be
    /// in flight, a transaction open), leaves its connection out of the pool.
    pub(crate) async fn call<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        let pool = self.pool()?;
        let checkout = Instant::now();
        let mut pooled = pool
            .get()
            .await
            .map_err(|error| self.checkout_error(error))?;
        ::metrics::histogram!(metrics::POOL_CHECKOUT, "backend" => "postgres")
            .record(checkout.elapsed().as_secs_f64());
        // Until the call has ended: dropped midway, the connection is not trusted again.
        pooled.broken = true;
        let started = Instant::now();
        let result = op(Conn::Postgres(&mut pooled.connection))
            .await
            .map_err(|error| error.after(started.elapsed(), self.statement_timeout));
        pooled.broken = result
            .as_ref()
            .is_err_and(|error| error.kind() == StorageErrorKind::Unavailable)
            || started.elapsed() > self.deadline;
        result
    }

    fn checkout_error(&self, error: PoolError<StoreError>) -> StoreError {
        match error {
            PoolError::Backend(error) => error,
            PoolError::Timeout(kind) => {
                ::metrics::counter!(metrics::POOL_TIMEOUTS, "backend" => "postgres").increment(1);
                let what = match kind {
                    TimeoutType::Wait => "no connection came free",
                    TimeoutType::Create => "no connection could be opened",
                    TimeoutType::Recycle => "no connection could be checked",
                };
                StoreError::Connect(format!("{what} within {:?}", self.wait).into())
            }
            PoolError::Closed => StoreError::Closed,
            other => StoreError::Connect(other.to_string().into()),
        }
    }

    /// Applies pending migrations on a connection of their own (closed afterwards), opened and
    /// driven by this thread's runtime while diesel's synchronous harness runs on a blocking
    /// thread.
    pub(crate) async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.settings.connect().await?;
        tokio::task::spawn_blocking(move || migrations::run_postgres(conn))
            .await
            .map_err(StoreError::Blocking)?
    }

    /// Most connections over every thread's pool, and how long a call waits for one.
    pub(crate) fn pool_limits(&self) -> (u32, Duration) {
        (self.pool_size, self.wait)
    }

    /// Sets the pool gauges: every thread's pool, summed.
    pub(crate) fn record_pool_state(&self) {
        let (mut open, mut idle, mut max) = (0, 0, 0);
        if let Some(pools) = &*self.pools.read().unwrap_or_else(PoisonError::into_inner) {
            for pool in pools.values() {
                let status = pool.status();
                open += status.size;
                idle += status.available;
                max += status.max_size;
            }
        }
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        metrics::pool_state("postgres", count(open), count(idle), count(max));
    }

    /// Closes every pool: idle connections now, the others as their calls return them; later
    /// calls fail as unavailable.
    pub(crate) fn close(&self) {
        let pools = self
            .pools
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for pool in pools.into_iter().flat_map(HashMap::into_values) {
            pool.close();
        }
    }
}

/// A pooled connection, with the store's verdict on whether it may be used again.
struct PgConn {
    connection: AsyncPgConnection,
    broken: bool,
}

/// Opens connections for a pool, on the runtime of the thread that asks.
struct Manager {
    settings: std::sync::Arc<PgSettings>,
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = StoreError;

    async fn create(&self) -> Result<PgConn, StoreError> {
        // Boxed: a connection's set-up (TCP, TLS, start-up) is a large future, and every checkout
        // would carry it in place.
        let connection = Box::pin(self.settings.connect()).await?;
        Ok(PgConn {
            connection,
            broken: false,
        })
    }

    async fn recycle(&self, conn: &mut PgConn, _: &Metrics) -> RecycleResult<StoreError> {
        if conn.broken {
            return Err(RecycleError::message("its last call did not end cleanly"));
        }
        Ok(())
    }
}
