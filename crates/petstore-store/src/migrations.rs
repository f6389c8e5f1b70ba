//! Embedded per-backend migrations (`migrations/sqlite`, `migrations/postgres`,
//! `migrations/mysql`): applying them (SQLite on a pooled connection; PostgreSQL, MariaDB and
//! MySQL over the async connection, through diesel-async's `AsyncConnectionWrapper`, under a
//! lock), and telling which are pending.

use std::collections::HashSet;

use diesel::QueryableByName;
#[cfg(feature = "sqlite")]
use diesel::SqliteConnection;
use diesel::migration::MigrationSource;
#[cfg(feature = "postgres")]
use diesel::pg::Pg;
use diesel::sql_types::{Bool, Text};
#[cfg(feature = "sqlite")]
use diesel::sqlite::Sqlite;
#[cfg(feature = "postgres")]
use diesel::{RunQueryDsl, connection::SimpleConnection};
#[cfg(feature = "postgres")]
use diesel_async::{AsyncPgConnection, async_connection_wrapper::AsyncConnectionWrapper};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::StoreError;
use crate::conn::Conn;

#[cfg(feature = "sqlite")]
const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
#[cfg(feature = "postgres")]
const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
#[cfg(feature = "mysql")]
const MYSQL: EmbeddedMigrations = embed_migrations!("../../migrations/mysql");

/// Key of the PostgreSQL advisory lock held while migrating ("petstore" in ASCII).
#[cfg(feature = "postgres")]
pub(crate) const MIGRATION_LOCK: i64 = 0x7065_7473_746f_7265;

/// Runs `apply`, which applies one backend's migrations through diesel's synchronous harness,
/// on a blocking thread.
pub(crate) async fn on_a_blocking_thread(
    apply: impl FnOnce() -> Result<Vec<String>, StoreError> + Send + 'static,
) -> Result<Vec<String>, StoreError> {
    tokio::task::spawn_blocking(apply)
        .await
        .map_err(StoreError::Blocking)?
}

/// Applies SQLite's pending migrations. `BEGIN IMMEDIATE` takes the write lock before looking
/// at what is applied, so processes starting together on a new file wait for each other
/// (`busy_timeout`) instead of racing to create the same tables. Each migration's own
/// transaction becomes a savepoint inside this one.
#[cfg(feature = "sqlite")]
pub(crate) fn run_sqlite(conn: &mut SqliteConnection) -> Result<Vec<String>, StoreError> {
    let mut names = Vec::new();
    conn.immediate_transaction(|conn| {
        names = applied(conn.run_pending_migrations(SQLITE))
            .map_err(|e| diesel::result::Error::QueryBuilderError(Box::new(e)))?;
        Ok::<_, diesel::result::Error>(())
    })
    .map_err(|e| {
        StoreError::Migration("the migrations could not be applied".into(), Some(e.into()))
    })?;
    Ok(names)
}

/// Applies PostgreSQL's pending migrations on a connection of their own, under an advisory lock
/// so that instances starting together apply each one exactly once. Blocks: run it where
/// blocking is allowed, on the runtime whose thread opened `conn` (diesel's migration harness is
/// synchronous; the wrapper waits for each statement on that runtime).
#[cfg(feature = "postgres")]
pub(crate) fn run_postgres(conn: AsyncPgConnection) -> Result<Vec<String>, StoreError> {
    let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::from(conn);
    // Waiting for another instance's migration, or a long migration, must not be cut short by
    // the statement timeout: lift it on this connection, which is closed afterwards.
    conn.batch_execute("SET statement_timeout = 0")?;
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})")).execute(&mut conn)?;
    let result = applied(conn.run_pending_migrations(POSTGRES));
    let unlocked = conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    let names = result?;
    unlocked?;
    Ok(names)
}

/// Applies MariaDB's or MySQL's pending migrations on a connection of their own, under a named
/// lock (`GET_LOCK`, the session's until released or closed) so that instances starting together
/// apply each one exactly once. Blocks, as [`run_postgres`] does.
#[cfg(feature = "mysql")]
pub(crate) fn run_mysql(
    conn: diesel_async::AsyncMysqlConnection,
) -> Result<Vec<String>, StoreError> {
    use diesel::connection::SimpleConnection;
    let mut conn = diesel_async::async_connection_wrapper::AsyncConnectionWrapper::<
        diesel_async::AsyncMysqlConnection,
    >::from(conn);
    // Waits as long as another instance migrates: a year (MariaDB takes no negative timeout,
    // answering NULL and taking no lock); anything but 1 is no lock.
    #[derive(QueryableByName)]
    struct Locked {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
        locked: Option<i64>,
    }
    let locked: Locked = diesel::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT CAST(GET_LOCK('petstore_migrations', 31536000) AS SIGNED) AS locked",
        ),
        &mut conn,
    )?;
    if locked.locked != Some(1) {
        return Err(StoreError::Migration(
            "the migration lock could not be taken".into(),
            None,
        ));
    }
    let result = applied(conn.run_pending_migrations(MYSQL));
    let unlocked = conn.batch_execute("DO RELEASE_LOCK('petstore_migrations')");
    let names = result?;
    unlocked?;
    Ok(names)
}

fn applied<V: std::fmt::Display>(
    result: diesel::migration::Result<Vec<V>>,
) -> Result<Vec<String>, StoreError> {
    result
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration("the migrations could not be applied".into(), Some(e)))
}

/// What the store's own migration table says: one row per applied migration.
#[derive(QueryableByName)]
struct AppliedVersion {
    #[diesel(sql_type = Text)]
    version: String,
}

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = Bool)]
    exists: bool,
}

/// Which migrations a database has applied, as `petstore migrate status` shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationStatus {
    /// The embedded migrations this database has applied, oldest first.
    pub applied: Vec<String>,
    /// The embedded migrations it has not, oldest first: `petstore migrate` applies them.
    pub pending: Vec<String>,
    /// Versions the database records that this build does not embed: a newer build migrated
    /// it.
    pub unknown: Vec<String>,
}

/// The embedded migrations this database has and has not applied. Read with plain queries
/// (diesel's harness is synchronous), the same on every backend.
pub(crate) async fn status(mut conn: Conn<'_>) -> Result<MigrationStatus, StoreError> {
    let conn = &mut conn;
    let (table_query, embedded) = match conn {
        #[cfg(feature = "sqlite")]
        Conn::Sqlite(_) => (
            "SELECT EXISTS (SELECT 1 FROM sqlite_master \
             WHERE type = 'table' AND name = '__diesel_schema_migrations') AS \"exists\"",
            names::<Sqlite>(&SQLITE)?,
        ),
        #[cfg(feature = "postgres")]
        Conn::Postgres { .. } => (
            "SELECT to_regclass('__diesel_schema_migrations') IS NOT NULL AS \"exists\"",
            names::<Pg>(&POSTGRES)?,
        ),
        #[cfg(feature = "mysql")]
        Conn::Mysql(_) => (
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name = '__diesel_schema_migrations') \
             AS `exists`",
            names::<diesel::mysql::Mysql>(&MYSQL)?,
        ),
    };
    let table: Exists = run!(conn, get_result, diesel::sql_query(table_query))?;
    let mut done: Vec<String> = if table.exists {
        let query = diesel::sql_query("SELECT version FROM __diesel_schema_migrations");
        let rows: Vec<AppliedVersion> = run!(conn, load, query)?;
        rows.into_iter().map(|row| row.version).collect()
    } else {
        Vec::new()
    };
    done.sort();
    let known: HashSet<&str> = embedded
        .iter()
        .map(|(version, _)| version.as_str())
        .collect();
    let unknown = done
        .iter()
        .filter(|version| !known.contains(version.as_str()))
        .cloned()
        .collect();
    let done: HashSet<String> = done.into_iter().collect();
    let (applied, pending): (Vec<_>, Vec<_>) = embedded
        .into_iter()
        .partition(|(version, _)| done.contains(version));
    Ok(MigrationStatus {
        applied: applied.into_iter().map(|(_, name)| name).collect(),
        pending: pending.into_iter().map(|(_, name)| name).collect(),
        unknown,
    })
}

/// The names of the embedded migrations this database has not applied, oldest first.
pub(crate) async fn pending(conn: Conn<'_>) -> Result<Vec<String>, StoreError> {
    Ok(status(conn).await?.pending)
}

/// The embedded migrations of one backend: (version, name), oldest first.
fn names<DB: diesel::backend::Backend>(
    source: &EmbeddedMigrations,
) -> Result<Vec<(String, String)>, StoreError>
where
    EmbeddedMigrations: MigrationSource<DB>,
{
    let migrations = MigrationSource::<DB>::migrations(source).map_err(|e| {
        StoreError::Migration("the embedded migrations could not be read".into(), Some(e))
    })?;
    Ok(migrations
        .iter()
        .map(|m| (m.name().version().to_string(), m.name().to_string()))
        .collect())
}

/// Fails unless every embedded migration is applied.
pub(crate) async fn check_applied(conn: Conn<'_>) -> Result<(), StoreError> {
    let pending = pending(conn).await?;
    if pending.is_empty() {
        return Ok(());
    }
    Err(StoreError::Migration(
        format!(
            "{} migration(s) pending ({}): run `petstore migrate`",
            pending.len(),
            pending.join(", ")
        ),
        None,
    ))
}
