//! A Redis key prefix of its own for one test, its keys deleted afterwards. Skipped loudly when
//! Redis is unreachable outside CI; a failure in CI. Also Redis servers of a test's own: one
//! speaking TLS ([`TlsRedis`]), a plain one ([`OwnRedis`]), and a cluster ([`RedisCluster`]).
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use petstore_store::testing::{Authority, in_ci};

pub struct TestRedis {
    pub url: String,
    pub prefix: String,
}

pub fn redis_url() -> String {
    std::env::var("PETSTORE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

impl TestRedis {
    pub fn new() -> Option<Self> {
        let url = redis_url();
        let reachable = redis::Client::open(url.as_str())
            .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(2)))
            .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
        if let Err(error) = reachable {
            if in_ci() {
                panic!("Redis unreachable at {url} in CI: {error}");
            }
            petstore_store::testing::loud_skip(&format!(
                "Redis unreachable at {url} ({error}); Redis tests did not run"
            ));
            return None;
        }
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let prefix = format!(
            "petstore-test-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        Some(Self { url, prefix })
    }

    /// How many keys the test's prefix holds now.
    pub fn keys(&self) -> Vec<String> {
        let client = redis::Client::open(self.url.as_str()).expect("client");
        let mut conn = client.get_connection().expect("connection");
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.prefix))
            .query(&mut conn)
            .expect("KEYS");
        keys
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys = self.keys();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}

/// A free loopback port (bound, then released for the server about to take it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// `count` distinct free ports whose cluster bus ports (the port plus 10,000) are free too:
/// every listener is held until all are found, so no port is handed out twice.
fn free_cluster_ports(count: usize) -> Vec<u16> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    while ports.len() < count {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        held.push(listener);
        let Some(bus) = port.checked_add(10_000) else {
            continue;
        };
        if let Ok(bus_listener) = std::net::TcpListener::bind(("127.0.0.1", bus)) {
            held.push(bus_listener);
            ports.push(port);
        }
    }
    ports
}

/// Whether Debian's `redis-server` and `redis-cli` are here; outside CI a loud skip when not.
fn redis_tools() -> bool {
    let found = ["redis-server", "redis-cli"].iter().all(|tool| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
    });
    if !found {
        if in_ci() {
            panic!("redis-server and redis-cli are needed in CI");
        }
        petstore_store::testing::loud_skip(
            "redis-server or redis-cli missing; Redis TLS and cluster tests did not run",
        );
    }
    found
}

/// Waits until something accepts connections on `port` (a server just started).
fn wait_for_port(port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `redis-server` of the test's own, killed when dropped.
struct RedisProcess(std::process::Child);

impl RedisProcess {
    fn start(dir: &std::path::Path, args: &[String]) -> Self {
        let child = std::process::Command::new("redis-server")
            .args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(dir)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start redis-server");
        Self(child)
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `redis-server` speaking only TLS on a free loopback port, with a certificate for
/// `localhost` (not `127.0.0.1`) signed by a CA of its own.
pub struct TlsRedis {
    pub port: u16,
    pub authority: Authority,
    pub dir: tempfile::TempDir,
    _server: RedisProcess,
}

impl TlsRedis {
    pub fn start() -> Option<Self> {
        if !redis_tools() {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let authority = Authority::new("petstore test Redis CA");
        let (cert, key) = authority.server_certificate(&["localhost"]);
        let path = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(path("ca.pem"), &authority.ca_pem).expect("write");
        std::fs::write(path("redis.pem"), cert).expect("write");
        std::fs::write(path("redis.key"), key).expect("write");
        let port = free_port();
        let server = RedisProcess::start(
            dir.path(),
            &[
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                port.to_string(),
                "--tls-cert-file".into(),
                path("redis.pem"),
                "--tls-key-file".into(),
                path("redis.key"),
                "--tls-ca-cert-file".into(),
                path("ca.pem"),
                "--tls-auth-clients".into(),
                "no".into(),
            ],
        );
        wait_for_port(port);
        Some(Self {
            port,
            authority,
            dir,
            _server: server,
        })
    }

    /// The CA file's path.
    pub fn ca_file(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }
}

/// A plain `redis-server` of the test's own, for what only a server nobody else uses shows
/// (how many commands it ran).
pub struct OwnRedis {
    pub port: u16,
    _dir: tempfile::TempDir,
    _server: RedisProcess,
}

impl OwnRedis {
    pub fn start() -> Option<Self> {
        if !redis_tools() {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let server = RedisProcess::start(dir.path(), &["--port".into(), port.to_string()]);
        wait_for_port(port);
        Some(Self {
            port,
            _dir: dir,
            _server: server,
        })
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// How many scripts the server has run (`EVALSHA` and `EVAL` calls).
    pub fn script_calls(&self) -> u64 {
        self.calls("evalsha") + self.calls("eval")
    }

    /// How many times the server has run `command` (as `INFO commandstats` names it:
    /// `evalsha`, `script|load`).
    pub fn calls(&self, command: &str) -> u64 {
        let info: String = self.query(redis::cmd("INFO").arg("commandstats"));
        let name = format!("cmdstat_{command}:");
        info.lines()
            .filter_map(|line| line.strip_prefix(&name))
            .filter_map(|stats| {
                let calls = stats.split("calls=").nth(1)?;
                calls.split(',').next()?.parse::<u64>().ok()
            })
            .sum()
    }

    /// The server's answer to `command`, on a connection of the test's own.
    pub fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> T {
        let client = redis::Client::open(self.url()).expect("client");
        let mut conn = client.get_connection().expect("connection");
        command.query(&mut conn).expect("query")
    }
}

/// A Redis Cluster of the test's own: three masters and three replicas on free loopback ports,
/// made with `redis-cli --cluster create`, every node killed when dropped.
pub struct RedisCluster {
    pub ports: Vec<u16>,
    nodes: Vec<Option<RedisProcess>>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    pub fn start() -> Option<Self> {
        if !redis_tools() {
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let ports = free_cluster_ports(6);
        let nodes = ports
            .iter()
            .map(|port| {
                let node_dir = dir.path().join(port.to_string());
                std::fs::create_dir(&node_dir).expect("node dir");
                Some(RedisProcess::start(
                    &node_dir,
                    &[
                        "--port".into(),
                        port.to_string(),
                        "--cluster-enabled".into(),
                        "yes".into(),
                        "--cluster-config-file".into(),
                        "nodes.conf".into(),
                        "--cluster-node-timeout".into(),
                        "1000".into(),
                    ],
                ))
            })
            .collect();
        for port in &ports {
            wait_for_port(*port);
        }
        let output = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(ports.iter().map(|port| format!("127.0.0.1:{port}")))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(output.status.success(), "cluster create: {output:?}");
        let cluster = Self {
            ports,
            nodes,
            _dir: dir,
        };
        cluster.wait_until_ok();
        Some(cluster)
    }

    /// `redis+cluster://` naming every node as a seed.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self
            .ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        format!("redis+cluster://{}", seeds.join(","))
    }

    fn cli(&self, port: u16, args: &[&str]) -> String {
        let output = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until every running node sees the cluster whole (`cluster_state:ok`) and every
    /// replica has its master's data (a replica that never synced cannot take over).
    pub fn wait_until_ok(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let ok = self
                .ports
                .iter()
                .zip(&self.nodes)
                .filter(|(_, node)| node.is_some())
                .all(|(port, _)| {
                    let replication = self.cli(*port, &["info", "replication"]);
                    self.cli(*port, &["cluster", "info"])
                        .contains("cluster_state:ok")
                        && (replication.contains("role:master")
                            || replication.contains("master_link_status:up"))
                });
            if ok {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the cluster did not become ok"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The port of the master that serves `key`'s slot.
    pub fn master_of(&self, key: &str) -> u16 {
        let slot = self.cli(self.alive_port(), &["cluster", "keyslot", key]);
        let slot: u16 = slot.trim().parse().expect("a slot");
        // `cluster nodes`: id addr flags master ping pong epoch state slots...
        let alive = self.alive_port();
        let nodes = self.cli(alive, &["cluster", "nodes"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let owns = fields[8..].iter().any(|range| match range.split_once('-') {
                Some((first, last)) => {
                    let (first, last): (u16, u16) =
                        (first.parse().unwrap_or(u16::MAX), last.parse().unwrap_or(0));
                    (first..=last).contains(&slot)
                }
                None => range.parse::<u16>() == Ok(slot),
            });
            if owns {
                let addr = fields[1].split('@').next().expect("addr");
                return addr
                    .rsplit_once(':')
                    .expect("host:port")
                    .1
                    .parse()
                    .expect("port");
            }
        }
        panic!("no master serves slot {slot}: {nodes}");
    }

    /// A node still running.
    fn alive_port(&self) -> u16 {
        self.ports
            .iter()
            .zip(&self.nodes)
            .find_map(|(port, node)| node.as_ref().map(|_| *port))
            .expect("a node runs")
    }

    /// Kills the node on `port` (SIGKILL: no goodbye to the cluster).
    pub fn kill(&mut self, port: u16) {
        let index = self.ports.iter().position(|p| *p == port).expect("a node");
        self.nodes[index] = None;
    }
}
