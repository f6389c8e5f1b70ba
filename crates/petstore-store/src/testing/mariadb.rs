//! [`MariaDbServer`]: a MariaDB server of a test's own, for what the shared one cannot be made
//! to do (TLS with a certificate of the test's CA).

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::server::{chown, free_port, spawn_quiet, stop, system_user, wait_until};
use super::{in_ci, loud_skip, mysql_execute};

/// A MariaDB server of a test's own: `mariadb-install-db` into a temporary folder, then
/// `mariadbd` on a free loopback port with TLS from the given certificate and key, as the
/// `mysql` user (Debian's package creates it; MariaDB refuses root); `root` has no password.
/// Stopped when dropped.
pub struct MariaDbServer {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl MariaDbServer {
    /// A new server serving TLS with `certificate` and `key` (PEM). `None` (after a loud
    /// SKIPPED line) where MariaDB's server programs are not installed, except under CI.
    pub fn start_with_tls(certificate: &str, key: &str) -> Option<Self> {
        if !Path::new("/usr/sbin/mariadbd").is_file() {
            let what = "MariaDB's server programs are not installed; a test that starts its own server did not run";
            assert!(!in_ci(), "{what}");
            loud_skip(what);
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary folder");
        let owner = system_user("mysql").expect("the mysql user (Debian's package creates it)");
        let files = [("server.crt", certificate), ("server.key", key)];
        for (name, contents) in files {
            std::fs::write(dir.path().join(name), contents).expect("write");
        }
        for path in [
            dir.path().to_owned(),
            dir.path().join("server.crt"),
            dir.path().join("server.key"),
        ] {
            chown(&path, owner);
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let data = dir.path().join("data");
        let status = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg("--user=mysql")
            .arg(format!("--datadir={}", data.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run mariadb-install-db");
        assert!(status.success(), "mariadb-install-db failed");
        let port = free_port();
        let mut command = Command::new("/usr/sbin/mariadbd");
        command
            .arg("--no-defaults")
            .arg("--user=mysql")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.path().join("socket").display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!(
                "--ssl-cert={}",
                dir.path().join("server.crt").display()
            ))
            .arg(format!(
                "--ssl-key={}",
                dir.path().join("server.key").display()
            ));
        let child = spawn_quiet(&mut command, "mariadbd");
        let server = Self {
            port,
            child,
            _dir: dir,
        };
        let url = server.url("127.0.0.1", "");
        let what = "the private MariaDB server did not start";
        wait_until(Duration::from_secs(30), what, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok() && mysql_execute(&url, "DO 1").is_ok()
        });
        Some(server)
    }

    /// The URL of its `mysql` database as `root` on `host`, with the query `params`.
    pub fn url(&self, host: &str, params: &str) -> String {
        let query = if params.is_empty() { "" } else { "?" };
        format!("mysql://root@{host}:{}/mysql{query}{params}", self.port)
    }
}

impl Drop for MariaDbServer {
    fn drop(&mut self) {
        stop(&mut self.child, rustix::process::Signal::TERM);
    }
}
