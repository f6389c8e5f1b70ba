//! Where the counters are ([`RedisTarget`]) and the connection to them: one server's, replaced
//! when it stops answering, or a cluster's, following its topology.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::CounterError;

/// Where the counters are: `redis://` or `rediss://` (one server), `redis+cluster://` or
/// `rediss+cluster://` (seed nodes of a cluster, comma-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// One server, by its URL.
    Single(String),
    /// A cluster, by the URLs of some of its nodes (`redis://` or `rediss://` each).
    Cluster(Vec<String>),
}

impl RedisTarget {
    /// Parses `--rate-limit-store`'s value (anything but `memory`).
    pub fn parse(url: &str) -> Result<Self, CounterError> {
        // The URL is not repeated: it may hold a password.
        let bad = |why: &str| CounterError::new(format!("the rate-limit store's URL: {why}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            bad("expected memory, redis://, rediss://, redis+cluster:// or rediss+cluster://")
        })?;
        if url.contains("#insecure") {
            return Err(bad("certificate verification cannot be turned off"));
        }
        let node_scheme = match scheme {
            "redis" | "rediss" => return Ok(Self::Single(url.to_owned())),
            "redis+cluster" => "redis",
            "rediss+cluster" => "rediss",
            _ => {
                return Err(bad(
                    "expected memory, redis://, rediss://, redis+cluster:// or rediss+cluster://",
                ));
            }
        };
        let (credentials, hosts) = match rest.rsplit_once('@') {
            Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
            None => (String::new(), rest),
        };
        let hosts = hosts.trim_end_matches('/');
        if hosts.contains('/') || hosts.contains('?') {
            return Err(bad(
                "a cluster has no database number or options: seed nodes only",
            ));
        }
        let nodes: Vec<String> = hosts
            .split(',')
            .map(str::trim)
            .filter(|host| !host.is_empty())
            .map(|host| format!("{node_scheme}://{credentials}{host}"))
            .collect();
        if nodes.is_empty() {
            return Err(bad(
                "name at least one seed node, as HOST:PORT[,HOST:PORT...]",
            ));
        }
        Ok(Self::Cluster(nodes))
    }

    pub(super) fn uses_tls(&self) -> bool {
        match self {
            Self::Single(url) => url.starts_with("rediss://"),
            Self::Cluster(nodes) => nodes.iter().all(|node| node.starts_with("rediss://")),
        }
    }
}

/// The connection: to one server ([`Single`]), or to a cluster (following its topology: slots
/// that move, a replica promoted in a failover).
#[allow(clippy::large_enum_variant)] // one per process: its size does not matter
pub(super) enum Connection {
    Single(Single),
    Cluster(ClusterConnection),
}

impl Connection {
    /// What a call goes through.
    pub(super) fn link(&self) -> Link {
        match self {
            Self::Single(single) => single.link(),
            Self::Cluster(connection) => Link::Cluster(connection.clone()),
        }
    }

    /// After a call through `link`: whether it was answered (the cluster client recovers by
    /// itself).
    pub(super) fn after(&self, link: &Link, answered: bool) {
        if let (Self::Single(single), Link::Single(_, generation)) = (self, link) {
            single.after(*generation, answered);
        }
    }
}

/// How long one server's connection may go unanswered, failing calls, before it is replaced.
pub(super) const REPLACE_AFTER: Duration = Duration::from_secs(1);

/// One server's connection manager, replaced once its calls have failed for [`REPLACE_AFTER`]
/// with none answered. The manager reconnects by itself only when its connection drops: it
/// keeps any other failure to connect for good (an `AUTH` refused before the user was set up),
/// and a connection that no longer answers (a half-open socket; the server moved behind its
/// name) or that a demoted master answers `READONLY` on. A call that merely timed out on a
/// connection that answers others leaves it be.
pub(super) struct Single {
    pub(super) client: redis::Client,
    pub(super) config: ConnectionManagerConfig,
    pub(super) state: Mutex<Managed>,
}

pub(super) struct Managed {
    pub(super) manager: ConnectionManager,
    /// Which manager this is: a late answer on a replaced one is not this one's.
    pub(super) generation: u64,
    /// When a call on it was last answered, or when it was made.
    pub(super) answered: Instant,
}

impl Single {
    pub(super) fn new(
        client: redis::Client,
        config: ConnectionManagerConfig,
    ) -> Result<Self, CounterError> {
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), config.clone())
            .map_err(CounterError::new)?;
        Ok(Self {
            client,
            config,
            state: Mutex::new(Managed {
                manager,
                generation: 0,
                answered: Instant::now(),
            }),
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Managed> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn link(&self) -> Link {
        let state = self.lock();
        Link::Single(state.manager.clone(), state.generation)
    }

    pub(super) fn after(&self, generation: u64, answered: bool) {
        let mut state = self.lock();
        if generation != state.generation {
            return;
        }
        let now = Instant::now();
        if answered {
            state.answered = now;
            return;
        }
        if now.duration_since(state.answered) < REPLACE_AFTER {
            return;
        }
        match ConnectionManager::new_lazy_with_config(self.client.clone(), self.config.clone()) {
            Ok(manager) => {
                state.manager = manager;
                state.generation += 1;
                state.answered = now;
            }
            Err(error) => log::warn!("could not replace the Redis connection: {error}"),
        }
    }
}

/// A connection for one call.
#[derive(Clone)]
pub(super) enum Link {
    /// With its manager's generation ([`Single`]).
    Single(ConnectionManager, u64),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection, _) => connection.req_packed_command(cmd),
            Self::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(connection, _) => connection.req_packed_commands(cmd, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection, _) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
        }
    }
}

/// How long the start-up check waits for Redis: long enough for a TLS handshake to fail with
/// its own reason rather than a request's short timeout.
pub(super) const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// How long opening the connection to one server may take (TCP, then a TLS handshake), at least
/// (the request timeout when that is longer): longer than one request waits, so that a handshake
/// slowed by load completes for the requests after it rather than being cut off and begun again;
/// each request still gives up after its own timeout. Short all the same: while an attempt hangs (a
/// host that drops packets), a Redis that is back goes unnoticed. A cluster's node connections keep
/// the request timeout: the cluster client sends nothing, to any node, while it connects to nodes
/// after a topology change.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A client that opens a connection of its own, for the start-up check.
#[allow(clippy::large_enum_variant)] // one per process: its size does not matter
pub(super) enum Probe {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}
