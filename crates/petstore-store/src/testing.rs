//! Throwaway databases for tests (feature `testing`): a SQLite file in a temporary folder, or
//! a PostgreSQL database of its own on the server named by `PETSTORE_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`). Both are removed on drop.
//!
//! When PostgreSQL is unreachable, [`TestDatabase::new`] returns `None` after printing a loud
//! SKIPPED line, except under CI (`CI` set), where it panics: CI must never skip silently.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};

use crate::{Store, StoreConfig};

/// The key of the PostgreSQL advisory lock that migrations hold, for tests that hold it
/// themselves (to stand for an instance that is migrating).
pub const MIGRATION_LOCK: i64 = crate::migrations::MIGRATION_LOCK;

/// The backends a test can run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBackend {
    /// A SQLite file.
    Sqlite,
    /// A fresh PostgreSQL database.
    Postgres,
}

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

/// Prints a SKIPPED line straight to the process's stderr: the test harness captures the
/// `eprintln!` output of passing tests, and a skip must never pass unseen.
pub fn loud_skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n*** SKIPPED: {what}. Start the service, or run under CI (CI=true), where this fails. ***"
    );
}

/// The PostgreSQL server tests use.
pub fn postgres_admin_url() -> String {
    std::env::var("PETSTORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// Whether tests run under CI, where a missing service is a failure, not a skip.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

impl TestDatabase {
    /// A new empty database on `backend`; `None` when PostgreSQL is unreachable outside CI.
    pub fn new(backend: TestBackend) -> Option<Self> {
        match backend {
            TestBackend::Sqlite => Some(Self::sqlite()),
            TestBackend::Postgres => Self::postgres(),
        }
    }

    /// A SQLite file in a new temporary folder (the folder takes the `-wal`/`-shm` files too).
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("create a temporary folder");
        let url = dir.path().join("petstore.db").display().to_string();
        Self {
            url,
            cleanup: Cleanup::Sqlite(dir),
        }
    }

    /// A new PostgreSQL database, dropped (with its connections) on drop.
    pub fn postgres() -> Option<Self> {
        let admin_url = postgres_admin_url();
        let mut admin = match PgConnection::establish(&admin_url) {
            Ok(conn) => conn,
            Err(error) if !in_ci() => {
                loud_skip(&format!(
                    "PostgreSQL unreachable at {admin_url} ({error}); PostgreSQL tests did not run"
                ));
                return None;
            }
            Err(error) => panic!("PostgreSQL unreachable at {admin_url} in CI: {error}"),
        };
        let name = unique_name();
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create the test database");
        let url = replace_database(&admin_url, &name);
        Some(Self {
            url,
            cleanup: Cleanup::Postgres { admin_url, name },
        })
    }

    /// The database URL, as the service takes it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A store on this database with the migrations applied.
    pub fn store(&self) -> Store {
        let store = Store::open(&StoreConfig::new(&self.url)).expect("open the test store");
        store.migrate().expect("migrate the test store");
        store
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = &self.cleanup {
            let dropped = PgConnection::establish(admin_url).and_then(|mut admin| {
                admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))
            });
            if let Err(error) = dropped {
                eprintln!("could not drop test database {name}: {error}");
            }
        }
    }
}

fn unique_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "petstore_test_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// `postgres://u@h:p/old?x` with the database replaced by `name` (query kept).
fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Runs a test body once per backend, each on its own database. A backend that is unavailable
/// outside CI is skipped loudly (see the module docs).
#[macro_export]
macro_rules! for_each_backend {
    ($($(#[$attr:meta])* fn $name:ident($db:ident) $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn scenario($db: &$crate::testing::TestDatabase) $body

                #[test]
                $(#[$attr])*
                fn sqlite() {
                    let db = $crate::testing::TestDatabase::sqlite();
                    scenario(&db);
                }

                #[test]
                $(#[$attr])*
                fn postgres() {
                    if let Some(db) = $crate::testing::TestDatabase::postgres() {
                        scenario(&db);
                    }
                }
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::replace_database;

    #[test]
    fn the_database_name_is_replaced_and_the_query_kept() {
        assert_eq!(
            replace_database("postgres://u@h:5432/test?sslmode=disable", "x"),
            "postgres://u@h:5432/x?sslmode=disable"
        );
        assert_eq!(replace_database("postgres://h", "x"), "postgres://h/x");
    }
}
