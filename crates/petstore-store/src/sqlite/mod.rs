//! The SQLite backend: sync Diesel over an r2d2 pool, and how its calls run.
//!
//! - A read runs on the caller's thread when a pooled connection is idle: a local, page-cached
//!   read of a few microseconds, where handing it to another thread and back would cost more
//!   than the read.
//! - Every other call (a read that finds no idle connection, a write) runs on the runtime's
//!   blocking threads, which wait for a connection and for SQLite's write lock.
//! - Pets are created by a group-commit writer thread ([`writer`]): one transaction, one fsync,
//!   for every create waiting.
//!
//! Each call runs an operation of `queries/` to its end in one go ([`complete_now`]): SQLite
//! statements never wait on anything but the database.

mod space;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::r2d2::{self, Pool, R2D2Connection};
use diesel::{Connection, SqliteConnection};
use petstore_domain::{Capacity, CreatePet, Pet, StorageErrorKind};

pub use space::LOW_SPACE;

use crate::conn::{Conn, Op, complete_now};
use crate::queries::Now;
use crate::{StoreConfig, StoreError, metrics, migrations};
use space::DiskSpace;
use writer::PetWriter;

/// The SQLite database behind a store.
pub(crate) struct Sqlite {
    calls: Calls,
    writer: PetWriter,
    /// Set by [`Sqlite::close`]: calls fail from then on.
    closed: AtomicBool,
}

/// What running a call needs: the pool and how to read its failures. Cloned into each call
/// that runs on a blocking thread.
#[derive(Clone)]
struct Calls {
    pool: Pool<Manager>,
    space: Arc<DiskSpace>,
    busy_timeout: Duration,
    deadline: Duration,
}

impl Sqlite {
    /// The pool (connections open lazily, but for one kept warm) and the writer thread.
    pub(crate) fn open(path: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        // Said at once, by name: the pool would try for its whole connect timeout, and its
        // errors name no path.
        let file = std::path::Path::new(path);
        if let Some(folder) = file.parent().filter(|f| !f.as_os_str().is_empty())
            && !folder.is_dir()
        {
            return Err(StoreError::Config(format!(
                "the SQLite file {path}'s folder {} does not exist: create it (`mkdir -p {}`) \
                 or give another path",
                folder.display(),
                folder.display()
            )));
        }
        create_private(path);
        let manager = Manager {
            path: path.to_owned(),
            busy_timeout: config.statement_timeout,
        };
        let space = Arc::new(DiskSpace::of(path));
        let writer = PetWriter::start(manager.clone(), space.clone())?;
        // No test query on every checkout (it doubled the cost of a read): a broken connection
        // fails its query, is answered 503, and is dropped by `has_broken`.
        let builder = Pool::builder()
            .max_size(config.pool_size)
            .test_on_check_out(false)
            .connection_timeout(config.connect_timeout)
            .event_handler(Box::new(metrics::PoolMetrics { backend: "sqlite" }));
        let builder = if config.keep_warm {
            builder.min_idle(Some(1))
        } else {
            builder
                .min_idle(Some(0))
                .idle_timeout(None)
                .max_lifetime(None)
        };
        Ok(Self {
            calls: Calls {
                pool: builder.build_unchecked(manager),
                space,
                busy_timeout: config.statement_timeout,
                deadline: config.deadline(),
            },
            writer,
            closed: AtomicBool::new(false),
        })
    }

    /// Runs a read: on this thread if a connection is idle, else on a blocking thread.
    pub(crate) async fn read<T: Send + 'static>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        self.check_open()?;
        match self.calls.pool.try_get() {
            Some(mut pooled) => self.calls.run(&mut pooled, op),
            None => self.blocking(op).await,
        }
    }

    /// Runs a call that may wait (a write, which may wait for the write lock), on a blocking
    /// thread once a connection is free.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        op: impl Op<T>,
    ) -> Result<T, StoreError> {
        self.check_open()?;
        let calls = self.calls.clone();
        // However the caller stops waiting (an answer, its deadline, the client gone), a call
        // that has not started by then never starts.
        let given_up = GiveUp(Arc::new(AtomicBool::new(false)));
        let abandoned = given_up.0.clone();
        // The caller's span goes along, so that what the store logs carries the request's id.
        let span = tracing::Span::current();
        let call = tokio::task::spawn_blocking(move || {
            if abandoned.load(Ordering::Acquire) {
                return Err(StoreError::GivenUp);
            }
            span.in_scope(|| {
                let mut pooled = calls.pool.get()?;
                calls.run(&mut pooled, op)
            })
        });
        let result = call.await.map_err(StoreError::Blocking)?;
        drop(given_up);
        result
    }

    /// Creates a pet (made `now`) through the group-commit writer: answered once the
    /// transaction holding it has committed.
    pub(crate) async fn create_pet(&self, pet: CreatePet, now: Now) -> Result<Pet, StoreError> {
        self.writer.create(pet, now).await
    }

    /// Applies pending migrations, on a blocking thread.
    pub(crate) async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.calls.pool.clone();
        migrations::on_a_blocking_thread(move || {
            migrations::run_sqlite(&mut pool.get()?.connection)
        })
        .await
    }

    /// Not ready while writes fail for lack of disk space.
    pub(crate) fn check_space(&self) -> Result<(), StoreError> {
        self.calls.space.check()
    }

    /// The pool's connections, and the creates the writer takes at once (a queued create holds
    /// no connection: bounding creates by the pool's size cut the writer's batches, and the
    /// creates per second, by half); the pool's connections on blocking threads.
    pub(crate) fn capacity(&self) -> Capacity {
        let connections = self.calls.pool.max_size();
        Capacity {
            max_calls: connections.saturating_add(writer::MAX_BATCH as u32),
            wait: self.calls.pool.connection_timeout(),
            deadline: self.calls.deadline,
            blocking_calls: connections,
        }
    }

    /// Sets the pool gauges from the pool's state.
    pub(crate) fn record_pool_state(&self) {
        let state = self.calls.pool.state();
        metrics::pool_state(
            "sqlite",
            state.connections,
            state.idle_connections,
            self.calls.pool.max_size(),
        );
    }

    /// Stops the writer thread, once it has committed what it was given, and waits for it;
    /// later calls fail.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.writer.stop();
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        Ok(())
    }
}

impl Calls {
    /// Runs `op` on `pooled`, to its end. A call that failed as unavailable (the lock wait ran
    /// out), or outlived its deadline (its caller has already answered 503), leaves a connection
    /// not to be trusted again: the pool drops it rather than handing it out.
    fn run<T>(&self, pooled: &mut Pooled, op: impl Op<T>) -> Result<T, StoreError> {
        let started = Instant::now();
        let result = complete_now(op(Conn::Sqlite(&mut pooled.connection))).map_err(|error| {
            self.space
                .classify(error.after(started.elapsed(), self.busy_timeout))
        });
        let failed = result
            .as_ref()
            .is_err_and(|error| error.kind() == StorageErrorKind::Unavailable);
        if failed || started.elapsed() > self.deadline {
            pooled.broken = true;
        }
        result
    }
}

/// Raises its flag when dropped.
struct GiveUp(Arc<AtomicBool>);

impl Drop for GiveUp {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A pooled connection, with the store's verdict on whether it still works.
struct Pooled {
    connection: SqliteConnection,
    broken: bool,
}

/// Opens connections for the pool (and the writer) and applies the per-connection settings.
#[derive(Debug, Clone)]
struct Manager {
    path: String,
    busy_timeout: Duration,
}

impl Manager {
    fn open(&self) -> Result<SqliteConnection, r2d2::Error> {
        let mut conn =
            SqliteConnection::establish(&self.path).map_err(r2d2::Error::ConnectionError)?;
        // WAL lets readers run beside the writer; synchronous=FULL makes a commit durable before
        // it returns (a 201 is never lost on power failure); busy_timeout makes concurrent
        // writers wait for the lock instead of failing.
        conn.batch_execute(&format!(
            "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; \
             PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
            self.busy_timeout.as_millis()
        ))
        .map_err(r2d2::Error::QueryError)?;
        Ok(conn)
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Pooled;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<Pooled, r2d2::Error> {
        self.open().map(|connection| Pooled {
            connection,
            broken: false,
        })
    }

    fn is_valid(&self, conn: &mut Pooled) -> Result<(), r2d2::Error> {
        conn.connection.ping().map_err(r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut Pooled) -> bool {
        conn.broken || std::thread::panicking() || conn.connection.is_broken()
    }
}

/// Creates the database file readable and writable by its owner only (`0600`), when it does
/// not exist: it holds key hashes, orders and labels. SQLite gives its `-wal` and `-shm` files
/// the database file's mode. An existing file keeps its mode; a file that cannot be created
/// here is left to SQLite, which reports why.
fn create_private(path: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
}
