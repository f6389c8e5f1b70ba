//! Redis counters: every instance shares them. A Lua script checks each request's ban and both
//! windows and counts, atomically; every key expires by itself.
//!
//! Decisions are batched: a request's hit joins a queue, and whatever is pending when the
//! connection is free goes to Redis in one script call (one per cluster slot), each request
//! getting its own answer. No request waits for a batch to fill: the first one goes at once,
//! and the ones that arrive while it is out make up the next. A batch's requests of one subject
//! are counted together, in the order they came: their ban and windows are read once, and each
//! request's own counts follow from how many of them fitted.
//!
//! The counters live on one Redis server (`redis://`, or `rediss://` over TLS) or in a Redis
//! Cluster (`redis+cluster://` or `rediss+cluster://` and seed nodes). Every key of one subject
//! carries the subject as a hash tag, so that they share a cluster slot and each script, which
//! touches several of them, runs on one node, atomically.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::{FutureExt, LocalBoxFuture, join_all};
use petstore_domain::{Ban, Counts, RateLimits, Window};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::Slot;
use redis::{Cmd, Pipeline, RedisFuture, TlsCertificates, Value};
use tokio::sync::oneshot;

use super::{CounterError, CounterStore, Hit, Subject};

/// The scripts' common start, for the subject whose keys start at `KEYS[k + 1]` and arguments
/// at `ARGV[a]`: reads its ban and both windows (and, for [`PEEK`], its refusals) in one
/// `MGET`. A ban in force answers `'2'`, then `$zeros` zeros, then `ban_until, ban_level` at
/// once; otherwise `ban_until` and `ban_level` hold the last ban, if any (for escalation), as
/// text.
///
/// The scripts answer their values as one string, comma-separated. Where a value is at hand as
/// text (a count as stored, a group's size as given, a constant) it is answered as such: Lua's
/// conversion of a number to text is a large part of a script's time (docs/performance.md).
/// The other values are integers below 2^32, which Lua writes plainly. A ban's values are
/// answered as stored, never converted to Lua's numbers and back (which writes 10^14 and above
/// with an exponent).
macro_rules! read_subject {
    ($keys:literal, $zeros:literal) => {
        concat!(
            r"local values = redis.call('MGET', ",
            $keys,
            r")
local minute = tonumber(values[2] or '0')
local day = tonumber(values[3] or '0')
local ban_until, ban_level = '0', '0'
local ban = values[1]
if ban then
  local sep = string.find(ban, ':', 1, true)
  ban_until = string.sub(ban, 1, sep - 1)
  ban_level = string.sub(ban, sep + 1)
  if tonumber(ban_until) > tonumber(ARGV[a + 2]) then
    return '2', ",
            $zeros,
            r" ban_until, ban_level
  end
end
"
        )
    };
}

/// Counts a batch of requests, grouped by subject (each group's requests in order, one after
/// the other, as if each had been counted alone). Per group, 4 KEYS (minute count, day count,
/// minute refusals, ban) and 6 ARGV (per-minute limit, per-day limit, now, minute-key TTL,
/// day-key TTL, the group's number of requests). Returns 7 values per group: state (1 counted,
/// 2 banned), how many of its requests fitted (the first ones: counted, the others refused),
/// then minute, day and refused as they were before the group, ban_until, ban_level; as one
/// string of comma-separated integers (one bulk reply rather than an array of integers, each
/// parsed on its own by the client: what that saves, docs/performance.md).
const HIT: &str = concat!(
    "local function decide(k, a)\n",
    read_subject!(
        "KEYS[k + 4], KEYS[k + 1], KEYS[k + 2]",
        "'0', '0', '0', '0',"
    ),
    r"local n = tonumber(ARGV[a + 5])
local fitted = math.max(0, math.min(n, tonumber(ARGV[a]) - minute, tonumber(ARGV[a + 1]) - day))
if fitted > 0 then
  if redis.call('INCRBY', KEYS[k + 1], fitted) == fitted then
    redis.call('EXPIRE', KEYS[k + 1], ARGV[a + 3])
  end
  if redis.call('INCRBY', KEYS[k + 2], fitted) == fitted then
    redis.call('EXPIRE', KEYS[k + 2], ARGV[a + 4])
  end
end
local refused = '0'
if fitted < n then
  refused = redis.call('INCRBY', KEYS[k + 3], n - fitted) - (n - fitted)
  if refused == 0 then redis.call('EXPIRE', KEYS[k + 3], ARGV[a + 3]) end
else
  fitted = ARGV[a + 5]
end
return '1', fitted, values[2] or '0', values[3] or '0', refused, ban_until, ban_level
end
local replies = {}
for i = 0, #KEYS / 4 - 1 do
  local at = 7 * i
  replies[at + 1], replies[at + 2], replies[at + 3], replies[at + 4], replies[at + 5],
    replies[at + 6], replies[at + 7] = decide(4 * i, 6 * i + 1)
end
return table.concat(replies, ',')
"
);

/// [`HIT`] for one request without counting: the same reply, state 1 when both windows have
/// room.
const PEEK: &str = concat!(
    "local function peek(k, a)\n",
    read_subject!(
        "KEYS[k + 4], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]",
        "'0', '0', '0',"
    ),
    r"local refused = tonumber(values[4] or '0')
local room = 0
if minute < tonumber(ARGV[a]) and day < tonumber(ARGV[a + 1]) then room = 1 end
return room, minute, day, refused, ban_until, ban_level
end
return table.concat({peek(0, 1)}, ',')
"
);

/// The most requests one script call carries: a bound on how long Redis runs one script.
const MAX_BATCH: usize = 256;

/// A ban starts. KEYS: minute refusals, ban. ARGV: the ban (`until:level`, or empty for none
/// to record), its lifetime in seconds, now. Answers `''`, or, without a change, the ban in
/// force (`until:level`, as stored) that a ban to record finds (requests counted together
/// cross the threshold together). One script rather than a MULTI block, which a cluster client
/// does not route.
const START_BAN: &str = r"if ARGV[1] ~= '' then
  local ban = redis.call('GET', KEYS[2])
  if ban then
    local sep = string.find(ban, ':', 1, true)
    if tonumber(string.sub(ban, 1, sep - 1)) > tonumber(ARGV[3]) then return ban end
  end
  redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
end
redis.call('DEL', KEYS[1])
return ''
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
        let shown = petstore_store::redact_url_password(url);
        let bad = |why: &str| CounterError::new(format!("--rate-limit-store {shown:?}: {why}"));
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

/// The connection: to one server ([`Single`]), or to a cluster (following its topology: slots
/// that move, a replica promoted in a failover).
#[allow(clippy::large_enum_variant)] // one per process: its size does not matter
enum Connection {
    Single(Single),
    Cluster(ClusterConnection),
}

impl Connection {
    /// What a call goes through.
    fn link(&self) -> Link {
        match self {
            Self::Single(single) => single.link(),
            Self::Cluster(connection) => Link::Cluster(connection.clone()),
        }
    }

    /// After a call through `link`: whether it was answered (the cluster client recovers by
    /// itself).
    fn after(&self, link: &Link, answered: bool) {
        if let (Self::Single(single), Link::Single(_, generation)) = (self, link) {
            single.after(*generation, answered);
        }
    }
}

/// How long one server's connection may go unanswered, failing calls, before it is replaced.
const REPLACE_AFTER: Duration = Duration::from_secs(1);

/// One server's connection manager, replaced once its calls have failed for [`REPLACE_AFTER`]
/// with none answered. The manager reconnects by itself only when its connection drops: it
/// keeps any other failure to connect for good (an `AUTH` refused before the user was set up),
/// and a connection that no longer answers (a half-open socket; the server moved behind its
/// name) or that a demoted master answers `READONLY` on. A call that merely timed out on a
/// connection that answers others leaves it be.
struct Single {
    client: redis::Client,
    config: ConnectionManagerConfig,
    state: Mutex<Managed>,
}

struct Managed {
    manager: ConnectionManager,
    /// Which manager this is: a late answer on a replaced one is not this one's.
    generation: u64,
    /// When a call on it was last answered, or when it was made.
    answered: Instant,
}

impl Single {
    fn new(client: redis::Client, config: ConnectionManagerConfig) -> Result<Self, CounterError> {
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

    fn lock(&self) -> MutexGuard<'_, Managed> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn link(&self) -> Link {
        let state = self.lock();
        Link::Single(state.manager.clone(), state.generation)
    }

    fn after(&self, generation: u64, answered: bool) {
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
enum Link {
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
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// How long opening the connection to one server may take (TCP, then a TLS handshake), at least
/// (the request timeout when that is longer): longer than one request waits, so that a handshake
/// slowed by load completes for the requests after it rather than being cut off and begun again;
/// each request still gives up after its own timeout. Short all the same: while an attempt hangs (a
/// host that drops packets), a Redis that is back goes unnoticed. A cluster's node connections keep
/// the request timeout: the cluster client sends nothing, to any node, while it connects to nodes
/// after a topology change.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A client that opens a connection of its own, for the start-up check.
#[allow(clippy::large_enum_variant)] // one per process: its size does not matter
enum Probe {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// Counters in Redis, shared by every instance using the same target and prefix.
pub struct RedisCounters {
    counting: Arc<Counting>,
    probe: Probe,
    peek: redis::Script,
    start_ban: redis::Script,
    remember_bans_for: u64,
}

/// What the requests of one instance share with the task that sends their batches.
struct Counting {
    connection: Connection,
    hit: redis::Script,
    prefix: String,
    timeout: Duration,
    /// One queue for every worker of the instance.
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Pending>,
    /// Whether a task is sending batches (it takes what is pending until none is left).
    sending: bool,
}

/// A request waiting for its decision.
struct Pending {
    subject: Subject,
    limits: RateLimits,
    now: u64,
    answer: oneshot::Sender<Result<Hit, RoundTripError>>,
}

/// Why a round trip to Redis failed, told to every request of its batch.
#[derive(Debug, Clone, thiserror::Error)]
enum RoundTripError {
    #[error(transparent)]
    Redis(Arc<redis::RedisError>),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("unexpected script reply: {0}")]
    Reply(String),
    #[error("it answers, but opening the requests' connection and loading the scripts failed")]
    Readying(#[source] Box<RoundTripError>),
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
    /// Connects lazily, or at the start-up check ([`CounterStore::ping`]): a Redis that is down
    /// at start-up does not stop the service. Reconnects by itself; every call gives up after
    /// `timeout`. Must be called inside the async runtime.
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
                    .set_connection_timeout(Some(CONNECT_TIMEOUT.max(timeout)))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(timeout);
                (
                    Connection::Single(Single::new(client.clone(), config)?),
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
                    Connection::Cluster(client.get_pending_async_connection_with_config(config)),
                    Probe::Cluster(client),
                )
            }
        };
        Ok(Self {
            counting: Arc::new(Counting {
                connection,
                hit: redis::Script::new(HIT),
                prefix: prefix.to_owned(),
                timeout,
                queue: Mutex::default(),
            }),
            probe,
            peek: redis::Script::new(PEEK),
            start_ban: redis::Script::new(START_BAN),
            remember_bans_for,
        })
    }

    /// One `PING` on a connection of its own, within [`PING_TIMEOUT`]: whether Redis answers
    /// now, and if not, why (a refused certificate says so). Then, within as long again, the
    /// requests' connection is opened and the scripts loaded (on every node of a cluster): the
    /// first requests, which wait for Redis at most the short timeout, pay neither a handshake
    /// nor a script's first load.
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
        bounded::<String>(PING_TIMEOUT, ping)
            .await
            .map_err(CounterError::new)?;
        let mut connection = self.counting.connection.link();
        let load = async {
            for script in [&self.counting.hit, &self.peek, &self.start_ban] {
                script.load_async(&mut connection).await?;
            }
            Ok(())
        };
        bounded::<()>(PING_TIMEOUT, load)
            .await
            .map_err(|error| CounterError::new(RoundTripError::Readying(Box::new(error))))
    }

    /// Queues one request's hit, starting a task to send the queue if none is at it, and waits
    /// for its answer, at most the timeout.
    async fn hit_batched(
        &self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> Result<Hit, CounterError> {
        let (answer, answered) = oneshot::channel();
        let start_sending = {
            let mut queue = self.counting.lock_queue();
            queue.pending.push(Pending {
                subject,
                limits,
                now,
                answer,
            });
            !std::mem::replace(&mut queue.sending, true)
        };
        if start_sending {
            tokio::spawn(Arc::clone(&self.counting).send_batches());
        }
        let timeout = self.counting.timeout;
        match actix_web::rt::time::timeout(timeout, answered).await {
            Ok(Ok(hit)) => hit.map_err(CounterError::new),
            Ok(Err(dropped)) => Err(CounterError::new(dropped)),
            Err(_) => Err(CounterError::new(RoundTripError::Timeout(timeout))),
        }
    }

    /// The status peek: [`PEEK`] for one subject, in a round trip of its own.
    async fn peek_inner(
        &self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> Result<Hit, CounterError> {
        let mut invocation = self.peek.prepare_invoke();
        self.counting
            .add_subject(&mut invocation, subject, limits, now, 1);
        let mut connection = self.counting.connection.link();
        let reply = bounded::<String>(
            self.counting.timeout,
            invocation.invoke_async(&mut connection),
        )
        .await;
        self.counting.connection.after(&connection, reply.is_ok());
        let reply = reply.map_err(CounterError::new)?;
        peeked(&reply).map_err(CounterError::new)
    }

    async fn start_ban_inner(
        &self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> Result<Option<Ban>, CounterError> {
        let counting = &self.counting;
        let mut invocation = self.start_ban.prepare_invoke();
        let base = counting.key_base(subject);
        invocation
            .key(numbered(&base, "r:", Window::Minute.index(now)))
            .key(base + "ban");
        match ban {
            Some(ban) => {
                let ttl = ban.until.saturating_sub(now) + self.remember_bans_for;
                invocation
                    .arg(format!("{}:{}", ban.until, ban.level))
                    .arg(ttl.max(1))
            }
            None => invocation.arg("").arg(1),
        };
        invocation.arg(now);
        let mut connection = counting.connection.link();
        let reply =
            bounded::<String>(counting.timeout, invocation.invoke_async(&mut connection)).await;
        counting.connection.after(&connection, reply.is_ok());
        let reply = reply.map_err(CounterError::new)?;
        in_force(&reply).map_err(CounterError::new)
    }
}

impl Counting {
    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        // The queue holds no invariant a panic could break half-way.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `{prefix}:{subject}:`, how every key of the subject begins; the braces keep one
    /// subject's keys in one cluster slot.
    fn key_base(&self, subject: Subject) -> String {
        format!("{}:{{{subject}}}:", self.prefix)
    }

    /// Adds one subject's 4 keys and 6 arguments to a [`HIT`] call for `requests` requests, or
    /// to a [`PEEK`] call (which has no use for the last).
    fn add_subject(
        &self,
        invocation: &mut redis::ScriptInvocation<'_>,
        subject: Subject,
        limits: RateLimits,
        now: u64,
        requests: usize,
    ) {
        let minute = Window::Minute.index(now);
        let day = Window::Day.index(now);
        // The subject is written once, not once a key (what that saves: docs/performance.md).
        let base = self.key_base(subject);
        invocation
            .key(numbered(&base, "m:", minute))
            .key(numbered(&base, "d:", day))
            .key(numbered(&base, "r:", minute))
            .key(base + "ban")
            .arg(limits.per_minute)
            .arg(limits.per_day)
            .arg(now)
            .arg(Window::Minute.reset_at(now) - now + MINUTE_SLACK)
            .arg(Window::Day.reset_at(now) - now + DAY_SLACK)
            .arg(requests);
    }

    /// Sends what is pending, batch after batch, until nothing is; the only task doing so.
    async fn send_batches(self: Arc<Self>) {
        let mut sending = Sending(Some(&self));
        loop {
            let batch = {
                let mut queue = self.lock_queue();
                // A request that gave up (its deadline passed) is not counted after all.
                queue.pending.retain(|pending| !pending.answer.is_closed());
                if queue.pending.is_empty() {
                    queue.sending = false;
                    sending.0 = None;
                    return;
                }
                let size = queue.pending.len().min(MAX_BATCH);
                queue.pending.drain(..size).collect()
            };
            self.send(batch).await;
        }
    }

    /// One batch: one script call on a single server; in a cluster, one per slot, at once
    /// (a script's keys must share a slot).
    async fn send(&self, batch: Vec<Pending>) {
        match self.connection {
            Connection::Single(_) => self.call(batch).await,
            Connection::Cluster(_) => {
                let mut groups: HashMap<Slot, Vec<Pending>> = HashMap::new();
                for pending in batch {
                    // Every key of a subject hashes by the tag in its beginning.
                    let slot = Slot::for_key(self.key_base(pending.subject));
                    groups.entry(slot).or_default().push(pending);
                }
                join_all(groups.into_values().map(|group| self.call(group))).await;
            }
        }
    }

    /// One [`HIT`] call for `batch` (one slot), each request answered.
    async fn call(&self, batch: Vec<Pending>) {
        let groups = Group::of(batch);
        let mut invocation = self.hit.prepare_invoke();
        for group in &groups {
            self.add_subject(
                &mut invocation,
                group.subject,
                group.limits,
                group.now,
                group.answers.len(),
            );
        }
        let mut connection = self.connection.link();
        let reply = bounded::<String>(self.timeout, invocation.invoke_async(&mut connection)).await;
        self.connection.after(&connection, reply.is_ok());
        let reply = reply
            .and_then(|reply| group_hits(&reply, groups.iter().map(|group| group.answers.len())));
        match reply {
            Ok(hits) => {
                for (group, hit) in groups.into_iter().zip(hits) {
                    for (nth, answer) in (0..).zip(group.answers) {
                        // The request may have given up meanwhile: nobody to tell.
                        let _ = answer.send(Ok(hit.nth(nth)));
                    }
                }
            }
            Err(error) => {
                for answer in groups.into_iter().flat_map(|group| group.answers) {
                    let _ = answer.send(Err(error.clone()));
                }
            }
        }
    }
}

/// A batch's requests of one subject that came one after the other for that subject, with the
/// same limits and at the same second: counted together, in the order they came.
struct Group {
    subject: Subject,
    limits: RateLimits,
    now: u64,
    answers: Vec<oneshot::Sender<Result<Hit, RoundTripError>>>,
}

impl Group {
    /// `batch` grouped, the groups in the order of their first request. A request joins its
    /// subject's last group when it has the same limits and second, else starts a group: each
    /// subject's requests are counted in the order they came, whatever came between them.
    fn of(batch: Vec<Pending>) -> Vec<Self> {
        let mut groups: Vec<Self> = Vec::new();
        let mut last: HashMap<Subject, usize> = HashMap::new();
        for pending in batch {
            let joins = last.get(&pending.subject).copied().filter(|&at| {
                let group = &groups[at];
                (group.limits, group.now) == (pending.limits, pending.now)
            });
            let at = joins.unwrap_or_else(|| {
                groups.push(Self {
                    subject: pending.subject,
                    limits: pending.limits,
                    now: pending.now,
                    answers: Vec::new(),
                });
                last.insert(pending.subject, groups.len() - 1);
                groups.len() - 1
            });
            groups[at].answers.push(pending.answer);
        }
        groups
    }
}

/// `{base}{kind}{index}`: a window's key.
fn numbered(base: &str, kind: &str, index: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let index = digits.format(index);
    let mut key = String::with_capacity(base.len() + kind.len() + index.len());
    key.push_str(base);
    key.push_str(kind);
    key.push_str(index);
    key
}

/// Ends the sending when its task ends otherwise than by emptying the queue (the runtime
/// shutting down, a panic): the requests it leaves are told at once, and the next one starts a
/// new task.
struct Sending<'a>(Option<&'a Counting>);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if let Some(counting) = self.0 {
            let mut queue = counting.lock_queue();
            queue.sending = false;
            queue.pending.clear();
        }
    }
}

/// A script's reply: comma-separated integers, `width` for each of `count` subjects.
fn values(reply: &str, width: usize, count: usize) -> Result<Vec<u64>, RoundTripError> {
    let values: Vec<u64> = reply
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| RoundTripError::Reply(format!("not integers: {reply:.100}")))?;
    if values.len() != width * count {
        return Err(RoundTripError::Reply(format!(
            "{} values for {count} subjects",
            values.len()
        )));
    }
    Ok(values)
}

fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The last ban in a reply, if any (`ban_until` 0 for none).
fn ban(until: u64, level: u64) -> Option<Ban> {
    (until > 0).then(|| Ban {
        until,
        level: narrow(level),
    })
}

/// What [`HIT`] answers for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupHit {
    /// A ban in force: every request of the group is refused by it.
    Banned(Ban),
    /// The first `fitted` requests counted, the others refused.
    Counted {
        fitted: u32,
        /// Minute, day and refused counts before the group.
        before: Counts,
        previous_ban: Option<Ban>,
    },
}

impl GroupHit {
    /// The hit of the group's `nth` request (from 0), as if it had been counted alone, after
    /// the ones before it.
    fn nth(&self, nth: u32) -> Hit {
        let (fitted, before, previous_ban) = match *self {
            Self::Banned(ban) => return Hit::Banned(ban),
            Self::Counted {
                fitted,
                before,
                previous_ban,
            } => (fitted, before, previous_ban),
        };
        let allowed = nth < fitted;
        let counted = if allowed { nth + 1 } else { fitted };
        Hit::Counted {
            counts: Counts {
                allowed,
                minute_used: before.minute_used.saturating_add(counted),
                day_used: before.day_used.saturating_add(counted),
                rejected: if allowed {
                    0
                } else {
                    before.rejected.saturating_add(nth - fitted + 1)
                },
            },
            previous_ban,
        }
    }
}

/// [`HIT`]'s reply for groups of `sizes` requests (7 values each).
fn group_hits(
    reply: &str,
    sizes: impl ExactSizeIterator<Item = usize>,
) -> Result<Vec<GroupHit>, RoundTripError> {
    let values = values(reply, 7, sizes.len())?;
    let (values, _) = values.as_chunks::<7>();
    values
        .iter()
        .zip(sizes)
        .map(
            |(&[state, fitted, minute, day, refused, ban_until, ban_level], size)| match (
                state,
                ban(ban_until, ban_level),
            ) {
                (2, Some(ban)) => Ok(GroupHit::Banned(ban)),
                (1, previous_ban) if fitted <= size as u64 => Ok(GroupHit::Counted {
                    fitted: narrow(fitted),
                    before: Counts {
                        allowed: false,
                        minute_used: narrow(minute),
                        day_used: narrow(day),
                        rejected: narrow(refused),
                    },
                    previous_ban,
                }),
                _ => Err(RoundTripError::Reply(format!(
                    "unknown state, or more fitted than requests, in {reply:.100}"
                ))),
            },
        )
        .collect()
}

/// [`PEEK`]'s reply (6 values: state, 1 when both windows have room, 2 banned; minute, day,
/// refused, ban_until, ban_level).
fn peeked(reply: &str) -> Result<Hit, RoundTripError> {
    let values = values(reply, 6, 1)?;
    let Some(&[state, minute, day, refused, ban_until, ban_level]) = values.as_chunks().0.first()
    else {
        return Err(RoundTripError::Reply(format!("no values: {reply:.100}")));
    };
    Ok(match (state, ban(ban_until, ban_level)) {
        (2, Some(ban)) => Hit::Banned(ban),
        (_, previous_ban) => Hit::Counted {
            counts: Counts {
                allowed: state == 1,
                minute_used: narrow(minute),
                day_used: narrow(day),
                rejected: narrow(refused),
            },
            previous_ban,
        },
    })
}

/// [`START_BAN`]'s reply: the ban in force it found, if any.
fn in_force(reply: &str) -> Result<Option<Ban>, RoundTripError> {
    if reply.is_empty() {
        return Ok(None);
    }
    let parsed = reply
        .split_once(':')
        .and_then(|(until, level)| Some((until.parse().ok()?, level.parse().ok()?)));
    match parsed {
        Some((until, level)) if until > 0 => Ok(Some(Ban {
            until,
            level: narrow(level),
        })),
        _ => Err(RoundTripError::Reply(format!("not a ban: {reply:.100}"))),
    }
}

async fn bounded<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, RoundTripError> {
    match actix_web::rt::time::timeout(timeout, call).await {
        Ok(result) => result.map_err(|error| RoundTripError::Redis(Arc::new(error))),
        Err(_) => Err(RoundTripError::Timeout(timeout)),
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
        self.hit_batched(subject, limits, now).boxed_local()
    }

    fn peek<'a>(
        &'a self,
        subject: Subject,
        limits: RateLimits,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Hit, CounterError>> {
        self.peek_inner(subject, limits, now).boxed_local()
    }

    fn start_ban<'a>(
        &'a self,
        subject: Subject,
        ban: Option<Ban>,
        now: u64,
    ) -> LocalBoxFuture<'a, Result<Option<Ban>, CounterError>> {
        self.start_ban_inner(subject, ban, now).boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(allowed: bool, minute_used: u32, day_used: u32, rejected: u32) -> Counts {
        Counts {
            allowed,
            minute_used,
            day_used,
            rejected,
        }
    }

    #[test]
    fn a_reply_holds_seven_values_per_group() {
        let reply = "1,2,3,40,0,0,0,2,0,0,0,0,1700000600,2,1,0,60,90,5,100000000000000,1";
        let groups = group_hits(reply, [2, 4, 1].into_iter()).expect("three groups");
        let ban = Ban {
            until: 1_700_000_600,
            level: 2,
        };
        assert_eq!(
            groups,
            [
                GroupHit::Counted {
                    fitted: 2,
                    before: counts(false, 3, 40, 0),
                    previous_ban: None,
                },
                GroupHit::Banned(ban),
                GroupHit::Counted {
                    fitted: 0,
                    before: counts(false, 60, 90, 5),
                    previous_ban: Some(Ban {
                        until: 100_000_000_000_000,
                        level: 1,
                    }),
                },
            ]
        );
    }

    #[test]
    fn each_request_of_a_group_gets_the_counts_it_would_have_got_alone() {
        let group = GroupHit::Counted {
            fitted: 2,
            before: counts(false, 3, 40, 7),
            previous_ban: None,
        };
        let hits: Vec<Hit> = (0..4).map(|nth| group.nth(nth)).collect();
        let expected = [
            counts(true, 4, 41, 0),
            counts(true, 5, 42, 0),
            counts(false, 5, 42, 8),
            counts(false, 5, 42, 9),
        ];
        for (hit, counts) in hits.into_iter().zip(expected) {
            assert_eq!(
                hit,
                Hit::Counted {
                    counts,
                    previous_ban: None
                }
            );
        }
        let ban = Ban {
            until: 1_700_000_600,
            level: 2,
        };
        assert_eq!(GroupHit::Banned(ban).nth(5), Hit::Banned(ban));
    }

    #[test]
    fn each_subject_is_counted_in_the_order_its_requests_came() {
        let limits = RateLimits::custom(10, 100).expect("limits");
        let other_limits = RateLimits::custom(5, 100).expect("limits");
        let (a, x) = (Subject::Key(1), Subject::Key(2));
        let batch = [
            (a, limits, 100),
            (x, limits, 100),
            (a, limits, 100),
            (a, limits, 101),
            (a, limits, 100),
            (a, other_limits, 100),
            (a, other_limits, 100),
        ];
        let batch = batch
            .into_iter()
            .map(|(subject, limits, now)| Pending {
                subject,
                limits,
                now,
                answer: oneshot::channel().0,
            })
            .collect();
        let groups: Vec<_> = Group::of(batch)
            .into_iter()
            .map(|group| (group.subject, group.limits, group.now, group.answers.len()))
            .collect();
        assert_eq!(
            groups,
            [
                (a, limits, 100, 2),
                (x, limits, 100, 1),
                (a, limits, 101, 1),
                (a, limits, 100, 1),
                (a, other_limits, 100, 2),
            ]
        );
    }

    #[test]
    fn a_peek_reply_holds_six_values() {
        assert_eq!(
            peeked("0,60,90,5,0,0").expect("a hit"),
            Hit::Counted {
                counts: counts(false, 60, 90, 5),
                previous_ban: None,
            }
        );
    }

    #[test]
    fn a_ban_start_answers_nothing_or_the_ban_in_force() {
        assert_eq!(in_force("").expect("started"), None);
        assert_eq!(
            in_force("100000000000000:3").expect("in force"),
            Some(Ban {
                until: 100_000_000_000_000,
                level: 3,
            })
        );
        for reply in ["1", "1:", ":1", "1:x", "1e+14:1", "1:2:3", "0:1"] {
            assert!(in_force(reply).is_err(), "{reply}");
        }
    }

    #[test]
    fn a_malformed_reply_is_an_error_not_a_guess() {
        for (reply, sizes) in [
            ("1,0,3,40,0,0,0", &[1, 1][..]),
            ("1,0,3,40,0,0", &[1]),
            ("1,0,3,40,0,0,0,1", &[1]),
            ("1,0,3,x,0,0,0", &[1]),
            ("", &[1]),
            ("1,0,3,40,0,0,-1", &[1]),
            ("1,0,3,40,0,1e+14,1", &[1]),
            ("0,0,3,40,0,0,0", &[1]),
            ("2,0,0,0,0,0,0", &[1]),
            ("1,4,3,40,0,0,0", &[3]),
        ] {
            assert!(
                matches!(
                    group_hits(reply, sizes.iter().copied()),
                    Err(RoundTripError::Reply(_))
                ),
                "{reply:?} for {sizes:?}"
            );
        }
        for reply in ["1,3,40,0,0", "1,3,40,0,0,0,1", ""] {
            assert!(
                matches!(peeked(reply), Err(RoundTripError::Reply(_))),
                "{reply:?}"
            );
        }
    }
}
