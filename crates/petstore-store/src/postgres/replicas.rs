//! Read replicas: PostgreSQL standbys that answer the reads which tolerate one (pet pages, one
//! pet, the inventory, orders and one order), with read-your-writes.
//!
//! - **Read-your-writes.** With standbys configured, the primary's sessions commit with
//!   `synchronous_commit = remote_apply` (`settings`): where the standbys read from are
//!   synchronous (`synchronous_standby_names`), a write is confirmed, and answered, only once
//!   they have applied it, so a read sent to one afterwards, by any instance, sees it. That is
//!   the operator's half of the bargain (`docs/deploy.md`); the service cannot see it.
//! - **Lag.** A thread of the store's own looks every [`TICK`] at the primary's WAL position and
//!   at each standby's replayed one. A standby's lag is the age of the newest position of the
//!   primary it has replayed; one further behind than the bound, unreachable, or no longer a
//!   standby (promoted) is not read from until a look finds it well again. Positions are
//!   compared, not the standby's last replay time: a standby that receives nothing looks
//!   current by that measure.
//! - **Failure.** A read a standby fails runs again on the primary (reads change nothing), and
//!   a standby that failed it as unavailable is skipped until the next look; but a read that
//!   ran out its statement timeout there is answered so (`503`), not run a second time. A read
//!   by id that finds nothing on a standby runs again on the primary: the standby may not
//!   have applied the write yet.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread;
use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable};
use diesel_async::AsyncPgConnection;
use petstore_domain::StorageErrorKind;
use tracing::Instrument;

use super::connections::Connections;
use super::settings::PgSettings;
use crate::conn::Op;
use petstore_domain::redacted_url;

use crate::{StoreConfig, StoreError, metrics};

/// How often the standbys' lag is looked at.
pub(crate) const TICK: Duration = Duration::from_millis(250);
/// The longest lag measured: the primary's positions are kept this long (four a second).
const MEASURED_LAG: Duration = Duration::from_secs(300);
/// The longest the watcher waits for a server to answer (connecting included) before taking it
/// for unreachable.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// The standbys of a primary, and the thread that watches them.
pub(crate) struct Replicas {
    shared: Arc<Shared>,
    /// The standby the next read tries first (round robin).
    next: AtomicUsize,
}

struct Shared {
    standbys: Vec<Standby>,
    closed: AtomicBool,
}

/// One standby.
struct Standby {
    /// Its URL without a password: the metrics' `replica` label, and the logs'.
    name: String,
    db: Connections,
    /// Whether the last look found it reachable, a standby, and within the lag bound. Not
    /// until the first look.
    usable: AtomicBool,
}

impl Replicas {
    /// Prepares the standbys of `config.read_urls` (no connection yet) and starts the thread
    /// that watches them against the primary (`primary`).
    pub(crate) fn open(
        config: &StoreConfig,
        primary: Arc<PgSettings>,
    ) -> Result<Option<Self>, StoreError> {
        if config.read_urls.is_empty() {
            return Ok(None);
        }
        // A standby's own sessions only read: none of the primary's write settings.
        let own = StoreConfig {
            read_urls: Vec::new(),
            ..config.clone()
        };
        let standbys = config
            .read_urls
            .iter()
            .map(|url| {
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(StoreError::Config(format!(
                        "a read URL must be a postgres:// URL: {}",
                        redacted_url(url)
                    )));
                }
                let db = Connections::open(url, &own)?;
                Ok(Standby {
                    // In metrics' labels, on a port anyone may reach: where, never who.
                    name: db.settings.label(),
                    db,
                    usable: AtomicBool::new(false),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let settings: Vec<Arc<PgSettings>> = standbys
            .iter()
            .map(|standby| standby.db.settings.clone())
            .collect();
        let shared = Arc::new(Shared {
            standbys,
            closed: AtomicBool::new(false),
        });
        let watched = Arc::downgrade(&shared);
        let max_lag = config.read_max_lag;
        thread::Builder::new()
            .name("petstore-replicas".into())
            .spawn(move || watch(&watched, &primary, &settings, max_lag))
            .map_err(|error| StoreError::Config(format!("the replica watcher: {error}")))?;
        Ok(Some(Self {
            shared,
            next: AtomicUsize::new(0),
        }))
    }

    /// Runs `op` on a usable standby; on the primary (`primary`) when there is none, when the
    /// standby fails it as unavailable, or when its answer is not `settled`: a standby that
    /// finds nothing by an id may not have applied the write yet (within its lag bound, or
    /// while a failover manager shrinks the synchronous set), the primary knows.
    pub(crate) async fn read<T>(
        &self,
        primary: &Connections,
        op: impl Op<T> + Clone,
        settled: fn(&T) -> bool,
    ) -> Result<T, StoreError> {
        let standbys = &self.shared.standbys;
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let usable = (0..standbys.len())
            .map(|n| &standbys[(first + n) % standbys.len()])
            .find(|standby| standby.usable.load(Ordering::Relaxed));
        let reason = match usable {
            Some(standby) => match standby
                .db
                .read(op.clone())
                .instrument(tracing::info_span!(
                    target: petstore_domain::TRACES,
                    "read on a standby",
                    petstore.db.replica = %standby.name,
                ))
                .await
            {
                Ok(value) if settled(&value) => {
                    ::metrics::counter!(metrics::READS, "target" => "replica").increment(1);
                    return Ok(value);
                }
                Ok(_) => "not_found",
                // A read that ran out its statement timeout there would most likely run it out
                // on the primary too, past the call's deadline, and load it twice as long.
                Err(error @ StoreError::TimedOut(..)) => return Err(error),
                Err(error) => {
                    if error.kind() == StorageErrorKind::Unavailable {
                        standby.usable.store(false, Ordering::Relaxed);
                    }
                    log::warn!(
                        "standby {} failed a read, which goes to the primary: {}",
                        standby.name,
                        petstore_domain::error::Chain(&error)
                    );
                    "failed"
                }
            },
            None => "unusable",
        };
        ::metrics::counter!(metrics::REPLICA_FALLBACKS, "reason" => reason).increment(1);
        ::metrics::counter!(metrics::READS, "target" => "primary").increment(1);
        primary
            .read(op)
            .instrument(tracing::info_span!(
                target: petstore_domain::TRACES,
                "read on the primary",
                petstore.db.fallback = reason,
            ))
            .await
    }

    /// Closes the standbys' connections and stops the watcher (at its next look).
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::Relaxed);
        for standby in &self.shared.standbys {
            standby.db.close();
        }
    }
}

/// The watcher: every [`TICK`], the primary's position, then each standby's replayed one, until
/// the store is dropped or closed. Its connections are its own (one to each server), driven by
/// a runtime of its own.
fn watch(
    shared: &Weak<Shared>,
    primary: &PgSettings,
    standbys: &[Arc<PgSettings>],
    max_lag: Duration,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            log::error!("the replica watcher could not start; standbys are not read from: {error}");
            return;
        }
    };
    runtime.block_on(async {
        let mut to_primary = Session::default();
        let mut to_standbys: Vec<Session> = standbys.iter().map(|_| Session::default()).collect();
        // The primary's positions, oldest first, for as long as a lag is measured (beyond
        // that, the gauge shows a lower bound).
        let kept = (max_lag + 2 * TICK).max(MEASURED_LAG);
        let mut positions: VecDeque<(i64, Instant)> = VecDeque::new();
        loop {
            tokio::time::sleep(TICK).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if shared.closed.load(Ordering::Relaxed) {
                return;
            }
            // Timed from before the question: a position is at least this old.
            let asked = Instant::now();
            if let Some(Some(position)) = to_primary.position(primary, PRIMARY_POSITION).await {
                positions.push_back((position, asked));
            }
            while positions.front().is_some_and(|(_, at)| at.elapsed() > kept) {
                positions.pop_front();
            }
            // Every standby at once: one slow to answer delays none of the others' looks.
            // `None`: unreachable; `Some(None)`: not (or no longer) a standby.
            let answers = futures_util::future::join_all(
                standbys
                    .iter()
                    .zip(&mut to_standbys)
                    .map(|(settings, session)| session.position(settings, REPLAYED_POSITION)),
            )
            .await;
            for (standby, replayed) in shared.standbys.iter().zip(answers) {
                let lag = replayed.flatten().and_then(|replayed| {
                    positions
                        .iter()
                        .rev()
                        .find(|(position, _)| *position <= replayed)
                        .map(|(_, at)| at.elapsed())
                });
                let usable = lag.is_some_and(|lag| lag <= max_lag);
                // Behind every position kept: at least as old as the oldest (a lower bound, so
                // that the gauge keeps rising while it falls further behind).
                let at_least = positions.front().map(|(_, at)| at.elapsed());
                if let Some(lag) = lag.or(replayed.flatten().and(at_least)) {
                    ::metrics::gauge!(metrics::REPLICA_LAG, "replica" => standby.name.clone())
                        .set(lag.as_secs_f64());
                }
                ::metrics::gauge!(metrics::REPLICA_USABLE, "replica" => standby.name.clone())
                    .set(f64::from(u8::from(usable)));
                if replayed.is_none() {
                    // Gone: its connections are dead (or soon found so); none is kept for the
                    // first reads after it is back to fail on.
                    standby.db.forget_connections();
                }
                if standby.usable.swap(usable, Ordering::Relaxed) != usable {
                    let why = match (replayed, lag) {
                        (_, Some(lag)) if usable => format!("{lag:?} behind"),
                        (_, Some(lag)) => format!("{lag:?} behind, more than {max_lag:?}"),
                        (None, _) => "unreachable".to_owned(),
                        (Some(None), _) => "not a standby (promoted?)".to_owned(),
                        (Some(Some(_)), None) if positions.is_empty() => {
                            "the primary's position unknown".to_owned()
                        }
                        (Some(Some(_)), None) => format!("more than {max_lag:?} behind"),
                    };
                    let state = if usable { "read from" } else { "skipped" };
                    log::warn!("standby {} is {state}: {why}", standby.name);
                }
            }
        }
    });
}

/// The primary's WAL position now, in bytes.
const PRIMARY_POSITION: &str = "SELECT (pg_current_wal_lsn() - '0/0')::bigint AS position";
/// The WAL position a standby has replayed, in bytes; `NULL` on a server that is not a standby.
const REPLAYED_POSITION: &str = "SELECT (pg_last_wal_replay_lsn() - '0/0')::bigint AS position";

#[derive(QueryableByName)]
struct Position {
    #[diesel(sql_type = Nullable<BigInt>)]
    position: Option<i64>,
}

/// The watcher's connection to one server, opened when needed and dropped when it fails.
#[derive(Default)]
struct Session(Option<AsyncPgConnection>);

impl Session {
    /// The position `sql` reads: `None` when the server could not be asked (within
    /// [`ASK_TIMEOUT`]), `Some(None)` when it answered `NULL`.
    async fn position(&mut self, settings: &PgSettings, sql: &'static str) -> Option<Option<i64>> {
        use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
        let asked = tokio::time::timeout(ASK_TIMEOUT, async {
            if self.0.is_none() {
                self.0 = Some(settings.connect().await.ok()?);
            }
            let conn = self.0.as_mut()?;
            // Behind a transaction pooler that keeps no statements, a statement runs in a
            // transaction of its own.
            let pooled = settings.pooler.per_call_transaction().is_some();
            if pooled {
                conn.batch_execute("BEGIN; DEALLOCATE ALL").await.ok()?;
            }
            let position = diesel::sql_query(sql)
                .get_result::<Position>(conn)
                .await
                .ok()
                .map(|row| row.position);
            if pooled {
                conn.batch_execute("COMMIT").await.ok()?;
            }
            position
        })
        .await
        .ok()
        .flatten();
        if asked.is_none() {
            self.0 = None;
        }
        asked
    }
}
