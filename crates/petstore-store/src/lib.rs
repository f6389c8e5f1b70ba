//! Persistence for the Animal Store Service: the `petstore-domain` storage traits implemented
//! with Diesel over an r2d2 pool, for SQLite (embedded, the default) and PostgreSQL (many
//! instances on one database). Every query is written once against [`AnyConnection`].
//!
//! This crate is synchronous and knows nothing of HTTP; callers in an async runtime run it on a
//! blocking pool, except for what cannot block them: SQLite reads with an idle connection
//! ([`Store::try_inline`]) and queued pet creation ([`Store::create_pet_then`]). Start with
//! [`Store::open`]; the trait implementations live in one module per aggregate (`pets`,
//! `orders`, `keys`). Row types stay private; only domain types come out.
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
mod keys;
mod migrations;
mod orders;
mod pets;
mod schema;
#[cfg(feature = "testing")]
pub mod testing;
mod writer;

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use diesel::r2d2::Pool;

use connection::ConnectionManager;
pub use connection::{AnyConnection, Backend};
pub use error::StoreError;

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
    pet_writer: Option<std::sync::Arc<writer::PetWriter>>,
    backend_name: &'static str,
    statement_timeout: Duration,
}

/// How [`Store::with_conn`] gets its connection on this thread (see [`Store::try_inline`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checkout {
    /// Wait for a connection, up to the connect timeout.
    Wait,
    /// Take an idle connection or give up at once.
    IdleOnly,
    /// `IdleOnly` found none: the call was not made.
    NoneIdle,
}

thread_local! {
    static CHECKOUT: Cell<Checkout> = const { Cell::new(Checkout::Wait) };
}

/// Restores [`Checkout::Wait`] however the inline call ends.
struct CheckoutGuard;

impl Drop for CheckoutGuard {
    fn drop(&mut self) {
        CHECKOUT.set(Checkout::Wait);
    }
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
    /// not stop the process: operations answer [`StoreError::Unavailable`] until it is back.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        if config.pool_size == 0 {
            return Err(StoreError::Config(
                "the pool size must be at least 1".into(),
            ));
        }
        let backend = Backend::from_url(&config.url)?.with_timeouts(config);
        let backend_name = backend.name();
        let manager = ConnectionManager {
            backend,
            busy_timeout: config.statement_timeout,
            statement_timeout: config.statement_timeout,
        };
        let pet_writer = match manager.backend {
            Backend::Sqlite(_) => Some(std::sync::Arc::new(writer::PetWriter::start(
                manager.clone(),
            )?)),
            Backend::Postgres(_) => None,
        };
        // No test query on every checkout (it doubled the cost of a read): a broken connection
        // fails its query, is answered 503, and is dropped by `has_broken`.
        let mut builder = Pool::builder()
            .max_size(config.pool_size)
            .test_on_check_out(false)
            .connection_timeout(config.connect_timeout);
        builder = if config.keep_warm {
            builder.min_idle(Some(1))
        } else {
            builder
                .min_idle(Some(0))
                .idle_timeout(None)
                .max_lifetime(None)
        };
        let pool = builder.build_unchecked(manager);
        Ok(Self {
            pool,
            pet_writer,
            backend_name,
            statement_timeout: config.statement_timeout,
        })
    }

    /// `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        self.backend_name
    }

    /// The most connections the pool opens (`StoreConfig::pool_size`).
    pub fn max_connections(&self) -> u32 {
        self.pool.max_size()
    }

    /// How long a call waits for a pooled connection before it answers
    /// [`StoreError::Unavailable`] (`StoreConfig::connect_timeout`).
    pub fn checkout_timeout(&self) -> std::time::Duration {
        self.pool.connection_timeout()
    }

    /// Applies pending migrations and returns their names. On PostgreSQL this holds an
    /// advisory lock, so instances starting together apply each migration exactly once.
    pub fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let timeout = self.statement_timeout;
        self.with_conn(|conn| migrations::run_pending(conn, timeout))
    }

    /// Ready to serve: the database answers and no migration is pending.
    pub fn check_ready(&self) -> Result<(), StoreError> {
        self.with_conn(migrations::check_applied)
    }

    /// Creates a pet without blocking the caller, where the backend allows it: on SQLite the pet
    /// is queued for the group-commit writer, and `done` is called on the writer's thread with
    /// the outcome once the transaction holding it has committed (a durable pet, as with
    /// [`create_pet`](petstore_domain::PetRepository::create_pet)). Returns `done` unused on
    /// a backend without a writer (PostgreSQL), whose caller runs `create_pet` instead.
    pub fn create_pet_then<F>(&self, pet: &petstore_domain::PetDraft, done: F) -> Result<(), F>
    where
        F: FnOnce(Result<petstore_domain::Pet, StoreError>) + Send + 'static,
    {
        match &self.pet_writer {
            Some(writer) => {
                writer.submit(pet, Box::new(done));
                Ok(())
            }
            None => Err(done),
        }
    }

    /// Runs the read `f` on the calling thread, if that cannot make it wait: only on SQLite,
    /// whose reads are local and short (no network round trip), and only when the pool has an
    /// idle connection. Returns `None` without calling the database otherwise; the caller then
    /// runs `f` where blocking is allowed. An async server uses this to answer reads without
    /// handing each one to a blocking thread and back (two context switches, measured at a
    /// third of a read's cost). `f` must be a read: one store call, one connection checkout.
    pub fn try_inline<T>(
        &self,
        f: impl FnOnce(&Self) -> Result<T, StoreError>,
    ) -> Option<Result<T, StoreError>> {
        if self.backend_name != "sqlite" {
            return None; // PostgreSQL: every query is a network round trip.
        }
        let _guard = CheckoutGuard;
        CHECKOUT.set(Checkout::IdleOnly);
        let result = f(self);
        (CHECKOUT.get() != Checkout::NoneIdle).then_some(result)
    }

    /// Runs `f` on a pooled connection. A connection whose operation failed as unavailable (lost,
    /// timed out, busy) is marked broken, so the pool drops it instead of handing it out again:
    /// this is how the service recovers from a database restart without testing every checkout.
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut AnyConnection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut pooled = match CHECKOUT.get() {
            Checkout::Wait => self.pool.get()?,
            Checkout::IdleOnly | Checkout::NoneIdle => match self.pool.try_get() {
                Some(pooled) => pooled,
                None => {
                    CHECKOUT.set(Checkout::NoneIdle);
                    return Err(StoreError::Unavailable("no idle connection".into()));
                }
            },
        };
        let result = f(&mut pooled.connection);
        if matches!(result, Err(StoreError::Unavailable(_))) {
            pooled.broken = true;
        }
        result
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
