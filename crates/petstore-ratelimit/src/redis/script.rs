//! The Lua scripts that count in Redis, atomically per subject, and the parsing of their
//! replies.

use std::sync::Arc;
use std::time::Duration;

use petstore_domain::{Ban, Counts};

use crate::Hit;

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
pub(super) const HIT: &str = concat!(
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
pub(super) const PEEK: &str = concat!(
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
pub(super) const MAX_BATCH: usize = 256;

/// A ban starts. KEYS: minute refusals, ban. ARGV: the ban (`until:level`, or empty for none
/// to record), its lifetime in seconds, now. Answers `''`, or, without a change, the ban in
/// force (`until:level`, as stored) that a ban to record finds (requests counted together
/// cross the threshold together). One script rather than a MULTI block, which a cluster client
/// does not route.
pub(super) const START_BAN: &str = r"if ARGV[1] ~= '' then
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

/// A request counted was answered `304`: taken back from both windows as a free revalidation
/// while the minute and the day have had fewer than their allowances. KEYS: minute count, day
/// count, the minute's and the day's revalidations. ARGV: the minute's and the day's
/// allowances, the minute keys' and the day keys' lifetimes. Answers 1 when taken back, else 0
/// (an allowance is used up, or the minute's count is gone: the minute turned).
pub(super) const REVALIDATED: &str = r"local values = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if tonumber(values[1] or '0') < 1 then return 0 end
if tonumber(values[3] or '0') >= tonumber(ARGV[1]) then return 0 end
if tonumber(values[4] or '0') >= tonumber(ARGV[2]) then return 0 end
if redis.call('INCR', KEYS[3]) == 1 then redis.call('EXPIRE', KEYS[3], ARGV[3]) end
if redis.call('INCR', KEYS[4]) == 1 then redis.call('EXPIRE', KEYS[4], ARGV[4]) end
redis.call('DECR', KEYS[1])
if tonumber(values[2] or '0') > 0 then redis.call('DECR', KEYS[2]) end
return 1
";

/// Slack added to key lifetimes, so instances whose clocks differ a little still agree.
pub(super) const MINUTE_SLACK: u64 = 60;
pub(super) const DAY_SLACK: u64 = 3_600;

/// A script's reply: comma-separated integers, `width` for each of `count` subjects.
pub(super) fn values(reply: &str, width: usize, count: usize) -> Result<Vec<u64>, RoundTripError> {
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

pub(super) fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The last ban in a reply, if any (`ban_until` 0 for none).
pub(super) fn ban(until: u64, level: u64) -> Option<Ban> {
    (until > 0).then(|| Ban {
        until,
        level: narrow(level),
    })
}

/// What [`HIT`] answers for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GroupHit {
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
    pub(super) fn nth(&self, nth: u32) -> Hit {
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
pub(super) fn group_hits(
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
pub(super) fn peeked(reply: &str) -> Result<Hit, RoundTripError> {
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
pub(super) fn in_force(reply: &str) -> Result<Option<Ban>, RoundTripError> {
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

pub(super) async fn bounded<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, RoundTripError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result.map_err(|error| RoundTripError::Redis(Arc::new(error))),
        Err(_) => Err(RoundTripError::Timeout(timeout)),
    }
}

/// Why a round trip to Redis failed, told to every request of its batch.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum RoundTripError {
    #[error(transparent)]
    Redis(Arc<redis::RedisError>),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("unexpected script reply: {0}")]
    Reply(String),
    #[error("it answers, but opening the requests' connection and loading the scripts failed")]
    Readying(#[source] Box<RoundTripError>),
}
