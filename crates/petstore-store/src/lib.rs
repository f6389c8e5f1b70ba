//! Persistence for the Animal Store Service: the `petstore-domain` storage interface
//! ([`petstore_domain::Storage`] and its asynchronous repository traits) implemented with Diesel,
//! for SQLite (embedded, the default: sync Diesel over an r2d2 pool) and PostgreSQL (many
//! instances on one database: diesel-async over tokio-postgres, no libpq).
//!
//! Every query and transaction is written once, as an async function over [`conn::Conn`]
//! (`queries/`): on SQLite its statements run synchronously and the function completes without
//! waiting; on PostgreSQL each one is a round trip awaited on the caller's runtime. How a call
//! runs is each backend's own business (`sqlite/`, `postgres/`): SQLite answers reads on the
//! caller's thread when a connection is idle, runs other calls on the runtime's blocking
//! threads, and creates pets through a group-commit writer thread; PostgreSQL gives every
//! runtime thread that calls it a pool of its own, so that a connection's I/O stays on the
//! worker that asked. Start with [`Store::open`] (`store/mod.rs`). Row types stay private; only
//! domain types come out. Calls must be made inside a tokio runtime.
//!
//! Modules depend one way: `schema`, `error`, `metrics`, `config` at the bottom; `conn` (the
//! connection over the three backends and its `run!` macro, which runs each statement on the
//! asynchronous backends through `kept_sql`); `queries`; `migrations`; the
//! backends `sqlite`, `postgres` and `mysql`; then `store`, which implements the traits.
//!
//! Each backend is a feature, both on by default: `default-features = false, features =
//! ["sqlite"]` builds no PostgreSQL code (no diesel-async, tokio-postgres or rustls), and
//! `["postgres"]` no SQLite. A URL for a backend the build leaves out is refused by
//! [`Store::open`] with [`StoreError::Config`].
#![warn(missing_docs)]

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!(
    "petstore-store needs a backend: enable the `sqlite`, `postgres` or `mysql` feature"
);

#[macro_use]
mod conn;
mod config;
mod error;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod kept_sql;
pub mod metrics;
mod migrations;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod per_thread;
#[cfg(feature = "postgres")]
mod postgres;
mod queries;
mod schema;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use config::{Backend, DEADLINE_MARGIN, DEFAULT_READ_MAX_LAG, StoreConfig};
pub use error::StoreError;
pub use migrations::MigrationStatus;
#[cfg(feature = "sqlite")]
pub use sqlite::LOW_SPACE;
pub use store::Store;
