//! Shared helpers of the black-box tests: run the real `petstore` binary and talk HTTP to it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

// Shared with petstore-http's in-process tests.
#[path = "../../../petstore-http/tests/common/redis_support.rs"]
pub mod redis_support;

pub const BIN: &str = env!("CARGO_BIN_EXE_petstore");

pub fn petstore(db: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PETSTORE_DATABASE_URL", db)
        .env("RUST_LOG", "warn");
    command
}

/// Runs a `petstore` command to completion; returns stdout, panicking on failure.
pub fn run(db: &str, args: &[&str]) -> String {
    let output = petstore(db).args(args).output().expect("run petstore");
    assert!(
        output.status.success(),
        "petstore {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// A key of the enterprise plan with limits no test reaches, created with the CLI.
pub fn unlimited_key(db: &str) -> String {
    enterprise_key(db, 10_000_000, 1_000_000_000)
}

/// A key of the enterprise plan with these limits, created with the CLI, as an operator does on
/// a new database: `migrate` first (`keys` never migrates).
pub fn enterprise_key(db: &str, per_minute: u32, per_day: u32) -> String {
    run(db, &["migrate"]);
    run(
        db,
        &[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            &per_minute.to_string(),
            "--per-day",
            &per_day.to_string(),
        ],
    )
    .trim()
    .to_owned()
}

/// A migrated SQLite database in a temporary folder (removed when the folder is dropped).
pub fn temp_db() -> (tempfile::TempDir, String) {
    let (dir, path) = temp_db_path();
    run(&path, &["migrate"]);
    (dir, path)
}

/// A path for a SQLite database in a temporary folder, with nothing there yet.
pub fn temp_db_path() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("petstore.db").display().to_string();
    (dir, path)
}

/// The `petstore` binary serving on a free port, for one test: started with options, ready
/// when it has said where it listens, killed when dropped. What it logged (stderr) goes to a
/// file, shown with the test's output when the test fails.
pub struct TestServer {
    child: Child,
    pub base: String,
    pub stdout: Vec<String>,
    log: std::path::PathBuf,
    /// The log file when the test named none.
    _own_log: Option<tempfile::NamedTempFile>,
}

impl TestServer {
    pub fn start(db: &str, extra: &[&str]) -> Self {
        Self::start_logging(db, extra, None)
    }

    /// Starts the server with `RUST_LOG=info` and its stderr in `log` when one is given.
    pub fn start_logging(db: &str, extra: &[&str], log: Option<&std::path::Path>) -> Self {
        Self::start_command(petstore(db), extra, log)
    }

    /// Starts the server through `command` (`petstore(db)`, or a wrapper that runs it).
    pub fn start_command(
        mut command: Command,
        extra: &[&str],
        log: Option<&std::path::Path>,
    ) -> Self {
        let own_log = log
            .is_none()
            .then(|| tempfile::NamedTempFile::new().expect("log file"));
        let log = match (log, &own_log) {
            (Some(path), _) => {
                command.env("RUST_LOG", "info");
                path.to_owned()
            }
            (None, Some(file)) => file.path().to_owned(),
            (None, None) => unreachable!("a log file of its own when none is given"),
        };
        let stderr = Stdio::from(std::fs::File::create(&log).expect("log file"));
        command.args(["serve", "--bind", "127.0.0.1:0", "--key-cache-ttl", "1s"]);
        // Tests stop servers often: no drain delay unless the test asks for one.
        if !extra.contains(&"--shutdown-delay") {
            command.args(["--shutdown-delay", "0s"]);
        }
        let mut child = command
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start petstore");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut stdout = Vec::new();
        let base = loop {
            let Some(line) = lines.next() else {
                let logged = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("petstore exited before listening; it logged:\n{logged}");
            };
            let line = line.expect("read stdout");
            if let Some(addr) = line.strip_prefix("listening on ") {
                break format!("{addr}/v1");
            }
            stdout.push(line);
        };
        Self {
            child,
            base,
            stdout,
            log,
            _own_log: own_log,
        }
    }

    /// `GET {base}{path}` with `key`: the status and the JSON body.
    pub fn get(&self, path: &str, key: &str) -> (u16, Value) {
        get(&self.base, path, key)
    }

    /// `GET {base}/pets{query}` (`query` empty or starting with `?`).
    pub fn list_pets(&self, query: &str, key: &str) -> (u16, Value) {
        self.get(&format!("/pets{query}"), key)
    }

    /// `GET {base}/pets/{id}`.
    pub fn get_pet(&self, id: impl std::fmt::Display, key: &str) -> (u16, Value) {
        self.get(&format!("/pets/{id}"), key)
    }

    /// `POST {base}/pets` with the JSON `body`.
    pub fn post_pet(&self, key: &str, body: &str) -> (u16, Value) {
        post(&self.base, key, body)
    }

    /// `GET {base}/rate_limit`.
    pub fn rate_limit(&self, key: &str) -> (u16, Value) {
        self.get("/rate_limit", key)
    }

    /// `GET {base}/store/orders/{id}`.
    pub fn get_order(&self, id: impl std::fmt::Display, key: &str) -> (u16, Value) {
        self.get(&format!("/store/orders/{id}"), key)
    }

    /// `GET {base}/store/inventory`.
    pub fn inventory(&self, key: &str) -> (u16, Value) {
        self.get("/store/inventory", key)
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `host:port` of the listener, for raw TCP.
    pub fn addr(&self) -> String {
        self.base
            .trim_start_matches("http://")
            .trim_end_matches("/v1")
            .to_owned()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and returns at once.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// SIGTERM, then wait: the server must stop by itself, successfully.
    pub fn stop(mut self) {
        self.terminate();
        self.wait_for_exit();
    }

    /// Waits for the server to exit by itself, successfully.
    pub fn wait_for_exit(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "petstore exited with {status}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "petstore did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl TestServer {
    /// SIGKILL: no chance to flush or shut down cleanly.
    pub fn crash(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("wait");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- what petstore at {} logged ---\n{}",
                self.base,
                self.log()
            );
        }
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

pub fn get(base: &str, path: &str, key: &str) -> (u16, Value) {
    let mut response = agent()
        .get(format!("{base}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .call()
        .expect("GET");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    let body = serde_json::from_str(&text).expect("JSON body");
    (status, body)
}

pub fn post(base: &str, key: &str, body: &str) -> (u16, Value) {
    let mut response = agent()
        .post(format!("{base}/pets"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(body)
        .expect("POST");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    let body = serde_json::from_str(&text).expect("JSON body");
    (status, body)
}

/// Sleeps until at least `margin` seconds remain in the current UTC minute, so that a burst of
/// requests counted per minute falls in one window.
pub fn wait_for_room_in_minute(margin: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    let into = now.as_secs() % 60;
    if 60 - into < margin {
        let to_next =
            Duration::from_secs(60 - into) - Duration::from_nanos(u64::from(now.subsec_nanos()));
        std::thread::sleep(to_next + Duration::from_millis(200));
    }
}
