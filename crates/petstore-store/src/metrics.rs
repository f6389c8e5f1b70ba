//! The store's metrics, recorded through the `metrics` facade (a no-op unless the binary
//! installs a recorder): the connection pools' state and waits, and the SQLite writer's batches.
//! [`describe`] and [`HISTOGRAM_BUCKETS`] are what an exporter needs to know of them.

use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
#[cfg(feature = "sqlite")]
use diesel::r2d2::{self, HandleEvent};

/// Pooled connections: `state` (`open`: connected; `idle`; `in_use`: checked out; `max`: the
/// pool's size), `backend`. Read from the pool when metrics are rendered.
pub const POOL_CONNECTIONS: &str = "petstore_db_pool_connections";
/// Time to check a connection out of the pool, for checkouts that may wait (near zero unless
/// connections ran short or one had to be opened; SQLite's reads on the caller's thread take
/// only an idle one, and are not counted): `backend`.
pub const POOL_CHECKOUT: &str = "petstore_db_pool_checkout_seconds";
/// Checkouts that found no connection within the connect timeout: `backend`.
pub const POOL_TIMEOUTS: &str = "petstore_db_pool_timeouts_total";
/// Reads a standby may answer, by where they ran: `target` (`replica`, `primary`). Counted only
/// where standbys are configured.
pub const READS: &str = "petstore_db_reads_total";
/// Reads a standby may answer that ran on the primary: `reason` (`unusable`: no standby was
/// reachable and within the lag bound; `failed`: the standby tried failed the read).
pub const REPLICA_FALLBACKS: &str = "petstore_db_replica_fallbacks_total";
/// How far a standby is behind the primary, as last seen: `replica` (its URL, no password).
pub const REPLICA_LAG: &str = "petstore_db_replica_lag_seconds";
/// Whether a standby is read from (1) or skipped (0), as last seen: `replica`.
pub const REPLICA_USABLE: &str = "petstore_db_replica_usable";
/// Pets committed per transaction by the SQLite writer.
pub const WRITER_BATCH_SIZE: &str = "petstore_sqlite_writer_batch_size";
/// Buckets of [`WRITER_BATCH_SIZE`]: powers of two up to the writer's largest batch.
pub const BATCH_SIZE_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
/// The store's histograms that are not in seconds, with their buckets.
pub const HISTOGRAM_BUCKETS: [(&str, &[f64]); 1] = [(WRITER_BATCH_SIZE, &BATCH_SIZE_BUCKETS)];

/// Describes the store's metrics to the installed recorder.
pub fn describe() {
    describe_gauge!(
        POOL_CONNECTIONS,
        "Pooled database connections, by state: open, idle, in_use (checked out) and max (the pool's size)."
    );
    describe_histogram!(
        POOL_CHECKOUT,
        Unit::Seconds,
        "Time to check a connection out of the pool."
    );
    describe_counter!(
        POOL_TIMEOUTS,
        "Checkouts that found no connection within the connect timeout."
    );
    describe_counter!(
        READS,
        "Reads a standby may answer, by where they ran: replica or primary."
    );
    describe_counter!(
        REPLICA_FALLBACKS,
        "Reads a standby may answer that ran on the primary: no standby usable, or one failed."
    );
    describe_gauge!(
        REPLICA_LAG,
        Unit::Seconds,
        "How far a standby is behind the primary (the age of the newest primary position it has replayed)."
    );
    describe_gauge!(
        REPLICA_USABLE,
        "Whether a standby is read from (1) or skipped (0): unreachable, not a standby, or behind more than the bound."
    );
    describe_histogram!(
        WRITER_BATCH_SIZE,
        Unit::Count,
        "Pets committed per transaction by the SQLite writer (group commit)."
    );
}

/// The pool's events, as metrics (SQLite's r2d2 pool).
#[cfg(feature = "sqlite")]
#[derive(Debug)]
pub(crate) struct PoolMetrics {
    pub(crate) backend: &'static str,
}

#[cfg(feature = "sqlite")]
impl HandleEvent for PoolMetrics {
    // Only checkouts that may wait report here (`Pool::get`); the idle-only checkouts of
    // SQLite's inline reads (`Pool::try_get`) never wait, and r2d2 does not report them.
    fn handle_checkout(&self, event: r2d2::event::CheckoutEvent) {
        ::metrics::histogram!(POOL_CHECKOUT, "backend" => self.backend)
            .record(event.duration().as_secs_f64());
    }

    fn handle_timeout(&self, _: r2d2::event::TimeoutEvent) {
        ::metrics::counter!(POOL_TIMEOUTS, "backend" => self.backend).increment(1);
    }
}

/// Sets the pool gauges: `open` connections, of which `idle`, out of `max`.
pub(crate) fn pool_state(backend: &'static str, open: u32, idle: u32, max: u32) {
    let (open, idle) = (f64::from(open), f64::from(idle));
    for (kind, value) in [
        ("open", open),
        ("idle", idle),
        ("in_use", open - idle),
        ("max", f64::from(max)),
    ] {
        ::metrics::gauge!(POOL_CONNECTIONS, "state" => kind, "backend" => backend).set(value);
    }
}

/// Records a batch of `size` pets handed to one transaction.
#[cfg(feature = "sqlite")]
pub(crate) fn batch_written(size: usize) {
    ::metrics::histogram!(WRITER_BATCH_SIZE).record(size as f64);
}

/// The store's error for a checkout from a deadpool pool (PostgreSQL's, MariaDB's) that
/// failed, counting a timeout in [`POOL_TIMEOUTS`]: `wait` is how long it waited.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn checkout_error(
    error: deadpool::managed::PoolError<crate::StoreError>,
    wait: std::time::Duration,
    backend: &'static str,
) -> crate::StoreError {
    use crate::StoreError;
    use deadpool::managed::{PoolError, TimeoutType};
    match error {
        PoolError::Backend(error) => error,
        PoolError::Timeout(kind) => {
            ::metrics::counter!(POOL_TIMEOUTS, "backend" => backend).increment(1);
            let what = match kind {
                TimeoutType::Wait => "no connection came free",
                TimeoutType::Create => "no connection could be opened",
                TimeoutType::Recycle => "no connection could be checked",
            };
            StoreError::Connect(format!("{what} within {wait:?}").into())
        }
        PoolError::Closed => StoreError::Closed,
        other => StoreError::Connect(other.to_string().into()),
    }
}
