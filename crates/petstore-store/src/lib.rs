//! Persistence for the Animal Store Service: the `petstore-domain` storage interface
//! ([`petstore_domain::Storage`] and its repository traits) implemented with Diesel over an r2d2
//! pool, for SQLite (embedded, the default) and PostgreSQL (many instances on one database).
//! Every query is written once against [`AnyConnection`].
//!
//! This crate is synchronous and knows nothing of HTTP. What makes SQLite fast stays in here,
//! behind the interface: reads answered on the caller's thread when a connection is idle
//! ([`Storage::nonblocking`](petstore_domain::Storage::nonblocking)) and pets created by a
//! group-commit writer thread ([`Storage::queue_create_pet`](petstore_domain::Storage)).
//! Start with [`Store::open`]; the trait implementations live in one module per aggregate
//! (`pets`, `orders`, `keys`). Row types stay private; only domain types come out.
#![warn(missing_docs)]

/// Runs a read on the concrete connection inside an [`AnyConnection`]: the same query, without
/// `MultiConnection`'s per-call cost (it re-serialises the SQL and boxes every field of every
/// row: profiled at a third of a list request). For the hot reads; writes stay generic.
macro_rules! native {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::AnyConnection::Sqlite($c) => $body,
            $crate::AnyConnection::Postgresql($c) => $body,
        }
    };
}

mod connection;
mod error;
mod idempotency;
mod keys;
pub mod metrics;
mod migrations;
mod orders;
mod pets;
mod schema;
mod space;
#[cfg(feature = "testing")]
pub mod testing;
mod writer;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use diesel::r2d2::Pool;
use petstore_domain::{
    Capacity, CreatePet, PetReply, Storage, StorageError, StorageErrorKind, Unqueued,
};

use connection::ConnectionManager;
pub use connection::{AnyConnection, Backend};
pub use error::StoreError;
pub use space::LOW_SPACE;

/// What a call's deadline ([`Capacity::deadline`]) allows beyond the statement timeout: the
/// round trips around the statement.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(1);

/// How to reach the database and how hard to try.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `postgres://...`, `sqlite://PATH` or a plain SQLite file path.
    pub url: String,
    /// Most connections open at once.
    pub pool_size: u32,
    /// Longest wait for a free connection (and for a new one) before answering "unavailable".
    pub connect_timeout: Duration,
    /// Longest a single statement may run (PostgreSQL), and how long SQLite waits for a lock.
    pub statement_timeout: Duration,
    /// Keep a connection open and recycle idle ones in background threads (a server). A one-shot
    /// command sets this to `false`: it must leave no background thread inside libpq when it
    /// exits (one connecting at exit crashed the process).
    pub keep_warm: bool,
}

impl StoreConfig {
    /// Defaults suited to one instance: 8 connections, 5 s to connect, 5 s per statement.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 8,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            keep_warm: true,
        }
    }
}

/// The database behind the service: a connection pool and the backend it talks to.
/// Cloning is cheap and shares the pool.
#[derive(Clone)]
pub struct Store {
    pool: Pool<ConnectionManager>,
    /// SQLite only: the group-commit writer that creates pets.
    pet_writer: Option<Arc<writer::PetWriter>>,
    backend_name: &'static str,
    statement_timeout: Duration,
    /// SQLite only: the database's filesystem, to tell a full disk.
    space: Option<Arc<space::DiskSpace>>,
    /// How this value's calls get their connection.
    checkout: Checkout,
    /// SQLite only: the same pool with [`Checkout::IdleOnly`], handed out by
    /// [`Storage::nonblocking`].
    nonblocking: Option<Arc<Store>>,
}

/// How [`Store::with_conn`] gets its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checkout {
    /// Wait for a connection, up to the connect timeout.
    Wait,
    /// Take an idle connection or fail at once with [`StoreError::NoIdleConnection`].
    IdleOnly,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend_name)
            .field("pool", &self.pool.state())
            .finish()
    }
}

impl Store {
    /// Builds the pool. Connections are opened lazily, so a database that is down now does
    /// not stop the process: operations fail as unavailable ([`StoreError::Connect`]) until it
    /// is back.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        if config.pool_size == 0 {
            return Err(StoreError::Config(
                "the pool size must be at least 1".into(),
            ));
        }
        let backend = Backend::from_url(&config.url)?.with_timeouts(config);
        let backend_name = backend.name();
        let embedded = matches!(backend, Backend::Sqlite(_));
        let manager = ConnectionManager {
            backend,
            busy_timeout: config.statement_timeout,
            statement_timeout: config.statement_timeout,
        };
        let space = match &manager.backend {
            Backend::Sqlite(path) => Some(Arc::new(space::DiskSpace::of(path))),
            Backend::Postgres(_) => None,
        };
        let pet_writer = match &space {
            Some(space) => Some(Arc::new(writer::PetWriter::start(
                manager.clone(),
                space.clone(),
            )?)),
            None => None,
        };
        // No test query on every checkout (it doubled the cost of a read): a broken connection
        // fails its query, is answered 503, and is dropped by `has_broken`.
        let mut builder = Pool::builder()
            .max_size(config.pool_size)
            .test_on_check_out(false)
            .connection_timeout(config.connect_timeout)
            .event_handler(Box::new(metrics::PoolMetrics {
                backend: backend_name,
            }));
        builder = if config.keep_warm {
            builder.min_idle(Some(1))
        } else {
            builder
                .min_idle(Some(0))
                .idle_timeout(None)
                .max_lifetime(None)
        };
        let pool = builder.build_unchecked(manager);
        let store = Self {
            pool,
            pet_writer,
            backend_name,
            statement_timeout: config.statement_timeout,
            space,
            checkout: Checkout::Wait,
            nonblocking: None,
        };
        // SQLite reads are local and short (no network round trip): with an idle connection a
        // caller may run them on its own thread rather than hand each one to a blocking thread
        // and back (two context switches, measured at a third of a read's cost).
        let nonblocking = embedded.then(|| {
            Arc::new(Self {
                checkout: Checkout::IdleOnly,
                ..store.clone()
            })
        });
        Ok(Self {
            nonblocking,
            ..store
        })
    }

    /// Sets the connection-pool gauges ([`metrics::POOL_CONNECTIONS`]) from the pool's state:
    /// called when metrics are rendered.
    pub fn record_pool_state(&self) {
        metrics::pool_state(self.backend_name, self.pool.state(), self.pool.max_size());
    }

    /// `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        self.backend_name
    }

    /// Applies pending migrations and returns their names. On PostgreSQL this holds an
    /// advisory lock, so instances starting together apply each migration exactly once.
    pub fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let timeout = self.statement_timeout;
        self.with_conn(|conn| migrations::run_pending(conn, timeout))
    }

    /// Runs `f` on a pooled connection. A connection whose call failed as unavailable (lost,
    /// timed out, busy) is marked broken, so the pool drops it instead of handing it out again:
    /// this is how the service recovers from a database restart without testing every checkout.
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut AnyConnection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut pooled = match self.checkout {
            Checkout::Wait => self.pool.get()?,
            Checkout::IdleOnly => self.pool.try_get().ok_or(StoreError::NoIdleConnection)?,
        };
        let started = Instant::now();
        let result = f(&mut pooled.connection).map_err(|error| {
            let error = error.after(started.elapsed(), self.statement_timeout);
            match &self.space {
                Some(space) => space.classify(error),
                None => error,
            }
        });
        // A call that failed as unavailable, or outlived its deadline (its caller has already
        // answered 503: the database went silent), leaves a connection not to be trusted again.
        let failed = result
            .as_ref()
            .is_err_and(|error| error.kind() == StorageErrorKind::Unavailable);
        if failed || started.elapsed() > self.deadline() {
            pooled.broken = true;
        }
        result
    }

    /// How long a call may take before its caller gives up on it: the statement (and lock)
    /// timeout, plus [`DEADLINE_MARGIN`] for the round trip.
    fn deadline(&self) -> Duration {
        self.statement_timeout + DEADLINE_MARGIN
    }

    /// [`Self::with_conn`] for the storage traits, whose error is the domain's.
    fn call<T>(
        &self,
        f: impl FnOnce(&mut AnyConnection) -> Result<T, StoreError>,
    ) -> Result<T, StorageError> {
        Ok(self.with_conn(f)?)
    }
}

impl Storage for Store {
    fn check_ready(&self) -> Result<(), StorageError> {
        self.call(migrations::check_applied)?;
        if let Some(space) = &self.space {
            space.check()?;
        }
        Ok(())
    }

    fn capacity(&self) -> Capacity {
        Capacity {
            max_calls: self.pool.max_size(),
            wait: self.pool.connection_timeout(),
            deadline: self.deadline(),
        }
    }

    fn nonblocking(&self) -> Option<&dyn Storage> {
        self.nonblocking
            .as_deref()
            .map(|store| store as &dyn Storage)
    }

    /// SQLite: the pet is queued for the group-commit writer, and `done` is called on the
    /// writer's thread once the transaction holding it has committed.
    fn queue_create_pet(&self, pet: CreatePet, done: PetReply) -> Result<(), Unqueued> {
        match &self.pet_writer {
            Some(writer) => {
                writer.submit(
                    pet,
                    Box::new(move |result| done(result.map_err(Into::into))),
                );
                Ok(())
            }
            None => Err((pet, done)),
        }
    }
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Rows fetched for a page: one more than asked, to learn whether another page follows.
fn overfetch(limit: petstore_domain::Limit) -> i64 {
    i64::from(limit.get()) + 1
}
