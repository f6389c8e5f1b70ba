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
//!
//! Modules, each using only those below it: `tls` (rustls with libpq's `sslmode`), `settings`
//! (a URL to connections), `connections` (one database's per-thread pools and how a call runs
//! on them), `replicas` (the read standbys and their watcher), and here [`Postgres`]: the
//! primary's connections and the standbys.

mod connections;
mod pooler;
mod replicas;
mod settings;
mod tls;

use petstore_domain::Capacity;

use crate::conn::Op;
use crate::{StoreConfig, StoreError, migrations};
use connections::Connections;
use replicas::Replicas;

/// The PostgreSQL database behind a store: the primary's connections, and the standbys that
/// answer the reads which tolerate one.
pub(crate) struct Postgres {
    primary: Connections,
    replicas: Option<Replicas>,
}

impl Postgres {
    /// Reads the URL's settings (TLS included: a bad CA file fails here, at start-up), and the
    /// read URLs'. Opens no connection: a database that is down now does not stop the process.
    pub(crate) fn open(url: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        let primary = Connections::open(url, config)?;
        Ok(Self {
            replicas: Replicas::open(config, primary.settings.clone())?,
            primary,
        })
    }

    /// Runs `op`, which starts no transaction, on the primary ([`Connections::read`]).
    pub(crate) async fn read<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        self.primary.read(op).await
    }

    /// Runs `op`, a read that a standby may answer, on one ([`replicas`]) where there are
    /// standbys (again on the primary when the standby's answer is not `settled`), else as
    /// [`Self::read`].
    pub(crate) async fn read_replica<T>(
        &self,
        op: impl Op<T> + Clone,
        settled: fn(&T) -> bool,
    ) -> Result<T, StoreError> {
        match &self.replicas {
            Some(replicas) => replicas.read(&self.primary, op, settled).await,
            None => self.primary.read(op).await,
        }
    }

    /// Runs `op` on a pooled connection of the primary ([`Connections::call`]).
    pub(crate) async fn call<T>(&self, op: impl Op<T>) -> Result<T, StoreError> {
        self.primary.call(op).await
    }

    /// Applies pending migrations on a connection of their own (closed afterwards), opened and
    /// driven by this thread's runtime while diesel's synchronous harness runs on a blocking
    /// thread.
    pub(crate) async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        let settings = &self.primary.settings;
        if settings.pooler.pools_transactions() {
            return Err(StoreError::Config(
                "migrations need a session of their own (an advisory lock held across \
                 transactions), which a transaction pooler does not give: run `petstore \
                 migrate` with a URL straight to PostgreSQL, and serve through the pooler \
                 with `--no-migrate`"
                    .into(),
            ));
        }
        let conn = settings.connect().await?;
        migrations::on_a_blocking_thread(move || migrations::run_postgres(conn)).await
    }

    /// The primary's capacity ([`Connections::capacity`]).
    pub(crate) fn capacity(&self) -> Capacity {
        self.primary.capacity()
    }

    /// Sets the pool gauges from the primary's pools.
    pub(crate) fn record_pool_state(&self) {
        self.primary.record_pool_state();
    }

    /// Closes the standbys' connections and the primary's; later calls fail as unavailable.
    pub(crate) fn close(&self) {
        if let Some(replicas) = &self.replicas {
            replicas.close();
        }
        self.primary.close();
    }
}
