//! One database's connections, per runtime thread: for each thread that calls, a pool of
//! exclusive connections (writes, transactions) and one connection its reads share and pipeline
//! on (`read`, `call`), opened and driven by that thread's runtime. The primary's and each read
//! standby's (`super::replicas`) are one of these each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::PoolableConnection;
use futures_util::FutureExt;
use petstore_domain::{Capacity, StorageErrorKind};

use super::settings::PgSettings;
use crate::conn::{Conn, Op};
use crate::error::BoxError;
use crate::per_thread::{self, InCall, Limits, PerThread};
use crate::{StoreConfig, StoreError, metrics};

/// One database's connections, by the thread that uses them.
pub(crate) struct Connections {
    pub(super) settings: Arc<PgSettings>,
    /// This store's connections, by the thread that uses them.
    workers: PerThread<Arc<Worker>>,
    /// Its pools' sizes and its calls' timeouts; most calls at once: the pools' connections,
    /// and [`READS_IN_FLIGHT`] reads per worker on their shared connections.
    limits: Limits,
}

type Pool = managed::Pool<Manager>;

/// Reads each worker may have in flight on its shared connection, pipelined. Bounded so that a
/// slow database cannot collect an unbounded queue; deep enough that the reads of a busy worker
/// do not wait for each other's slots (with 8, the pool's size, the list route served about a
/// third fewer requests per second than with 64: docs/performance.md).
const READS_IN_FLIGHT: u32 = 64;

impl Connections {
    /// Reads the URL's settings (TLS included: a bad CA file fails here, at start-up). Opens no
    /// connection: a database that is down now does not stop the process.
    pub(crate) fn open(url: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        let settings = Arc::new(PgSettings::from_url(url, config)?);
        // Where every call needs a transaction of its own, reads take pooled connections too:
        // no shared ones.
        let reads_in_flight = if settings.pooler.per_call_transaction().is_some() {
            0
        } else {
            READS_IN_FLIGHT
        };
        Ok(Self {
            settings,
            workers: PerThread::new(),
            limits: Limits::new(
                config,
                reads_in_flight.saturating_mul(config.workers.max(1)),
            ),
        })
    }

    /// This thread's connections, set up on first use.
    fn worker(&self) -> Result<Arc<Worker>, StoreError> {
        self.workers.get(|| {
            let manager = Manager {
                settings: self.settings.clone(),
            };
            Ok(Arc::new(Worker {
                pool: per_thread::pool(manager, self.limits.per_thread, self.limits.wait)?,
                shared: Mutex::new(None),
                opening: tokio::sync::Mutex::new(()),
            }))
        })
    }

    /// Runs `op`, which starts no transaction, on this thread's shared connection, where calls
    /// pipeline. A call that failed as unavailable, outlived its deadline or was given up on
    /// midway leaves the connection suspect: the next call opens another.
    pub(crate) async fn read<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        if self.settings.pooler.per_call_transaction().is_some() {
            // Behind a transaction pooler that keeps no statements every statement must run
            // in a transaction of its own connection: nothing pipelines.
            return self.call(op).await;
        }
        let worker = self.worker()?;
        let conn = worker.shared(&self.settings, self.limits.wait).await?;
        let mut suspect = Suspect {
            worker: &worker,
            conn: &conn,
            cleared: false,
        };
        let started = Instant::now();
        let result = op(Conn::Postgres {
            conn: &conn,
            exclusive: false,
            in_transaction: false,
        })
        .await
        .map_err(|error| error.after(started.elapsed(), self.limits.statement_timeout));
        let result = match result {
            Err(error) => Err(lost_or(error, &conn).await),
            done => done,
        };
        suspect.cleared = !result
            .as_ref()
            .is_err_and(|error| error.kind() == StorageErrorKind::Unavailable)
            && started.elapsed() <= self.limits.deadline;
        drop(suspect);
        result
    }

    /// Runs `op` on a connection of this thread's pool. A call that failed as unavailable, or
    /// outlived its deadline, or was given up on midway (its future dropped: a statement may be
    /// in flight, a transaction open), closes its connection ([`InCall`]).
    pub(crate) async fn call<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        let pool = self.worker()?.pool.clone();
        let pooled = per_thread::checkout(&pool, self.limits.wait, "postgres").await?;
        let settings = &self.settings;
        // The cancel request goes where the connection went, with its TLS; a pooler (PgBouncer)
        // forwards it only for a client still connected, and `InCall` closes the connection
        // only once the request is delivered.
        let mut in_call = InCall::new(pooled, |conn: &AsyncPgConnection| {
            let (cancel, tls) = (conn.cancel_token(), settings.tls());
            async move { cancel.cancel_query(tls).await.map_err(BoxError::from) }.boxed()
        });
        let conn = &*in_call.connection();
        let started = Instant::now();
        let result = match self.settings.pooler.per_call_transaction() {
            None => {
                op(Conn::Postgres {
                    conn,
                    exclusive: true,
                    in_transaction: false,
                })
                .await
            }
            Some(begin) => in_own_transaction(conn, begin, op).await,
        }
        .map_err(|error| error.after(started.elapsed(), self.limits.statement_timeout));
        let result = match result {
            Err(error) => Err(lost_or(error, conn).await),
            done => done,
        };
        in_call.end(&result, started, self.limits.deadline);
        result
    }

    /// The pools' connections and the pipelined reads; calls run on the caller's runtime, none
    /// on its blocking threads (but migrations, once).
    pub(crate) fn capacity(&self) -> Capacity {
        self.limits.capacity()
    }

    /// Sets the pool gauges: every thread's pool and shared connection, summed (a shared
    /// connection is open and never idle: reads pipeline on it).
    pub(crate) fn record_pool_state(&self) {
        let (mut open, mut idle, mut max) = (0, 0, 0);
        self.workers.each(|worker| {
            let status = worker.pool.status();
            let shared = worker
                .shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some();
            open += status.size + usize::from(shared);
            idle += status.available;
            max += status.max_size
                + usize::from(self.settings.pooler.per_call_transaction().is_none());
        });
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        metrics::pool_state("postgres", count(open), count(idle), count(max));
    }

    /// Drops every connection not in a call (the shared ones and the pools' idle ones), as
    /// when their server is known to be gone: the next calls open new ones rather than each
    /// failing once on a dead one.
    pub(crate) fn forget_connections(&self) {
        self.workers.each(|worker| {
            worker.pool.retain(|_, _| false);
            worker.forget_shared();
        });
    }

    /// Closes every pool: idle connections now, the others as their calls return them; later
    /// calls fail as unavailable.
    pub(crate) fn close(&self) {
        for worker in self.workers.close() {
            worker.pool.close();
            worker.forget_shared();
        }
    }
}

/// Runs `op` in a transaction of its own, as a transaction pooler needs (`pooler=transaction`):
/// the pooler lends a server connection for a transaction, so a statement prepared outside one
/// may be executed on another server connection, and settings made for the session are lost.
/// `begin` opens it (`Pooler::Transaction`); it is committed if `op` succeeds (the call
/// is answered once the commit is confirmed), else rolled back. A transaction that cannot be
/// ended leaves the connection lost.
async fn in_own_transaction<T>(
    conn: &AsyncPgConnection,
    begin: &str,
    op: impl Op<T>,
) -> Result<T, StoreError> {
    use diesel_async::SimpleAsyncConnection;
    let mut session: &AsyncPgConnection = conn;
    if let Err(error) = session.batch_execute(begin).await {
        // Part of it may have run (`BEGIN`, then a failed `SET`): end it, or give the
        // connection up, rather than pool it inside a failed transaction.
        if session.batch_execute("ROLLBACK").await.is_err() {
            return Err(StoreError::ConnectionLost(error.into()));
        }
        return Err(error.into());
    }
    let result = op(Conn::Postgres {
        conn,
        exclusive: true,
        in_transaction: true,
    })
    .await;
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    match session.batch_execute(end).await {
        Ok(()) => result,
        Err(error) if result.is_ok() => {
            // The commit failed (a conflict, the connection lost): end the transaction, or
            // give the connection up.
            if session.batch_execute("ROLLBACK").await.is_err() {
                return Err(StoreError::ConnectionLost(error.into()));
            }
            Err(error.into())
        }
        Err(error) => Err(StoreError::ConnectionLost(error.into())),
    }
}

/// The longest [`lost_or`] waits for its round trip.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// `error`, or a lost connection where `error` was the server ending the session. A server that
/// ends a session (`57P01 admin_shutdown`: a fast shutdown, `pg_terminate_backend`, a failover
/// manager fencing the old primary; `57P02`, `57P03`) sends its reason as the answer to the
/// statement in flight, and diesel-async reports it as an error of no kind, with no SQLSTATE:
/// read as is, a fault (`500`) where the server only went away (`503`). Only after such an
/// error, one round trip on the same connection tells the two apart: it fails as lost only if
/// the server has closed the session; a statement that was refused on a live session
/// leaves the connection answering.
async fn lost_or(error: StoreError, conn: &AsyncPgConnection) -> StoreError {
    use diesel_async::SimpleAsyncConnection;
    if !matches!(error, StoreError::Database(_)) {
        return error;
    }
    // A simple query: nothing prepared (behind a transaction pooler, a statement prepared
    // outside a transaction could be run on another server connection).
    let mut session: &AsyncPgConnection = conn;
    let probe = session.batch_execute("SELECT 1");
    let probed = tokio::time::timeout(PROBE_TIMEOUT, probe)
        .await
        .map(|answer| answer.map_err(StoreError::from));
    match probed {
        Ok(Err(StoreError::ConnectionLost(_))) => StoreError::ConnectionLost(error.into()),
        _ => error,
    }
}

/// One thread's connections: a pool of exclusive ones (transactions, writes), and one shared by
/// its reads.
struct Worker {
    pool: Pool,
    shared: Mutex<Option<Watched>>,
    /// Held while the shared connection is being opened: the reads that find none wait for the
    /// one being opened rather than each open their own.
    opening: tokio::sync::Mutex<()>,
}

impl Worker {
    /// Drops the shared connection (the next read opens another).
    fn forget_shared(&self) {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The shared connection, unless there is none or its server has closed it (then it is
    /// forgotten now, before a read fails on it).
    fn current(&self) -> Option<Arc<AsyncPgConnection>> {
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if shared
            .as_ref()
            .is_some_and(|watched| watched.gone.load(Ordering::Relaxed))
        {
            *shared = None;
        }
        shared.as_ref().map(|watched| watched.conn.clone())
    }

    /// The shared connection, opened if there is none (on this thread's runtime).
    async fn shared(
        &self,
        settings: &PgSettings,
        wait: Duration,
    ) -> Result<Arc<AsyncPgConnection>, StoreError> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let opening = tokio::time::timeout(wait, async {
            let _opening = self.opening.lock().await;
            if let Some(conn) = self.current() {
                return Ok(conn);
            }
            let (conn, gone) = Box::pin(settings.connect_watched()).await?;
            let conn = Arc::new(conn);
            *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = Some(Watched {
                conn: conn.clone(),
                gone,
            });
            Ok(conn)
        });
        opening.await.map_err(|_| {
            StoreError::Connect(format!("no connection could be opened within {wait:?}").into())
        })?
    }
}

/// A worker's shared connection, and whether its server has closed it (set by the task that
/// drives it, when it ends).
struct Watched {
    conn: Arc<AsyncPgConnection>,
    gone: Arc<AtomicBool>,
}

/// Forgets the shared connection `conn` when dropped uncleared (the call failed, ran late, or
/// was given up on), unless another call has replaced it already.
struct Suspect<'a> {
    worker: &'a Worker,
    conn: &'a Arc<AsyncPgConnection>,
    cleared: bool,
}

impl Drop for Suspect<'_> {
    fn drop(&mut self) {
        if self.cleared {
            return;
        }
        let mut shared = self
            .worker
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if shared
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(&current.conn, self.conn))
        {
            *shared = None;
        }
    }
}

/// Opens connections for a pool, on the runtime of the thread that asks.
struct Manager {
    settings: Arc<PgSettings>,
}

impl managed::Manager for Manager {
    type Type = AsyncPgConnection;
    type Error = StoreError;

    async fn create(&self) -> Result<AsyncPgConnection, StoreError> {
        // Boxed: a connection's set-up (TCP, TLS, start-up) is a large future, and every checkout
        // would carry it in place.
        Box::pin(self.settings.connect()).await
    }

    async fn recycle(
        &self,
        conn: &mut AsyncPgConnection,
        _: &Metrics,
    ) -> RecycleResult<StoreError> {
        // (A connection whose last call did not end cleanly never comes back: `InCall`.)
        // The server closed it while it sat in the pool (it stopped, was failed over, ended the
        // session): dropped now, not handed to a call that would fail on it.
        if conn.is_broken() {
            return Err(RecycleError::message("its server closed it"));
        }
        Ok(())
    }
}
