//! [`PostgresServer`]: a PostgreSQL server of a test's own, for what the shared local server
//! cannot be made to do (a certificate of the test's CA, a setting of the whole server, an
//! immediate shutdown, a restart).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{RawPostgres, in_ci, loud_skip};

/// A PostgreSQL server of a test's own: `initdb` in a temporary folder, then `postgres` on a
/// free loopback port (also listening on 127.0.0.2, for tests of host names), stopped (fast
/// shutdown) when dropped. As root it runs as the `postgres` user, as PostgreSQL requires (the
/// user Debian's package creates). Its superuser is `postgres`, with trust authentication.
pub struct PostgresServer {
    port: u16,
    child: Option<Child>,
    data: PathBuf,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    settings: Vec<String>,
    dir: tempfile::TempDir,
}

impl PostgresServer {
    /// A new server with these settings (`name=value`, as `postgres -c` takes them), started
    /// and accepting connections. `None` (after a loud SKIPPED line) where PostgreSQL's server
    /// programs are not installed, except under CI, where that fails.
    pub fn start(settings: &[&str]) -> Option<Self> {
        Self::start_with_files(settings, &[])
    }

    /// [`Self::start`], with TLS on: `certificate` and `key` (PEM) are the server's.
    pub fn start_with_tls(certificate: &str, key: &str, settings: &[&str]) -> Option<Self> {
        let mut all = vec!["ssl=on"];
        all.extend_from_slice(settings);
        Self::start_with_files(&all, &[("server.crt", certificate), ("server.key", key)])
    }

    fn start_with_files(settings: &[&str], files: &[(&str, &str)]) -> Option<Self> {
        let Some(bin) = server_programs() else {
            let what = "PostgreSQL's initdb and postgres are not installed; a test that starts its own server did not run";
            assert!(!in_ci(), "{what}");
            loud_skip(what);
            return None;
        };
        let dir = tempfile::tempdir().expect("temporary folder");
        let data = dir.path().join("data");
        let owner = rustix::process::geteuid().is_root().then(|| {
            system_user("postgres").expect("the postgres user (Debian's package creates it)")
        });
        if let Some(owner) = owner {
            chown(dir.path(), owner);
        }
        let mut server = Self {
            port: free_port(),
            child: None,
            data,
            bin,
            owner,
            settings: settings.iter().map(|s| (*s).to_owned()).collect(),
            dir,
        };
        let status = server
            .command("initdb")
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&server.data)
            .stdout(Stdio::null())
            .status()
            .expect("run initdb");
        assert!(status.success(), "initdb failed");
        for (name, contents) in files {
            let path = server.data.join(name);
            std::fs::write(&path, contents).expect("write");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            if let Some(owner) = owner {
                chown(&path, owner);
            }
        }
        server.run();
        Some(server)
    }

    /// A streaming standby of this server: `pg_basebackup -R` (a copy, then replication from this
    /// server's WAL) into a folder of its own, started on a port of its own with this server's
    /// settings and `settings` besides, accepting read-only sessions. This server's commits
    /// wait for it once it is named synchronous ([`Self::wait_for_synchronous_standby`]).
    pub fn start_standby(&self, settings: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        if let Some(owner) = self.owner {
            chown(dir.path(), owner);
        }
        let mut standby = Self {
            port: free_port(),
            child: None,
            data: dir.path().join("data"),
            bin: self.bin.clone(),
            owner: self.owner,
            settings: self
                .settings
                .iter()
                .cloned()
                .chain(settings.iter().map(|s| (*s).to_owned()))
                .collect(),
            dir,
        };
        let status = standby
            .command("pg_basebackup")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "postgres", "-R", "-X", "stream", "--no-sync", "-D"])
            .arg(&standby.data)
            .stdout(Stdio::null())
            .status()
            .expect("run pg_basebackup");
        assert!(status.success(), "pg_basebackup failed");
        standby.run();
        standby
    }

    /// Makes every standby synchronous (`synchronous_standby_names = '*'`, with
    /// `synchronous_commit = on`: a commit is confirmed once a standby has it on disk) and waits
    /// until one streams as such.
    pub fn wait_for_synchronous_standby(&self) {
        self.set("synchronous_standby_names", "*");
        let admin = self.connect();
        let synchronous = || {
            admin
                .count("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
                .expect("read pg_stat_replication")
                > 0
        };
        let limit = Duration::from_secs(30);
        wait_until(limit, "no standby became synchronous", synchronous);
    }

    /// Promotes this standby (`pg_ctl promote`, waiting until it takes writes).
    pub fn promote(&self) {
        let status = self
            .command("pg_ctl")
            .args(["promote", "-w", "-t", "30", "-D"])
            .arg(&self.data)
            .stdout(Stdio::null())
            .status()
            .expect("run pg_ctl promote");
        assert!(status.success(), "pg_ctl promote failed");
    }

    /// A command running one of the server's programs, as the server's owner.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.owner {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        command.stdin(Stdio::null());
        command
    }

    /// Starts `postgres` on the data folder and waits until it accepts connections.
    fn run(&mut self) {
        let mut command = self.command("postgres");
        command
            .arg("-D")
            .arg(&self.data)
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=127.0.0.1,127.0.0.2"]);
        for setting in &self.settings {
            command.args(["-c", setting]);
        }
        self.child = Some(spawn_quiet(&mut command, "postgres"));
        let url = self.url("127.0.0.1", "sslmode=disable");
        let what = "the private PostgreSQL server did not start";
        wait_until(Duration::from_secs(30), what, || {
            RawPostgres::connect(&url).is_ok()
        });
    }

    /// The URL of the `postgres` database as `postgres` on `host` (127.0.0.1, 127.0.0.2 or
    /// localhost), with the query `params` (`a=b&c=d`, or empty).
    pub fn url(&self, host: &str, params: &str) -> String {
        let query = if params.is_empty() { "" } else { "?" };
        format!(
            "postgres://postgres@{host}:{}/postgres{query}{params}",
            self.port
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A raw connection to its `postgres` database.
    pub fn connect(&self) -> RawPostgres {
        RawPostgres::connect(&self.url("127.0.0.1", "")).expect("connect to the private server")
    }

    /// Changes a setting of the whole server (`ALTER SYSTEM`) and has the server reload its
    /// configuration: a setting that takes a reload applies to every session from its next
    /// statement. Returns once it does: `pg_reload_conf()` only signals the postmaster, which
    /// reads the file and signals every session in its own time. A new session showing the new
    /// value means the postmaster has done both (it signals the sessions before it accepts
    /// another), so no statement sent after this returns runs under the old value.
    pub fn set(&self, name: &str, value: &str) {
        let admin = self.connect();
        admin
            .execute(&format!("ALTER SYSTEM SET {name} = '{value}'"))
            .expect("ALTER SYSTEM");
        admin
            .execute("SELECT pg_reload_conf()")
            .expect("reload the configuration");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let shown = self
                .connect()
                .query(&format!("SHOW {name}"))
                .expect("SHOW the setting");
            if shown.first().and_then(|row| row[0].as_deref()) == Some(value) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{name} is still {shown:?} 30 s after the reload"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server as `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster): every
    /// session ends at once, nothing more is written, and the next start recovers from the WAL.
    pub fn stop_immediately(&mut self) {
        self.signal(rustix::process::Signal::QUIT);
    }

    /// Starts the server again on the same data folder and port (after a stop).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is running");
        self.run();
    }

    fn signal(&mut self, signal: rustix::process::Signal) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child, signal);
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown.
        self.signal(rustix::process::Signal::INT);
    }
}

/// The folder of the newest installed PostgreSQL's server programs (`initdb`, `postgres`, ...).
pub fn server_programs() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("postgres").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

/// Waits until `ready` holds, asking every 50 ms; after `limit`, fails the test: `what`.
pub(super) fn wait_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts the server `command` runs, with no input and its output discarded (the test talks to
/// it on its port); `what` names it if it cannot start.
pub(super) fn spawn_quiet(command: &mut Command, what: &str) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("start {what}: {error}"))
}

/// Sends `signal` to a server's process and waits for it to end.
pub(super) fn stop(child: &mut Child, signal: rustix::process::Signal) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_child(child), signal);
    let _ = child.wait();
}

/// The uid and gid of the system user `name` (a server's), from `/etc/passwd`.
pub fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

pub(super) fn chown(path: &Path, (uid, gid): (u32, u32)) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|error| panic!("chown {}: {error}", path.display()));
}

pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}
