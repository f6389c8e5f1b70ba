//! Embedded per-backend migrations (`migrations/sqlite`, `migrations/postgres`).

use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::migration::MigrationSource;
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::{AnyConnection, StoreError};

const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// Key of the PostgreSQL advisory lock held while migrating ("petstore" in ASCII).
pub(crate) const MIGRATION_LOCK: i64 = 0x7065_7473_746f_7265;

pub(crate) fn run_pending(
    conn: &mut AnyConnection,
    statement_timeout: Duration,
) -> Result<Vec<String>, StoreError> {
    match conn {
        AnyConnection::Sqlite(conn) => {
            // BEGIN IMMEDIATE takes the write lock before looking at what is applied, so
            // processes starting together on a new file wait for each other (busy_timeout)
            // instead of racing to create the same tables. Each migration's own transaction
            // becomes a savepoint inside this one.
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
        AnyConnection::Postgresql(conn) => {
            // Waiting for another instance's migration, or a long migration, must not be cut
            // short by the per-request statement timeout: lift it on this connection meanwhile.
            conn.batch_execute("SET statement_timeout = 0")?;
            diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
                .execute(conn)?;
            let result = applied(conn.run_pending_migrations(POSTGRES));
            let restored = conn.batch_execute(&format!(
                "SELECT pg_advisory_unlock({MIGRATION_LOCK}); SET statement_timeout = {}",
                statement_timeout.as_millis()
            ));
            let names = result?;
            restored?;
            Ok(names)
        }
    }
}

pub(crate) fn check_applied(conn: &mut AnyConnection) -> Result<(), StoreError> {
    let pending = match conn {
        AnyConnection::Sqlite(conn) => pending(conn, SQLITE)?,
        AnyConnection::Postgresql(conn) => pending(conn, POSTGRES)?,
    };
    if pending {
        return Err(StoreError::Migration(
            "migrations are pending: run `petstore migrate`".into(),
            None,
        ));
    }
    Ok(())
}

fn pending<C, DB>(conn: &mut C, source: EmbeddedMigrations) -> Result<bool, StoreError>
where
    DB: diesel::backend::Backend,
    C: MigrationHarness<DB> + Connection<Backend = DB>,
    EmbeddedMigrations: MigrationSource<DB>,
{
    conn.has_pending_migration(source).map_err(|error| {
        match error.downcast::<diesel::result::Error>() {
            Ok(error) => StoreError::from(*error),
            Err(other) => StoreError::Migration(
                "the applied migrations could not be read".into(),
                Some(other),
            ),
        }
    })
}

fn applied<V: std::fmt::Display>(
    result: diesel::migration::Result<Vec<V>>,
) -> Result<Vec<String>, StoreError> {
    result
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| StoreError::Migration("the migrations could not be applied".into(), Some(e)))
}
