//! Redis counters: every instance shares them. One round trip per request (a Lua script that
//! checks the ban, both windows, and counts atomically); every key expires by itself.

use std::time::Duration;

use futures_util::future::{FutureExt, LocalBoxFuture};
use petstore_domain::{Ban, Counts, RateLimits, Window};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

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

/// Slack added to key lifetimes, so instances whose clocks differ a little still agree.
const MINUTE_SLACK: u64 = 60;
const DAY_SLACK: u64 = 3_600;

/// Counters in Redis, shared by every instance using the same URL and prefix.
pub struct RedisCounters {
    connection: ConnectionManager,
    script: redis::Script,
    peek: redis::Script,
    prefix: String,
    timeout: Duration,
    remember_bans_for: u64,
}

impl RedisCounters {
    /// Counters at `url` under `prefix`. Connects lazily (a Redis that is down at start-up does
    /// not stop the service) and reconnects by itself; every call gives up after `timeout`.
    /// Must be called inside the async runtime.
    pub fn new(
        url: &str,
        prefix: &str,
        timeout: Duration,
        remember_bans_for: u64,
    ) -> Result<Self, CounterError> {
        let client = redis::Client::open(url).map_err(CounterError::new)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout);
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(CounterError::new)?;
        Ok(Self {
            connection,
            script: redis::Script::new(HIT),
            peek: redis::Script::new(PEEK),
            prefix: prefix.to_owned(),
            timeout,
            remember_bans_for,
        })
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
        let mut pipe = redis::pipe();
        pipe.atomic()
            .del(self.key(subject, &format!("r:{}", Window::Minute.index(now))))
            .ignore();
        if let Some(ban) = ban {
            let ttl = ban.until.saturating_sub(now) + self.remember_bans_for;
            pipe.set_ex(
                self.key(subject, "ban"),
                format!("{}:{}", ban.until, ban.level),
                ttl.max(1),
            )
            .ignore();
        }
        let mut connection = self.connection.clone();
        bounded::<()>(self.timeout, pipe.query_async(&mut connection)).await
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
