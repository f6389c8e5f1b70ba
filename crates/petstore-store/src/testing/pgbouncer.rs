//! [`PgBouncer`]: PgBouncer, of a test's own, pooling transactions in front of a PostgreSQL
//! server: the pooler `pooler=transaction` and `pooler=transaction-prepared` are for. It is the
//! one `scripts/test-tools.sh` builds (Debian 12's is 1.18, which keeps no prepared statements).

use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::Duration;

use super::server::{chown, free_port, spawn_quiet, stop, system_user, wait_until};
use super::{in_ci, loud_skip};

/// PgBouncer on a free loopback port, in transaction pooling mode (`pool_mode = transaction`),
/// lending every database of one PostgreSQL server at most `pool_size` server connections, so
/// that its clients' transactions share them, in turn (`server_round_robin`: not the one a
/// client last had, so that whatever leaks out of a transaction is met); stopped when dropped.
/// Users are trusted (and only `postgres` is known). As root it runs as the `postgres` user:
/// PgBouncer refuses root.
#[derive(Debug)]
pub struct PgBouncer {
    port: u16,
    statements: PooledStatements,
    child: Child,
    _dir: tempfile::TempDir,
}

/// Whether a [`PgBouncer`] keeps its clients' prepared statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PooledStatements {
    /// It keeps none (`max_prepared_statements = 0`, as before PgBouncer 1.21): the service is
    /// told `pooler=transaction`.
    NotKept,
    /// It keeps them (`max_prepared_statements = 100`): the service is told
    /// `pooler=transaction-prepared`.
    Kept,
}

/// Where `scripts/test-tools.sh` builds it.
fn program() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/tools/pgbouncer/bin/pgbouncer")
}

impl PgBouncer {
    /// PgBouncer in front of the PostgreSQL server at `host:port`. `None` (after a loud SKIPPED
    /// line) where PgBouncer is not built, except under CI, where that fails.
    pub fn start(
        host: &str,
        port: u16,
        pool_size: u32,
        statements: PooledStatements,
    ) -> Option<Self> {
        let program = program();
        if !program.is_file() {
            let what = "PgBouncer is not built (`bash scripts/test-tools.sh` builds it in \
                        target/tools); a test through it did not run";
            assert!(!in_ci(), "{what}");
            loud_skip(what);
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary folder");
        let listen = free_port();
        let users = dir.path().join("users.txt");
        std::fs::write(&users, "\"postgres\" \"\"\n").expect("write the users");
        let ini = dir.path().join("pgbouncer.ini");
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host={host} port={port}\n\n[pgbouncer]\n\
                 listen_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n\
                 auth_type = trust\nauth_file = {}\npool_mode = transaction\n\
                 default_pool_size = {pool_size}\nmax_client_conn = 1000\n\
                 server_login_retry = 1\nserver_round_robin = 1\n\
                 max_prepared_statements = {}\n",
                users.display(),
                match statements {
                    PooledStatements::NotKept => 0,
                    PooledStatements::Kept => 100,
                }
            ),
        )
        .expect("write the configuration");
        let mut command = Command::new(&program);
        if rustix::process::geteuid().is_root() {
            let (uid, gid) =
                system_user("postgres").expect("the postgres user (Debian's package creates it)");
            // Run where `scripts/pgbouncer.sh` put it (readable by all), not from a copy: a copy
            // just written can be "busy" while another test's fork holds it open.
            for path in [dir.path(), &users, &ini] {
                chown(path, (uid, gid));
            }
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        let child = spawn_quiet(command.arg(&ini), "pgbouncer");
        let bouncer = Self {
            port: listen,
            statements,
            child,
            _dir: dir,
        };
        wait_until(
            Duration::from_secs(10),
            "PgBouncer did not start listening",
            || TcpStream::connect(("127.0.0.1", listen)).is_ok(),
        );
        Some(bouncer)
    }

    /// The URL of `database` through it, as the service takes it (`pooler=transaction`, or
    /// `pooler=transaction-prepared` where it keeps statements).
    pub fn url(&self, database: &str) -> String {
        let pooler = match self.statements {
            PooledStatements::NotKept => "transaction",
            PooledStatements::Kept => "transaction-prepared",
        };
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}?pooler={pooler}",
            self.port
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // SIGQUIT: PgBouncer's immediate shutdown (since 1.23, SIGTERM waits for every client
        // to leave).
        stop(&mut self.child, rustix::process::Signal::QUIT);
    }
}
