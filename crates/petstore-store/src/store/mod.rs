//! [`Store`]: the database behind the service, and the domain's storage traits implemented over
//! it (`repositories`: each method hands one operation of `queries/` to its backend, which runs
//! it its own way: a read with [`Store::read`] (or [`Store::read_replica`] where a standby may
//! answer it), anything else with [`Store::write`], a pet through SQLite's writer).

mod repositories;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opentelemetry::trace::TraceContextExt;
use petstore_domain::{
    Capacity, Clock, Storage, StorageError, SystemClock, TRACES, TraceParent, async_trait,
};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::conn::Op;
#[cfg(feature = "mysql")]
use crate::mysql::Mysql;
#[cfg(feature = "postgres")]
use crate::postgres::Postgres;
use crate::queries::Now;
#[cfg(feature = "sqlite")]
use crate::sqlite::Sqlite;
use crate::{Backend, MigrationStatus, StoreConfig, StoreError, migrations};

/// The database behind the service: SQLite, PostgreSQL or MariaDB/MySQL, with its pool. Cloning is cheap and
/// shares it. Calls must be made inside a tokio runtime.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    /// What a call stamps its rows with and compares against (creation, revocation and deletion
    /// times, a rotated-out secret's grace, the outbox's due times): the system clock unless a
    /// test sets another ([`Store::with_clock`]). Times a caller passes (a ban's, an attempt's,
    /// a claim's) are the caller's.
    clock: Arc<dyn Clock>,
}

struct Inner {
    db: Db,
}

enum Db {
    #[cfg(feature = "sqlite")]
    Sqlite(Sqlite),
    #[cfg(feature = "postgres")]
    Postgres(Postgres),
    #[cfg(feature = "mysql")]
    Mysql(Mysql),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend_name())
            .finish_non_exhaustive()
    }
}

/// `$body` with `$db` bound to the backend behind `$store`, whichever it is: what every backend
/// does by a method of the same name.
macro_rules! on_backend {
    ($store:expr, $db:ident => $body:expr) => {
        match &$store.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite($db) => $body,
            #[cfg(feature = "postgres")]
            Db::Postgres($db) => $body,
            #[cfg(feature = "mysql")]
            Db::Mysql($db) => $body,
        }
    };
}

impl Store {
    /// Prepares the pool. Connections are opened lazily, so a database that is down now does
    /// not stop the process: calls fail as unavailable ([`StoreError::Connect`]) until it is
    /// back. A configuration that cannot work (a bad URL, an unreadable CA file) fails here.
    pub fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        if config.pool_size == 0 {
            return Err(StoreError::Config(
                "the pool size must be at least 1".into(),
            ));
        }
        let db = match Backend::from_url(&config.url)? {
            Backend::Sqlite(_) if !config.read_urls.is_empty() => {
                return Err(StoreError::Config(
                    "read URLs name PostgreSQL standbys: the database must be PostgreSQL".into(),
                ));
            }
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(path) => Db::Sqlite(Sqlite::open(&path, config)?),
            #[cfg(feature = "postgres")]
            Backend::Postgres(url) => Db::Postgres(Postgres::open(&url, config)?),
            #[cfg(feature = "mysql")]
            Backend::Mysql(url) => Db::Mysql(Mysql::open(&url, config)?),
            #[allow(unreachable_patterns)] // with every backend built, every URL is served
            backend => {
                return Err(StoreError::Config(format!(
                    "this build has no {} support (petstore-store's `{}` feature is off)",
                    backend.name(),
                    backend.name()
                )));
            }
        };
        Ok(Self {
            inner: Arc::new(Inner { db }),
            clock: Arc::new(SystemClock),
        })
    }

    /// The same store on another clock (tests move time); its clones keep the clock it had.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// Now, as the store's clock says, in the caller's trace (the span its call is made in,
    /// when traces are exported).
    fn now(&self) -> Now {
        let trace = tracing::enabled!(target: TRACES, tracing::Level::INFO)
            .then(|| TraceParent::of(tracing::Span::current().context().span().span_context()))
            .flatten();
        Now {
            at: self.clock.now(),
            trace,
        }
    }

    /// `sqlite`, `postgres` or `mysql`.
    pub fn backend_name(&self) -> &'static str {
        match self.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(_) => "sqlite",
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => "postgres",
            #[cfg(feature = "mysql")]
            Db::Mysql(_) => "mysql",
        }
    }

    /// Applies pending migrations and returns their names. On PostgreSQL this holds an
    /// advisory lock, so instances starting together apply each migration exactly once; on
    /// SQLite the write lock does the same.
    pub async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        on_backend!(self, db => db.migrate().await)
    }

    /// The names of the migrations this database has not applied, oldest first.
    pub async fn pending_migrations(&self) -> Result<Vec<String>, StoreError> {
        self.read(|conn| Box::pin(migrations::pending(conn))).await
    }

    /// The migrations this database has applied, those it has not, and any it records that
    /// this build does not know.
    pub async fn migration_status(&self) -> Result<MigrationStatus, StoreError> {
        self.read(|conn| Box::pin(migrations::status(conn))).await
    }

    /// Sets the connection-pool gauges ([`crate::metrics::POOL_CONNECTIONS`]) from the pools'
    /// state: called when metrics are rendered.
    pub fn record_pool_state(&self) {
        on_backend!(self, db => db.record_pool_state())
    }

    /// Closes the store: SQLite's writer commits what it holds and its thread is joined;
    /// PostgreSQL's pools close their connections. Later calls fail as unavailable.
    pub fn close(&self) {
        on_backend!(self, db => db.close())
    }

    /// Runs a read: SQLite answers it on this thread when a connection is idle.
    ///
    /// Each backend's future is boxed on its own: a future holding both in place is as large as
    /// the larger (PostgreSQL's, with a connection's set-up in it), and moving it into the trait
    /// method's box copied kilobytes per call (a quarter of a SQLite read's instructions).
    fn read<T: Send + 'static>(&self, op: impl Op<T>) -> BoxFuture<'_, Result<T, StoreError>> {
        on_backend!(self, db => Box::pin(db.read(op)))
    }

    /// Runs a read that a PostgreSQL standby may answer (`postgres::replicas`: one that is
    /// current enough, with read-your-writes), else as [`Self::read`]; boxed like it. An answer
    /// that is not `settled` (nothing found by an id) is asked of the primary again.
    #[cfg_attr(
        not(feature = "postgres"),
        expect(unused_variables, reason = "only PostgreSQL has standbys")
    )]
    fn read_replica<T: Send + 'static>(
        &self,
        op: impl Op<T> + Clone,
        settled: fn(&T) -> bool,
    ) -> BoxFuture<'_, Result<T, StoreError>> {
        match &self.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(db) => Box::pin(db.read(op)),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => Box::pin(db.read_replica(op, settled)),
            #[cfg(feature = "mysql")]
            Db::Mysql(db) => Box::pin(db.read(op)),
        }
    }

    /// Runs a call that writes (or may wait for a lock); boxed like [`Self::read`].
    fn write<T: Send + 'static>(&self, op: impl Op<T>) -> BoxFuture<'_, Result<T, StoreError>> {
        match &self.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(db) => Box::pin(db.blocking(op)),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => Box::pin(db.call(op)),
            #[cfg(feature = "mysql")]
            Db::Mysql(db) => Box::pin(db.call(op)),
        }
    }

    /// Deletes in rounds, each `round` a call of its own ([`Self::write`]) that deletes at most
    /// `batch` rows, until one deletes fewer: how many went in all.
    async fn in_rounds(&self, batch: i64, round: impl Op<u64> + Clone) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            let this_round = self.write(round.clone()).await?;
            deleted += this_round;
            if this_round < batch as u64 {
                return Ok(deleted);
            }
        }
    }
}

#[async_trait]
impl Storage for Store {
    async fn check_ready(&self) -> Result<(), StorageError> {
        self.read(|conn| Box::pin(migrations::check_applied(conn)))
            .await?;
        match &self.inner.db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(db) => db.check_space()?,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => {}
            #[cfg(feature = "mysql")]
            Db::Mysql(_) => {}
        }
        Ok(())
    }

    fn capacity(&self) -> Capacity {
        on_backend!(self, db => db.capacity())
    }

    fn system(&self) -> &'static str {
        match self.backend_name() {
            "postgres" => "postgresql",
            name => name,
        }
    }
}
