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

mod batch;
mod connection;
mod script;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use petstore_domain::{Ban, RateLimits, TRACES, Window, async_trait};
use redis::TlsCertificates;
use redis::aio::ConnectionManagerConfig;
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use tokio::sync::oneshot;
use tracing::Instrument;
use tracing::field::Empty;

use crate::{BanStarted, Counted, CounterError, CounterStore, Subject, TakenBack};

use batch::numbered;
use batch::{Counting, Pending};
use connection::{CONNECT_TIMEOUT, Connection, PING_TIMEOUT, Probe, Single};
use script::{
    DAY_SLACK, HIT, MINUTE_SLACK, PEEK, REVALIDATED, RoundTripError, START_BAN, bounded, in_force,
    peeked,
};

pub use connection::RedisTarget;
/// Counters in Redis, shared by every instance using the same target and prefix.
pub struct RedisCounters {
    counting: Arc<Counting>,
    probe: Probe,
    peek: redis::Script,
    start_ban: redis::Script,
    revalidated: redis::Script,
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
            revalidated: redis::Script::new(REVALIDATED),
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
            for script in [
                &self.counting.hit,
                &self.peek,
                &self.start_ban,
                &self.revalidated,
            ] {
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
    async fn hit_batched(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
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
        match tokio::time::timeout(timeout, answered).await {
            Ok(Ok(hit)) => hit.map_err(CounterError::new),
            Ok(Err(dropped)) => Err(CounterError::new(dropped)),
            Err(_) => Err(CounterError::new(RoundTripError::Timeout(timeout))),
        }
    }

    /// The status peek: [`PEEK`] for one subject, in a round trip of its own.
    async fn peek_inner(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
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

    async fn start_ban_inner(&self, subject: Subject, ban: Option<Ban>, now: u64) -> BanStarted {
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

    /// [`REVALIDATED`] for one subject, in a round trip of its own.
    async fn revalidated_inner(
        &self,
        subject: Subject,
        allowance: RateLimits,
        now: u64,
    ) -> TakenBack {
        let counting = &self.counting;
        let mut invocation = self.revalidated.prepare_invoke();
        let base = counting.key_base(subject);
        let (minute, day) = (Window::Minute.index(now), Window::Day.index(now));
        invocation
            .key(numbered(&base, "m:", minute))
            .key(numbered(&base, "d:", day))
            .key(numbered(&base, "v:", minute))
            .key(numbered(&base, "w:", day))
            .arg(allowance.per_minute)
            .arg(allowance.per_day)
            .arg(Window::Minute.reset_at(now) - now + MINUTE_SLACK)
            .arg(Window::Day.reset_at(now) - now + DAY_SLACK);
        let mut connection = counting.connection.link();
        let reply =
            bounded::<i64>(counting.timeout, invocation.invoke_async(&mut connection)).await;
        counting.connection.after(&connection, reply.is_ok());
        Ok(reply.map_err(CounterError::new)? == 1)
    }
}

#[async_trait(?Send)]
impl CounterStore for RedisCounters {
    async fn ping(&self) -> Result<(), CounterError> {
        traced("PING", "", self.ping_inner()).await
    }

    async fn hit(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        traced("EVALSHA", "hit", self.hit_batched(subject, limits, now)).await
    }

    async fn peek(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        traced("EVALSHA", "peek", self.peek_inner(subject, limits, now)).await
    }

    async fn start_ban(&self, subject: Subject, ban: Option<Ban>, now: u64) -> BanStarted {
        traced(
            "EVALSHA",
            "start_ban",
            self.start_ban_inner(subject, ban, now),
        )
        .await
    }

    async fn revalidated(&self, subject: Subject, allowance: RateLimits, now: u64) -> TakenBack {
        traced(
            "EVALSHA",
            "revalidated",
            self.revalidated_inner(subject, allowance, now),
        )
        .await
    }
}

/// `call`, a Redis round trip, in a client span (OpenTelemetry's database conventions; the
/// batched hit's covers its wait for the batch too), marked as an error when it fails.
async fn traced<T>(
    command: &'static str,
    script: &'static str,
    call: impl Future<Output = Result<T, CounterError>>,
) -> Result<T, CounterError> {
    let span = tracing::info_span!(
        target: TRACES,
        "redis",
        otel.name = format!("{command} {script}").trim_end(),
        otel.kind = "client",
        otel.status_code = Empty,
        db.system.name = "redis",
        db.operation.name = command,
        petstore.redis.script = script,
        error.type = Empty,
    );
    let result = call.instrument(span.clone()).await;
    if result.is_err() && !span.is_disabled() {
        span.record("otel.status_code", "error");
        span.record("error.type", "limiter_unavailable");
    }
    result
}
