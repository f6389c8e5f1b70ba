//! The MariaDB and MySQL backend: diesel-async over mysql_async (no libmysqlclient), a pool per
//! runtime thread as on PostgreSQL (a connection's socket belongs to the runtime that opened it).
//!
//! Every call runs on a pooled connection: mysql_async answers one statement at a time, so
//! there is nothing to pipeline. Each connection is opened in strict SQL mode, in UTC, with
//! utf8mb4 and the rows matched (not only changed) counted, as the other backends count them,
//! and with the store's statement timeout on lock waits and statements. A call that fails as
//! unavailable, outlives its deadline or is given up on midway closes its connection; one given
//! up on midway has its statement killed first (`KILL QUERY`), so that it does not hold its
//! locks until it ends.

mod settings;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use diesel_async::AsyncMysqlConnection;
use diesel_async::pooled_connection::PoolableConnection;
use futures_util::FutureExt;
use petstore_domain::Capacity;

use crate::conn::{Conn, Op};
use crate::error::BoxError;
use crate::per_thread::{self, InCall, Limits, PerThread};
use crate::{StoreConfig, StoreError, metrics, migrations};
use settings::MysqlSettings;

/// The MariaDB or MySQL database behind a store.
pub(crate) struct Mysql {
    settings: Arc<MysqlSettings>,
    /// This store's pools, by the thread that uses them.
    workers: PerThread<Pool>,
    /// Its pools' sizes and its calls' timeouts.
    limits: Limits,
}

type Pool = managed::Pool<Manager>;

impl Mysql {
    /// Reads the URL (`mysql://` or `mariadb://`). Opens no connection: a database that is down
    /// now does not stop the process.
    pub(crate) fn open(url: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        // Whole seconds, rounded up (a lock wait that ends before the statement timeout would
        // not read as its timeout); no limit: the largest MariaDB takes.
        let seconds = if config.statement_timeout.is_zero() {
            1_073_741_824
        } else {
            (config.statement_timeout.as_secs_f64().ceil() as u64).max(1)
        };
        // Strict: a value that does not fit is refused, never cut or zeroed. Lock waits and
        // statements end at the statement timeout (`max_statement_time`: MariaDB's; MySQL's
        // `max_execution_time` covers reads only, and is set where the first is unknown).
        let session = format!(
            "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,\
             ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'; \
             SET SESSION innodb_lock_wait_timeout = {seconds}; \
             SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
        );
        Ok(Self {
            settings: Arc::new(MysqlSettings::from_url(url, session)?),
            workers: PerThread::new(),
            limits: Limits::new(config, 0),
        })
    }

    /// This thread's pool, set up on first use.
    fn pool(&self) -> Result<Pool, StoreError> {
        self.workers.get(|| {
            let manager = Manager {
                settings: self.settings.clone(),
                statement_timeout: self.limits.statement_timeout,
            };
            per_thread::pool(manager, self.limits.per_thread, self.limits.wait)
        })
    }

    /// Runs a read: on a pooled connection, as every call.
    pub(crate) async fn read<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        self.call(op).await
    }

    /// Runs `op` on a connection of this thread's pool. A call that failed as unavailable,
    /// outlived its deadline, or was given up on midway closes its connection ([`InCall`]).
    pub(crate) async fn call<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        let pooled = per_thread::checkout(&self.pool()?, self.limits.wait, "mysql").await?;
        // `KILL QUERY`, from a connection of its own.
        let mut in_call = InCall::new(pooled, |conn: &AsyncMysqlConnection| {
            let cancel = conn.cancel_token();
            async move { cancel.cancel_query().await.map_err(BoxError::from) }.boxed()
        });
        let conn = in_call.connection();
        let started = Instant::now();
        let result = match op(Conn::Mysql(&mut *conn)).await {
            Err(error) => Err(classify(error, conn, self.limits.statement_timeout)
                .await
                .after(started.elapsed(), self.limits.statement_timeout)),
            done => done,
        };
        in_call.end(&result, started, self.limits.deadline);
        result
    }

    /// Applies pending migrations on a connection of their own, under a named lock
    /// (`GET_LOCK`) so that instances starting together apply each one exactly once; diesel's
    /// synchronous harness runs on a blocking thread.
    pub(crate) async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.settings.connect(Duration::ZERO).await?;
        migrations::on_a_blocking_thread(move || migrations::run_mysql(conn)).await
    }

    /// The pools' connections; calls run on the caller's runtime, none on its blocking threads
    /// (but migrations, once).
    pub(crate) fn capacity(&self) -> Capacity {
        self.limits.capacity()
    }

    /// Sets the pool gauges: every thread's pool, summed.
    pub(crate) fn record_pool_state(&self) {
        let (mut open, mut idle, mut max) = (0, 0, 0);
        self.workers.each(|pool| {
            let status = pool.status();
            open += status.size;
            idle += status.available;
            max += status.max_size;
        });
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        metrics::pool_state("mysql", count(open), count(idle), count(max));
    }

    /// Closes every pool: idle connections now, the others as their calls return them.
    pub(crate) fn close(&self) {
        for pool in self.workers.close() {
            pool.close();
        }
    }
}

/// How long a pooled connection may sit unused before it is asked whether it still works.
const IDLE_CHECK: Duration = Duration::from_secs(30);

/// Whether the connection answers (a statement that does nothing, within a second).
async fn alive(conn: &mut AsyncMysqlConnection) -> bool {
    use diesel_async::SimpleAsyncConnection;
    tokio::time::timeout(Duration::from_secs(1), conn.batch_execute("DO 1"))
        .await
        .is_ok_and(|done| done.is_ok())
}

/// What a failed call's error means. diesel-async reports every MariaDB and MySQL error (the
/// server's and the driver's) as a database error of no kind, its text only: the server's carry
/// their code in it (`ERROR 40001 (1213): Deadlock found ...`), in any language. A deadlock is
/// a conflict (retried, it may succeed); a lock wait that ran out is a timeout; any other error
/// after which the connection no longer answers is the connection lost.
async fn classify(
    error: StoreError,
    conn: &mut AsyncMysqlConnection,
    timeout: Duration,
) -> StoreError {
    let StoreError::Database(source) = error else {
        return error;
    };
    let text = source.to_string();
    if text.contains("(1213)") {
        return StoreError::Conflict(source);
    }
    if text.contains("(1205)") {
        return StoreError::TimedOut(timeout, source);
    }
    if !alive(conn).await {
        return StoreError::ConnectionLost(source);
    }
    StoreError::Database(source)
}

/// Opens connections for a pool, on the runtime of the thread that asks.
struct Manager {
    settings: Arc<MysqlSettings>,
    statement_timeout: Duration,
}

impl managed::Manager for Manager {
    type Type = AsyncMysqlConnection;
    type Error = StoreError;

    async fn create(&self) -> Result<AsyncMysqlConnection, StoreError> {
        Box::pin(self.settings.connect(self.statement_timeout)).await
    }

    async fn recycle(
        &self,
        conn: &mut AsyncMysqlConnection,
        metrics: &Metrics,
    ) -> RecycleResult<StoreError> {
        // (A connection whose last call did not end cleanly never comes back: `InCall`.)
        if conn.is_broken() {
            return Err(RecycleError::message("its last call did not end cleanly"));
        }
        // Idle a while, it may have been closed by the server (`wait_timeout`, a restart, a
        // failover): asked before it is handed out, so that no call meets it closed.
        if metrics.last_used() > IDLE_CHECK && !alive(conn).await {
            return Err(RecycleError::message("its server closed it"));
        }
        Ok(())
    }
}
