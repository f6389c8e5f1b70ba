//! [`Cluster`]: the deployment `deploy/patroni/` ships, started on one machine on free loopback
//! ports: etcd with three members, three PostgreSQL nodes managed by Patroni with the shipped
//! `patroni.yml` (each node's addresses and folder in its environment, as the file says), and
//! HAProxy with the shipped `haproxy.cfg`. As root, Patroni runs as the `postgres` user (Debian's
//! package creates it), as PostgreSQL requires. Everything is stopped when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use petstore_store::testing::{RawPostgres, in_ci, loud_skip, server_programs, system_user};
use serde_json::Value;

/// The shipped configuration.
fn shipped(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/patroni")
        .join(file)
}

/// One etcd member.
struct Member {
    /// Its client address, `host:port`.
    address: String,
    child: Option<Child>,
}

/// One Patroni node.
pub struct Node {
    /// Its name (`node1` ...).
    pub name: String,
    /// The loopback address it listens on, its own (`127.0.2.N`): while the node is down,
    /// another test's server may take its port on 127.0.0.1, and must not be taken for it.
    host: String,
    /// PostgreSQL's port.
    pub port: u16,
    /// Patroni's REST API's port.
    pub api: u16,
    data: PathBuf,
    log: PathBuf,
    patroni: Option<Child>,
}

/// The cluster: see the module's description.
pub struct Cluster {
    dir: tempfile::TempDir,
    etcd: Vec<Member>,
    /// The Patroni nodes.
    pub nodes: Vec<Node>,
    haproxy: Option<Child>,
    /// HAProxy's read-write port (the leader).
    pub rw: u16,
    /// HAProxy's read-only port (the synchronous standbys).
    pub ro: u16,
    bin: PathBuf,
    /// As root, the `postgres` user's uid and gid, which Patroni runs as.
    owner: Option<(u32, u32)>,
}

impl Cluster {
    /// Starts the cluster and waits until it is whole: a leader, two synchronous standbys, and
    /// HAProxy sending the read-write port to the leader. `None` (after a loud SKIPPED line)
    /// where Patroni, etcd, HAProxy or PostgreSQL's programs are missing, except under CI,
    /// where that fails (`scripts/test-tools.sh` installs them).
    pub fn start() -> Option<Self> {
        let programs = ["/usr/bin/patroni", "/usr/bin/etcd", "/usr/sbin/haproxy"];
        let bin = server_programs();
        if bin.is_none() || programs.iter().any(|p| !Path::new(p).is_file()) {
            let what = "Patroni, etcd, HAProxy or PostgreSQL's server programs are not installed \
                (scripts/test-tools.sh installs them); the Patroni test did not run";
            assert!(!in_ci(), "{what}");
            loud_skip(what);
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary folder");
        // Each member on a loopback address of its own too (`127.0.3.N`), for a lost one's ports.
        let etcd_host = |n: usize| format!("127.0.3.{}", n + 1);
        let peers: Vec<u16> = (0..3).map(|n| free_port_on(&etcd_host(n))).collect();
        let initial: Vec<String> = peers
            .iter()
            .enumerate()
            .map(|(n, peer)| format!("e{n}=http://{}:{peer}", etcd_host(n)))
            .collect();
        let mut cluster = Self {
            etcd: Vec::new(),
            nodes: Vec::new(),
            haproxy: None,
            rw: free_port(),
            ro: free_port(),
            bin: bin.expect("checked"),
            owner: postgres_user(),
            dir,
        };
        for (n, peer) in peers.iter().enumerate() {
            let host = etcd_host(n);
            let client = free_port_on(&host);
            let data = cluster.dir.path().join(format!("etcd{n}"));
            let log = std::fs::File::create(cluster.dir.path().join(format!("etcd{n}.log")))
                .expect("etcd's log");
            let child = Command::new("/usr/bin/etcd")
                .args(["--name", &format!("e{n}"), "--data-dir"])
                .arg(&data)
                .args(["--listen-client-urls", &format!("http://{host}:{client}")])
                .args([
                    "--advertise-client-urls",
                    &format!("http://{host}:{client}"),
                ])
                .args(["--listen-peer-urls", &format!("http://{host}:{peer}")])
                .args([
                    "--initial-advertise-peer-urls",
                    &format!("http://{host}:{peer}"),
                ])
                .args(["--initial-cluster", &initial.join(",")])
                .args(["--initial-cluster-state", "new"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start etcd");
            cluster.etcd.push(Member {
                address: format!("{host}:{client}"),
                child: Some(child),
            });
        }
        for n in 1..=3 {
            let host = format!("127.0.2.{n}");
            let node = Node {
                name: format!("node{n}"),
                port: free_port_on(&host),
                api: free_port_on(&host),
                host,
                data: cluster.dir.path().join(format!("node{n}")),
                log: cluster.dir.path().join(format!("node{n}.log")),
                patroni: None,
            };
            std::fs::create_dir_all(&node.data).expect("the node's folder");
            cluster.nodes.push(node);
        }
        if cluster.owner.is_some() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(cluster.dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster's folder to postgres");
        }
        for n in 0..3 {
            cluster.start_node(n);
        }
        cluster.start_haproxy();
        cluster.wait_until_whole(Duration::from_secs(60));
        Some(cluster)
    }

    /// The etcd members' client addresses, as Patroni takes them.
    fn etcd_hosts(&self) -> String {
        let hosts: Vec<String> = self
            .etcd
            .iter()
            .map(|member| member.address.clone())
            .collect();
        hosts.join(",")
    }

    /// Starts node `n`'s Patroni (which starts its PostgreSQL: a new cluster, a copy of the
    /// leader, or, for a node that was the leader, a standby of the new one after `pg_rewind`).
    pub fn start_node(&mut self, n: usize) {
        let etcd = self.etcd_hosts();
        let node = &self.nodes[n];
        let mut command = Command::new("/usr/bin/patroni");
        if let Some((uid, gid)) = self.owner {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid).env("HOME", &node.data);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .expect("Patroni's log");
        let child = command
            .arg(shipped("patroni.yml"))
            .env("PATRONI_NAME", &node.name)
            .env(
                "PATRONI_RESTAPI_LISTEN",
                format!("{}:{}", node.host, node.api),
            )
            .env(
                "PATRONI_RESTAPI_CONNECT_ADDRESS",
                format!("{}:{}", node.host, node.api),
            )
            .env(
                "PATRONI_POSTGRESQL_LISTEN",
                format!("{}:{}", node.host, node.port),
            )
            .env(
                "PATRONI_POSTGRESQL_CONNECT_ADDRESS",
                format!("{}:{}", node.host, node.port),
            )
            .env("PATRONI_POSTGRESQL_DATA_DIR", node.data.join("data"))
            .env("PATRONI_POSTGRESQL_PGPASS", node.data.join("pgpass"))
            .env("PATRONI_POSTGRESQL_BIN_DIR", &self.bin)
            .env("PATRONI_ETCD3_HOSTS", etcd)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start patroni");
        self.nodes[n].patroni = Some(child);
    }

    fn start_haproxy(&mut self) {
        let mut command = Command::new("/usr/sbin/haproxy");
        command.arg("-f").arg(shipped("haproxy.cfg"));
        for (n, node) in self.nodes.iter().enumerate() {
            let n = n + 1;
            command.env(
                format!("PATRONI_NODE{n}"),
                format!("{}:{}", node.host, node.port),
            );
            command.env(format!("PATRONI_NODE{n}_API"), node.api.to_string());
        }
        let log = std::fs::File::create(self.dir.path().join("haproxy.log")).expect("log");
        let child = command
            .env("PETSTORE_HAPROXY_RW", format!("127.0.0.1:{}", self.rw))
            .env("PETSTORE_HAPROXY_RO", format!("127.0.0.1:{}", self.ro))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start haproxy");
        self.haproxy = Some(child);
    }

    /// The members as Patroni's REST API lists them (`GET /cluster` on any node that answers):
    /// name and role (`leader`, `sync_standby`, `replica`) of each running one.
    pub fn members(&self) -> Vec<(String, String)> {
        for node in &self.nodes {
            let Ok(mut response) = agent()
                .get(format!("http://{}:{}/cluster", node.host, node.api))
                .call()
            else {
                continue;
            };
            let Ok(text) = response.body_mut().read_to_string() else {
                continue;
            };
            let Ok(cluster) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            return cluster["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|member| member["state"] == "running")
                .map(|member| {
                    let field = |name: &str| member[name].as_str().unwrap_or("").to_owned();
                    (field("name"), field("role"))
                })
                .collect();
        }
        Vec::new()
    }

    /// The leader's index, if there is one.
    pub fn leader(&self) -> Option<usize> {
        let members = self.members();
        let (name, _) = members.iter().find(|(_, role)| role == "leader")?;
        self.nodes.iter().position(|node| &node.name == name)
    }

    /// Waits up to `within` until the cluster is whole again: three running members, one
    /// leader and two synchronous standbys, and HAProxy's read-write port on the leader.
    pub fn wait_until_whole(&self, within: Duration) {
        let started = Instant::now();
        loop {
            let members = self.members();
            let whole = members.len() == 3
                && members.iter().filter(|(_, role)| role == "leader").count() == 1
                && members.iter().filter(|(_, r)| r == "sync_standby").count() == 2;
            if whole && self.rw_on_leader() {
                return;
            }
            assert!(
                started.elapsed() < within,
                "the Patroni cluster was not whole within {within:?}: {members:?}\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// Whether a session on HAProxy's read-write port lands on a server that takes writes.
    fn rw_on_leader(&self) -> bool {
        RawPostgres::connect(&self.rw_url())
            .and_then(|db| db.query("SELECT pg_is_in_recovery()::text"))
            .is_ok_and(|rows| rows.first().and_then(|row| row[0].as_deref()) == Some("false"))
    }

    /// The URL of the `postgres` database through HAProxy's read-write port.
    pub fn rw_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.rw)
    }

    /// The same through its read-only port.
    pub fn ro_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.ro)
    }

    /// A URL naming every node, for the server that takes writes.
    pub fn multi_host_url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("{}:{}", node.host, node.port))
            .collect();
        format!(
            "postgres://postgres@{}/postgres?target_session_attrs=read-write",
            hosts.join(",")
        )
    }

    /// Node `n`'s own `postgres` database.
    pub fn node_url(&self, n: usize) -> String {
        let node = &self.nodes[n];
        format!("postgres://postgres@{}:{}/postgres", node.host, node.port)
    }

    /// Kills node `n`'s postmaster (`kill -9`); Patroni, still running, notices.
    pub fn kill_postmaster(&self, n: usize) {
        let pid_file = self.nodes[n].data.join("data/postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).expect("postmaster.pid");
        let pid: i32 = text
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .expect("the postmaster's pid");
        let status = Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -9 {pid}");
    }

    /// Stops node `n` as a machine dies: its Patroni and its postmaster killed (`kill -9`).
    pub fn kill_node(&mut self, n: usize) {
        if let Some(mut patroni) = self.nodes[n].patroni.take() {
            let _ = patroni.kill();
            let _ = patroni.wait();
        }
        self.kill_postmaster(n);
    }

    /// A planned switchover to node `to` (`patronictl switchover`), returned once it is done.
    pub fn switchover(&self, from: usize, to: usize) {
        let output = Command::new("patronictl")
            .arg("-c")
            .arg(shipped("patroni.yml"))
            .env("PATRONI_ETCD3_HOSTS", self.etcd_hosts())
            .args(["switchover", "--force"])
            .args(["--leader", &self.nodes[from].name])
            .args(["--candidate", &self.nodes[to].name])
            .output()
            .expect("run patronictl");
        assert!(
            output.status.success(),
            "patronictl switchover: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Stops etcd member `n` (`kill -9`): the other two keep a quorum.
    pub fn kill_etcd(&mut self, n: usize) {
        if let Some(mut child) = self.etcd[n].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The end of every node's log (Patroni's own lines, but for its routine "no action"), for
    /// a failure's message.
    pub fn logs(&self) -> String {
        let mut logs = String::new();
        for node in &self.nodes {
            let text = std::fs::read_to_string(&node.log).unwrap_or_default();
            let lines: Vec<&str> = text
                .lines()
                .filter(|line| line.starts_with("20") && !line.contains("no action"))
                .collect();
            logs.push_str(&format!("--- {}:\n", node.name));
            for line in &lines[lines.len().saturating_sub(30)..] {
                logs.push_str(line);
                logs.push('\n');
            }
        }
        logs
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut haproxy) = self.haproxy.take() {
            let _ = haproxy.kill();
            let _ = haproxy.wait();
        }
        for n in 0..self.nodes.len() {
            if let Some(mut patroni) = self.nodes[n].patroni.take() {
                let _ = patroni.kill();
                let _ = patroni.wait();
            }
            // Its PostgreSQL, at once (SIGQUIT: immediate shutdown).
            let pid_file = self.nodes[n].data.join("data/postmaster.pid");
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|text| text.lines().next().map(|line| line.trim().to_owned()))
            {
                let _ = Command::new("kill").args(["-QUIT", &pid]).status();
            }
        }
        for member in &mut self.etcd {
            if let Some(mut child) = member.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Give the postmasters a moment to go before their folders do.
        thread::sleep(Duration::from_millis(300));
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// As root, the `postgres` user's uid and gid, which Patroni runs as.
fn postgres_user() -> Option<(u32, u32)> {
    is_root()
        .then(|| system_user("postgres").expect("the postgres user (Debian's package creates it)"))
}

fn free_port() -> u16 {
    free_port_on("127.0.0.1")
}

/// A port free on `host` (a loopback address).
fn free_port_on(host: &str) -> u16 {
    TcpListener::bind((host, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}
