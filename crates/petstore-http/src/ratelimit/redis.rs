//! Redis counters: every instance shares them. One round trip per request (a Lua script that
//! checks the ban, both windows, and counts atomically); every key expires by itself.
//!
//! The counters live on one Redis server (`redis://`, or `rediss://` over TLS) or in a Redis
//! Cluster (`redis+cluster://` or `rediss+cluster://` and seed nodes). Every key of one subject
//! carries the subject as a hash tag, so that they share a cluster slot and each script, which
//! touches several of them, runs on one node, atomically.

use std::time::Duration;

use futures_util::future::{FutureExt, LocalBoxFuture};
use petstore_domain::{Ban, Counts, RateLimits, Window};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, TlsCertificates, Value};

use super::{CounterError, CounterStore, Hit, Subject};

/// The scripts' common start: a ban in force answers `{2, ..., ban_until, ban_level}` at once;
/// otherwise `ban_until` and `ban_level` hold the last ban, if any (for escalation).
macro_rules! ban_check {
    () => {
        r"
local ban_until, ban_level = 0, 0
local ban = redis.call('GET', KEYS[4])
if ban then
  local sep = string.find(ban, ':', 1, true)
  ban_until = tonumber(string.sub(ban, 1, sep - 1))
  ban_level = tonumber(string.sub(ban, sep + 1))
  if ban_until > tonumber(ARGV[3]) then
    return {2, 0, 0, 0, ban_until, ban_level}
  end
end
"
    };
}

/// KEYS: minute count, day count, minute refusals, ban. ARGV: per-minute, per-day, now,
/// minute-key TTL, day-key TTL. Returns {state, minute, day, refused, ban_until, ban_level}
/// with state 1 counted, 0 refused, 2 banned.
const HIT: &str = concat!(
    ban_check!(),
    r"local minute = tonumber(redis.call('GET', KEYS[1]) or '0')
local day = tonumber(redis.call('GET', KEYS[2]) or '0')
if minute < tonumber(ARGV[1]) and day < tonumber(ARGV[2]) then
  minute = redis.call('INCR', KEYS[1])
  if minute == 1 then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
  day = redis.call('INCR', KEYS[2])
  if day == 1 then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
  return {1, minute, day, 0, ban_until, ban_level}
end
local refused = redis.call('INCR', KEYS[3])
if refused == 1 then redis.call('EXPIRE', KEYS[3], ARGV[4]) end
return {0, minute, day, refused, ban_until, ban_level}
"
);

/// [`HIT`] without counting: the same reply, state 1 when both windows have room.
const PEEK: &str = concat!(
    ban_check!(),
    r"local minute = tonumber(redis.call('GET', KEYS[1]) or '0')
local day = tonumber(redis.call('GET', KEYS[2]) or '0')
local refused = tonumber(redis.call('GET', KEYS[3]) or '0')
local room = 0
if minute < tonumber(ARGV[1]) and day < tonumber(ARGV[2]) then room = 1 end
return {room, minute, day, refused, ban_until, ban_level}
"
);

/// A ban starts. KEYS: minute refusals, ban. ARGV: the ban (`until:level`, or empty for none
/// to record), its lifetime in seconds. One script rather than a MULTI block, which a cluster
/// client does not route.
const START_BAN: &str = r"redis.call('DEL', KEYS[1])
if ARGV[1] ~= '' then redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2]) end
return 1
";

/// Slack added to key lifetimes, so instances whose clocks differ a little still agree.
const MINUTE_SLACK: u64 = 60;
const DAY_SLACK: u64 = 3_600;

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
        let bad = |why: &str| CounterError::new(format!("--rate-limit-store {url:?}: {why}"));
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

    fn uses_tls(&self) -> bool {
        match self {
            Self::Single(url) => url.starts_with("rediss://"),
            Self::Cluster(nodes) => nodes.iter().all(|node| node.starts_with("rediss://")),
        }
    }
}

/// The connection: to one server (reconnecting by itself), or to a cluster (following its
/// topology: slots that move, a replica promoted in a failover).
#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(connection) => connection.req_packed_command(cmd),
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
            Self::Single(connection) => connection.req_packed_commands(cmd, offset, count),
            Self::Cluster(connection) => connection.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(connection) => connection.get_db(),
            Self::Cluster(connection) => connection.get_db(),
        }
    }
}

/// How long the start-up check waits for Redis: long enough for a TLS handshake to fail with
/// its own reason rather than a request's short timeout.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// A client that opens a connection of its own, for the start-up check.
#[allow(clippy::large_enum_variant)] // one per process: its size does not matter
enum Probe {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// Counters in Redis, shared by every instance using the same target and prefix.
pub struct RedisCounters {
    connection: Link,
    probe: Probe,
    script: redis::Script,
    peek: redis::Script,
    start_ban: redis::Script,
    prefix: String,
    timeout: Duration,
    remember_bans_for: u64,
}

impl RedisCounters {
    /// Counters at `url` (one server or a cluster: [`RedisTarget`]) under `prefix`, trusting the
    /// system's certificate authorities for TLS.
    pub fn new(
        url: &str,
        prefix: &str,
        timeout: Duration,
        remember_bans_for: u64,
    ) -> Result<Self, CounterError> {
        Self::with_ca(url, None, prefix, timeout, remember_bans_for)
    }

    /// Counters at `url` under `prefix`; over TLS, the server's certificate must be signed by
    /// `ca_pem` (PEM) when given, else by an authority the system trusts, and name the host.
    /// Connects lazily (a Redis that is down at start-up does not stop the service) and
    /// reconnects by itself; every call gives up after `timeout`. Must be called inside the
    /// async runtime.
    pub fn with_ca(
        url: &str,
        ca_pem: Option<Vec<u8>>,
        prefix: &str,
        timeout: Duration,
        remember_bans_for: u64,
    ) -> Result<Self, CounterError> {
        let target = RedisTarget::parse(url)?;
        if ca_pem.is_some() && !target.uses_tls() {
            return Err(CounterError::new(
                "--rate-limit-ca-file is for TLS: use a rediss:// or rediss+cluster:// URL",
            ));
        }
        let certificates = ca_pem.map(|pem| TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        });
        let (connection, probe) = match target {
            RedisTarget::Single(url) => {
                let client = match certificates {
                    Some(certificates) => redis::Client::build_with_tls(url, certificates),
                    None => redis::Client::open(url),
                }
                .map_err(CounterError::new)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(timeout);
                (
                    Link::Single(
                        ConnectionManager::new_lazy_with_config(client.clone(), config)
                            .map_err(CounterError::new)?,
                    ),
                    Probe::Single(client),
                )
            }
            RedisTarget::Cluster(nodes) => {
                let mut builder = ClusterClientBuilder::new(nodes)
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    .retries(1);
                if let Some(certificates) = certificates {
                    builder = builder.certs(certificates);
                }
                let client = builder.build().map_err(CounterError::new)?;
                let config = ClusterConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout);
                (
                    Link::Cluster(client.get_pending_async_connection_with_config(config)),
                    Probe::Cluster(client),
                )
            }
        };
        Ok(Self {
            connection,
            probe,
            script: redis::Script::new(HIT),
            peek: redis::Script::new(PEEK),
            start_ban: redis::Script::new(START_BAN),
            prefix: prefix.to_owned(),
            timeout,
            remember_bans_for,
        })
    }

    /// One `PING` on a connection of its own, within [`PING_TIMEOUT`]: whether Redis answers
    /// now, and if not, why (a refused certificate says so).
    async fn ping_inner(&self) -> Result<(), CounterError> {
        let ping = async {
            let pong: String = match &self.probe {
                Probe::Single(client) => {
                    let config = redis::AsyncConnectionConfig::new()
                        .set_connection_timeout(Some(PING_TIMEOUT))
                        .set_response_timeout(Some(PING_TIMEOUT));
                    let mut connection = client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?;
                    redis::cmd("PING").query_async(&mut connection).await?
                }
                Probe::Cluster(client) => {
                    let mut connection = client.get_async_connection().await?;
                    redis::cmd("PING").query_async(&mut connection).await?
                }
            };
            Ok(pong)
        };
        bounded::<String>(PING_TIMEOUT, ping).await.map(drop)
    }

    /// `{prefix}:{subject}:{suffix}`; the braces keep one subject's keys in one cluster slot.
    fn key(&self, subject: Subject, suffix: &str) -> String {
        format!("{}:{{{subject}}}:{suffix}", self.prefix)
    }

    /// Runs `script` (`HIT` or `PEEK`) for `subject`.
    async fn run(
        &self,
        script: &redis::Script,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> Result<Hit, CounterError> {
        let minute = Window::Minute.index(now);
        let day = Window::Day.index(now);
        let mut invocation = script.prepare_invoke();
        invocation
            .key(self.key(subject, &format!("m:{minute}")))
            .key(self.key(subject, &format!("d:{day}")))
            .key(self.key(subject, &format!("r:{minute}")))
            .key(self.key(subject, "ban"))
            .arg(limits.per_minute)
            .arg(limits.per_day)
            .arg(now)
            .arg(Window::Minute.reset_at(now) - now + MINUTE_SLACK)
            .arg(Window::Day.reset_at(now) - now + DAY_SLACK);
        let mut connection = self.connection.clone();
        let reply: Vec<u64> =
            bounded(self.timeout, invocation.invoke_async(&mut connection)).await?;
        let [state, minute_used, day_used, rejected, ban_until, ban_level] = reply[..] else {
            return Err(CounterError::new(format!(
                "unexpected script reply {reply:?}"
            )));
        };
        let ban = (ban_until > 0).then(|| Ban {
            until: ban_until,
            level: u32::try_from(ban_level).unwrap_or(u32::MAX),
        });
        let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(match (state, ban) {
            (2, Some(ban)) => Hit::Banned(ban),
            _ => Hit::Counted {
                counts: Counts {
                    allowed: state == 1,
                    minute_used: narrow(minute_used),
                    day_used: narrow(day_used),
                    rejected: narrow(rejected),
                },
                previous_ban: ban,
            },
        })
    }

    async fn start_ban_inner(
        &self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> Result<(), CounterError> {
        let mut invocation = self.start_ban.prepare_invoke();
        invocation
            .key(self.key(subject, &format!("r:{}", Window::Minute.index(now))))
            .key(self.key(subject, "ban"));
        match ban {
            Some(ban) => {
                let ttl = ban.until.saturating_sub(now) + self.remember_bans_for;
                invocation
                    .arg(format!("{}:{}", ban.until, ban.level))
                    .arg(ttl.max(1))
            }
            None => invocation.arg("").arg(1),
        };
        let mut connection = self.connection.clone();
        bounded::<u64>(self.timeout, invocation.invoke_async(&mut connection))
            .await
            .map(drop)
    }
}

async fn bounded<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, CounterError> {
    match actix_web::rt::time::timeout(timeout, call).await {
        Ok(result) => result.map_err(CounterError::new),
        Err(_) => Err(CounterError::new(format!("no answer within {timeout:?}"))),
    }
}

impl CounterStore for RedisCounters {
    fn ping(&self) -> LocalBoxFuture<'_, Result<(), CounterError>> {
        self.ping_inner().boxed_local()
    }

    fn hit<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
        self.run(&self.script, subject, limits, now).boxed_local()
    }

    fn peek<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
        self.run(&self.peek, subject, limits, now).boxed_local()
    }

    fn start_ban<'a>(
        &'a self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<(), CounterError>> {
        self.start_ban_inner(subject, ban, now).boxed_local()
    }
}
