//! Throwaway databases for tests (feature `testing`): a SQLite file in a temporary folder, or
//! a PostgreSQL database of its own on the server named by `PETSTORE_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`). Both are removed on drop.
//!
//! When PostgreSQL is unreachable, [`TestDatabase::new`] returns `None` after printing a loud
//! SKIPPED line, except under CI (`CI` set), where it panics: CI must never skip silently.
//!
//! For webhook tests, [`an_operators_endpoint`] (or [`an_operators_endpoint_at`] a URL of the
//! test's) and [`claim_of_ten`] set up what a delivery's record needs. For TLS tests,
//! [`Authority`] is a certificate authority made for one test. For what the shared server cannot
//! be made to do (a setting of the whole server, an immediate shutdown), [`PostgresServer`] is a
//! server of the test's own.

mod mariadb;
mod pgbouncer;
mod server;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Store, StoreConfig};
pub use mariadb::MariaDbServer;
pub use pgbouncer::{PgBouncer, PooledStatements};
pub use server::{PostgresServer, server_programs, system_user};

/// An operators' endpoint that receives every event, created in `store`.
pub async fn an_operators_endpoint(store: &Store) -> petstore_domain::webhook::WebhookEndpoint {
    let policy = petstore_domain::webhook::UrlPolicy::default();
    an_operators_endpoint_at(store, "https://example.com/hook", policy).await
}

/// An operators' endpoint at `url` (which `policy` allows) that receives every event, created
/// in `store`.
pub async fn an_operators_endpoint_at(
    store: &Store,
    url: &str,
    policy: petstore_domain::webhook::UrlPolicy,
) -> petstore_domain::webhook::WebhookEndpoint {
    use petstore_domain::WebhookRepository;
    use petstore_domain::webhook::{EndpointOwner, EndpointSpec, EndpointUrl, EventSet};
    let spec = EndpointSpec {
        url: EndpointUrl::parse(url, policy).expect("URL"),
        events: EventSet::ALL,
        description: String::new(),
    };
    let written = store
        .create_webhook_endpoint(EndpointOwner::Operator, &spec)
        .await
        .expect("create");
    written.done().expect("created").0
}

/// A claim under `token` of up to ten deliveries, made as of a second from now (its `now`), so
/// that whatever is due now is taken.
pub fn claim_of_ten(token: i64) -> petstore_domain::webhook::DeliveryClaim {
    use petstore_domain::{Clock, SystemClock};
    let now = SystemClock.unix_now() + 1;
    petstore_domain::webhook::DeliveryClaim {
        now,
        lease_until: now + 60,
        limit: 10,
        token,
        skip_endpoints: Vec::new(),
        per_owner: 10,
        owner_room: Vec::new(),
    }
}

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
    /// A fresh PostgreSQL database, reached through a PgBouncer of its own pooling
    /// transactions and keeping no prepared statements (`pooler=transaction`); migrated
    /// straight.
    PgBouncer,
    /// The same through a PgBouncer that keeps its clients' prepared statements
    /// (`pooler=transaction-prepared`).
    PgBouncerKeepingStatements,
    /// A fresh MariaDB (or MySQL) database.
    Mysql,
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
    Postgres {
        admin_url: String,
        name: String,
        /// The database's own URL, when the service's goes through a pooler.
        direct_url: String,
        pooler: Option<PgBouncer>,
    },
    Mysql {
        admin_url: String,
        name: String,
    },
}

/// The MariaDB (or MySQL) server tests use.
pub fn mysql_admin_url() -> String {
    std::env::var("PETSTORE_TEST_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

/// Runs `sql` on the MariaDB server at `url`, on a thread and runtime of its own (callers may be
/// inside a runtime).
pub fn mysql_execute(url: &str, sql: &str) -> Result<(), String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    thread::spawn(move || {
        use diesel_async::{AsyncConnection, AsyncMysqlConnection, SimpleAsyncConnection};
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(async {
                let mut conn = AsyncMysqlConnection::establish(&url)
                    .await
                    .map_err(|e| e.to_string())?;
                conn.batch_execute(&sql).await.map_err(|e| e.to_string())
            })
    })
    .join()
    .map_err(|_| "the MariaDB thread panicked".to_owned())?
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
            TestBackend::PgBouncer => Self::postgres_through_pgbouncer(PooledStatements::NotKept),
            TestBackend::PgBouncerKeepingStatements => {
                Self::postgres_through_pgbouncer(PooledStatements::Kept)
            }
            TestBackend::Mysql => Self::mysql(),
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
        let admin = match RawPostgres::connect(&admin_url) {
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
            .execute(&format!("CREATE DATABASE {name}"))
            .expect("create the test database");
        let url = replace_database(&admin_url, &name);
        Some(Self {
            url: url.clone(),
            cleanup: Cleanup::Postgres {
                admin_url,
                name,
                direct_url: url,
                pooler: None,
            },
        })
    }

    /// [`Self::postgres`], reached through a PgBouncer of its own in transaction pooling mode
    /// with two server connections, so that its clients' transactions share them, keeping its
    /// clients' prepared statements or not. `None` outside CI where PostgreSQL or PgBouncer is
    /// missing.
    pub fn postgres_through_pgbouncer(statements: PooledStatements) -> Option<Self> {
        Self::postgres_through_pgbouncer_with(statements, 2)
    }

    /// [`Self::postgres_through_pgbouncer`] with `pool_size` server connections.
    pub fn postgres_through_pgbouncer_with(
        statements: PooledStatements,
        pool_size: u32,
    ) -> Option<Self> {
        let mut db = Self::postgres()?;
        let Cleanup::Postgres {
            admin_url,
            name,
            pooler,
            ..
        } = &mut db.cleanup
        else {
            unreachable!("a PostgreSQL database");
        };
        let server = admin_url
            .split_once('@')
            .map_or(admin_url.as_str(), |(_, rest)| rest)
            .split(['/', '?'])
            .next()
            .unwrap_or("127.0.0.1");
        let (host, port) = server.rsplit_once(':').unwrap_or((server, "5432"));
        let bouncer = PgBouncer::start(host, port.parse().expect("a port"), pool_size, statements)?;
        db.url = bouncer.url(name);
        *pooler = Some(bouncer);
        Some(db)
    }

    /// A new MariaDB (or MySQL) database, dropped on drop; `None` when the server is
    /// unreachable outside CI.
    pub fn mysql() -> Option<Self> {
        let admin_url = mysql_admin_url();
        let name = unique_name();
        match mysql_execute(&admin_url, &format!("CREATE DATABASE {name}")) {
            Ok(()) => {}
            Err(error) if !in_ci() => {
                loud_skip(&format!(
                    "MariaDB unreachable at {admin_url} ({error}); MariaDB tests did not run"
                ));
                return None;
            }
            Err(error) => panic!("MariaDB unreachable at {admin_url} in CI: {error}"),
        }
        Some(Self {
            url: replace_database(&admin_url, &name),
            cleanup: Cleanup::Mysql { admin_url, name },
        })
    }

    /// The database's URL past any pooler: what migrations and tests' own statements use.
    pub fn direct_url(&self) -> &str {
        match &self.cleanup {
            Cleanup::Postgres { direct_url, .. } => direct_url,
            Cleanup::Sqlite(_) | Cleanup::Mysql { .. } => &self.url,
        }
    }

    /// The database URL, as the service takes it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many connections PostgreSQL counts to this database (besides the one asking); 0 on
    /// SQLite.
    pub fn connections(&self) -> usize {
        let Cleanup::Postgres { name, .. } = &self.cleanup else {
            return 0;
        };
        let watcher = RawPostgres::connect(self.direct_url()).expect("connect");
        watcher
            .count(&format!(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = '{name}' AND pid <> pg_backend_pid()"
            ))
            .expect("count")
    }

    /// Runs `sql` (one statement or several) on a connection of its own, past the store: to
    /// plant rows the service would never write, or change the schema under it.
    pub fn execute(&self, sql: &str) {
        use diesel::connection::SimpleConnection;
        use diesel::{Connection, SqliteConnection};
        match &self.cleanup {
            Cleanup::Postgres { .. } => RawPostgres::connect(self.direct_url())
                .and_then(|conn| conn.execute(sql))
                .unwrap_or_else(|error| panic!("{sql}: {error}")),
            Cleanup::Sqlite(_) => SqliteConnection::establish(&self.url)
                .map_err(|error| error.to_string())
                .and_then(|mut conn| conn.batch_execute(sql).map_err(|error| error.to_string()))
                .unwrap_or_else(|error| panic!("{sql}: {error}")),
            Cleanup::Mysql { .. } => {
                mysql_execute(&self.url, sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
            }
        }
    }

    /// A store on this database with the migrations applied (straight to the database: not
    /// through a pooler, which cannot run them).
    pub async fn store(&self) -> Store {
        let direct =
            Store::open(&StoreConfig::new(self.direct_url())).expect("open the test store");
        direct.migrate().await.expect("migrate the test store");
        if self.direct_url() == self.url {
            return direct;
        }
        direct.close();
        Store::open(&StoreConfig::new(&self.url)).expect("open the test store")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Cleanup::Postgres {
            admin_url, name, ..
        } = &self.cleanup
        {
            let dropped = RawPostgres::connect(admin_url).and_then(|admin| {
                admin.execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            });
            if let Err(error) = dropped {
                eprintln!("could not drop test database {name}: {error}");
            }
        }
        if let Cleanup::Mysql { admin_url, name } = &self.cleanup
            && let Err(error) = mysql_execute(admin_url, &format!("DROP DATABASE IF EXISTS {name}"))
        {
            eprintln!("could not drop test database {name}: {error}");
        }
    }
}

/// The migrations of `backend` (`sqlite`, `postgres`) in the repository, oldest first: each
/// folder's name and path.
pub fn migration_folders(backend: &str) -> Vec<(String, std::path::PathBuf)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(backend);
    let mut folders: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let entry = entry.expect("a folder entry");
            (
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            )
        })
        .collect();
    folders.sort();
    folders
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

/// A PostgreSQL connection of a test's own, past the store (to plant rows, hold locks, read
/// what is stored). It lives on a thread of its own with its own runtime, so that sync and
/// async tests alike can use it; it closes when dropped.
pub struct RawPostgres {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

/// Rows as text, one `Vec` per row (`None`: NULL).
type Rows = Vec<Vec<Option<String>>>;

/// A statement for the connection's thread, and where to send its outcome.
type Request = (String, mpsc::Sender<Result<Rows, String>>);

impl RawPostgres {
    /// Connects to `url` (without TLS: the test server's loopback).
    pub fn connect(url: &str) -> Result<Self, String> {
        let (requests, incoming) = mpsc::channel::<Request>();
        let (ready, connected) = mpsc::channel();
        let url = url.to_owned();
        let thread = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let client = match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
                    Ok((client, connection)) => {
                        tokio::spawn(connection);
                        let _ = ready.send(Ok(()));
                        client
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error.to_string()));
                        return;
                    }
                };
                while let Ok((sql, reply)) = incoming.recv() {
                    let rows = client.simple_query(&sql).await.map(|messages| {
                        messages
                            .iter()
                            .filter_map(|message| match message {
                                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                                    (0..row.len())
                                        .map(|i| row.get(i).map(str::to_owned))
                                        .collect(),
                                ),
                                _ => None,
                            })
                            .collect()
                    });
                    let _ = reply.send(rows.map_err(|error| error.to_string()));
                }
            });
        });
        connected
            .recv()
            .map_err(|_| "the connection's thread stopped".to_owned())??;
        Ok(Self {
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// Runs `sql` (one statement or several) and returns the rows of its results, as text.
    pub fn query(&self, sql: &str) -> Result<Rows, String> {
        let (reply, answer) = mpsc::channel();
        self.requests
            .as_ref()
            .expect("open until dropped")
            .send((sql.to_owned(), reply))
            .map_err(|_| "the connection's thread stopped".to_owned())?;
        answer
            .recv()
            .map_err(|_| "the connection's thread stopped".to_owned())?
    }

    /// The number a query such as `SELECT count(*) ...` answers: its first row's first column.
    pub fn count(&self, sql: &str) -> Result<usize, String> {
        let rows = self.query(sql)?;
        let first = rows.first().and_then(|row| row.first()).cloned().flatten();
        let text = first.ok_or_else(|| format!("no number from {sql:?}"))?;
        text.parse()
            .map_err(|_| format!("{text:?} from {sql:?} is not a count"))
    }

    /// Runs `sql` for its effect.
    pub fn execute(&self, sql: &str) -> Result<(), String> {
        self.query(sql).map(drop)
    }
}

impl Drop for RawPostgres {
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs each scenario named (`for_each_backend!(a, b)`, each a plain
/// `async fn a(db: &TestDatabase)` that rustfmt formats) once per backend, each on its own
/// database, on a current-thread tokio runtime (the test crate depends on `tokio` with `macros`
/// and `rt`). A backend that is unavailable outside CI is skipped loudly (see the module docs).
#[macro_export]
macro_rules! for_each_backend {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test]
                async fn sqlite() {
                    let db = $crate::testing::TestDatabase::sqlite();
                    super::$name(&db).await;
                }

                #[tokio::test]
                async fn postgres() {
                    if let Some(db) = $crate::testing::TestDatabase::postgres() {
                        super::$name(&db).await;
                    }
                }
            }
        )*
    };
}

/// A certificate authority made for one test (its certificate in PEM), which signs server
/// certificates for the test's own TLS servers.
pub struct Authority {
    /// The CA's certificate, PEM: what a client given it trusts.
    pub ca_pem: String,
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Authority {
    /// A new CA named `name`, with a key of its own.
    pub fn new(name: &str) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer =
            CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA");
        Self {
            ca_pem: issuer.pem(),
            issuer,
        }
    }

    /// A certificate for `names` (DNS names or IP addresses), and its key, in PEM.
    pub fn server_certificate(&self, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let params = rcgen::CertificateParams::new(names).expect("params");
        let certificate = params.signed_by(&key, &self.issuer).expect("signed");
        (certificate.pem(), key.serialize_pem())
    }
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
