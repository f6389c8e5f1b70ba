//! An attempt and what its answer means: what becomes of the delivery ([`decide`]: delivered,
//! retried on the schedule [`retry_delay`] or after the receiver's `Retry-After`
//! ([`retry_after`]), given up on, or the endpoint gone), and whether the endpoint is turned off
//! ([`turns_endpoint_off`]). Pure: the sender reads the answer and the time and calls these; the
//! storage records the outcome ([`AttemptRecord`]) and carries it out.

use std::time::{Duration, SystemTime};

/// What became of an attempt, and so of its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// Answered `2xx`: delivered.
    Delivered,
    /// Failed; tried again at this time (Unix seconds).
    RetryAt(i64),
    /// Failed, and no retry is left: failed. The endpoint is turned off too when nothing was
    /// delivered to it since this delivery's event happened (it failed throughout).
    GaveUp,
    /// The endpoint answered `410 Gone`: the delivery failed and the endpoint is turned off.
    Gone,
}

impl AttemptResult {
    /// Whether the delivery fails with it (given up on, or the endpoint gone): the only results
    /// that may turn the endpoint off ([`turns_endpoint_off`]).
    pub fn fails_delivery(self) -> bool {
        match self {
            Self::Delivered | Self::RetryAt(_) => false,
            Self::GaveUp | Self::Gone => true,
        }
    }
}

/// An attempt's record: the delivery, the claim that made it, and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The delivery.
    pub delivery: i64,
    /// The claim's token.
    pub lease: i64,
    /// When it was made (Unix seconds).
    pub attempted_at: i64,
    /// The HTTP status, if any.
    pub status: Option<u16>,
    /// Time taken, in milliseconds.
    pub latency_ms: u32,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// What becomes of the delivery.
    pub result: AttemptResult,
}

/// The waits between attempts after a failure, in seconds: the first retry within seconds, then
/// minutes, then hours (the Standard Webhooks schedule, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
/// extended to reach about three days): ten attempts over 75.6 hours.
pub const RETRY_SCHEDULE: [u64; 9] = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400];

/// How long to wait after the `tries`-th failed attempt (1 for the first), with `jitter` in
/// `0.0..1.0` spreading it over ±20% so that many failed deliveries do not return together;
/// `None` when the schedule has run out.
pub fn retry_delay(tries: u32, jitter: f64) -> Option<Duration> {
    let index = usize::try_from(tries.checked_sub(1)?).ok()?;
    let base = *RETRY_SCHEDULE.get(index)?;
    let factor = 0.8 + 0.4 * jitter.clamp(0.0, 1.0);
    Some(Duration::from_secs_f64(base as f64 * factor))
}

/// The longest `Retry-After` honoured (a day): longer waits are cut to it.
pub const MAX_RETRY_AFTER: u64 = 24 * 3600;

/// What becomes of a delivery after its `tries`-th attempt (1 for the first) at `now` (Unix
/// seconds), which got `status` (none: no answer) and `retry_after` (seconds, as
/// [`retry_after`] reads the header): delivered on `2xx`, the endpoint gone on `410`, else
/// retried on the schedule ([`retry_delay`], spread by `jitter` in `0.0..1.0`) and not before a
/// `429`'s or `503`'s `Retry-After` (at most [`MAX_RETRY_AFTER`]), or given up on when the
/// schedule has run out.
pub fn decide(
    status: Option<u16>,
    retry_after: Option<u64>,
    tries: u32,
    now: i64,
    jitter: f64,
) -> AttemptResult {
    match status {
        Some(200..=299) => AttemptResult::Delivered,
        Some(410) => AttemptResult::Gone,
        _ => match retry_delay(tries, jitter) {
            None => AttemptResult::GaveUp,
            Some(delay) => {
                let mut wait = delay.as_secs().max(1);
                if let (Some(429 | 503), Some(after)) = (status, retry_after) {
                    wait = wait.max(after.min(MAX_RETRY_AFTER));
                }
                AttemptResult::RetryAt(now.saturating_add(i64::try_from(wait).unwrap_or(i64::MAX)))
            }
        },
    }
}

/// A `Retry-After` header's `value` in seconds: a number of seconds, or an HTTP date (the
/// seconds from `now` to it; 0 when it is past). `None` without a value, or with one that is
/// neither.
pub fn retry_after(value: Option<&str>, now: SystemTime) -> Option<u64> {
    let value = value?.trim();
    if let Ok(seconds) = value.parse() {
        return Some(seconds);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).map_or(0, |wait| wait.as_secs()))
}

/// An endpoint to turn off after an attempt ([`turns_endpoint_off`]), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOff {
    /// Why, as the endpoint shows it (its `disabledReason`).
    pub reason: String,
    /// When given, only if nothing was delivered to the endpoint at or after this time (Unix
    /// seconds): a delivery ended `delivered` since then means it did not fail throughout.
    pub unless_delivered_since: Option<i64>,
}

/// Whether `attempt` turns its endpoint off, its delivery's event having happened at
/// `event_at` (Unix seconds): after a `410 Gone`, always; after a delivery given up on (its
/// schedule ran out), unless something was delivered to the endpoint since that event (every
/// delivery failed for the whole retry schedule, about three days). `None` for an attempt that
/// delivered or will be retried.
///
/// Asked only of an attempt whose delivery was still pending when it was recorded: one that
/// ended while the attempt was under way (its endpoint turned off by another's `410`) decides
/// nothing more, the endpoint having perhaps been turned on again since.
pub fn turns_endpoint_off(attempt: &AttemptRecord, event_at: i64) -> Option<TurnOff> {
    match attempt.result {
        AttemptResult::Delivered | AttemptResult::RetryAt(_) => None,
        AttemptResult::Gone => Some(TurnOff {
            reason: "it answered 410 Gone".to_owned(),
            unless_delivered_since: None,
        }),
        AttemptResult::GaveUp => {
            let last = match (&attempt.error, attempt.status) {
                (Some(error), _) => error.clone(),
                (None, Some(status)) => format!("HTTP {status}"),
                (None, None) => "no answer".to_owned(),
            };
            Some(TurnOff {
                reason: format!(
                    "every delivery failed for the whole retry schedule (the last: {last})"
                ),
                unless_delivered_since: Some(event_at),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_start_within_seconds_and_end_after_about_three_days() {
        assert_eq!(retry_delay(0, 0.5), None);
        assert_eq!(retry_delay(1, 0.5), Some(Duration::from_secs(5)));
        assert!(retry_delay(1, 0.0).expect("valid") >= Duration::from_secs(4));
        assert!(retry_delay(1, 1.0).expect("valid") <= Duration::from_secs(6));
        let total: u64 = RETRY_SCHEDULE.iter().sum();
        assert!((70 * 3600..80 * 3600).contains(&total), "{total}");
        assert_eq!(retry_delay(RETRY_SCHEDULE.len() as u32 + 1, 0.5), None);
    }

    #[test]
    fn answers_decide_the_delivery() {
        let decide = |status, retry_after, tries, now| decide(status, retry_after, tries, now, 0.5);
        assert_eq!(decide(Some(204), None, 1, 100), AttemptResult::Delivered);
        assert_eq!(decide(Some(410), None, 1, 100), AttemptResult::Gone);
        assert_eq!(decide(Some(500), None, 1, 100), AttemptResult::RetryAt(105));
        assert_eq!(
            decide(None, None, 1, 100),
            AttemptResult::RetryAt(105),
            "no answer"
        );
        // The schedule's wait, spread by the jitter over ±20%.
        for jitter in [0.0, 1.0] {
            let AttemptResult::RetryAt(at) = super::decide(Some(500), None, 1, 100, jitter) else {
                panic!("a first failure is retried");
            };
            assert!((104..=106).contains(&at), "{at}");
        }
        // A 429's Retry-After is honoured when it is longer than the schedule's wait...
        assert_eq!(
            decide(Some(429), Some(60), 1, 100),
            AttemptResult::RetryAt(160)
        );
        assert_eq!(
            decide(Some(503), Some(10 * 86_400), 1, 0),
            AttemptResult::RetryAt(86_400)
        );
        // ...and ignored on another status.
        assert!(
            matches!(decide(Some(500), Some(60), 1, 100), AttemptResult::RetryAt(at) if at < 110)
        );
        // Redirects are not followed: a failure like any other.
        assert!(matches!(
            decide(Some(302), None, 1, 100),
            AttemptResult::RetryAt(_)
        ));
        let last = RETRY_SCHEDULE.len() as u32 + 1;
        assert_eq!(decide(Some(500), None, last, 100), AttemptResult::GaveUp);
    }

    #[test]
    fn retry_after_is_read_in_seconds_or_as_a_date() {
        let now = SystemTime::now();
        assert_eq!(retry_after(None, now), None);
        assert_eq!(retry_after(Some("120"), now), Some(120));
        assert_eq!(retry_after(Some(" 120 "), now), Some(120));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(600));
        let wait = retry_after(Some(&later), now).expect("a date");
        assert!((599..=600).contains(&wait), "{wait}");
        assert_eq!(
            retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), now),
            Some(0),
            "past"
        );
        assert_eq!(retry_after(Some("soon"), now), None);
    }

    #[test]
    fn a_gone_endpoint_is_turned_off_and_one_given_up_on_unless_it_had_a_delivery() {
        let attempt = |result, status, error: Option<&str>| AttemptRecord {
            delivery: 1,
            lease: 1,
            attempted_at: 500,
            status,
            latency_ms: 10,
            error: error.map(str::to_owned),
            result,
        };
        let gone = turns_endpoint_off(&attempt(AttemptResult::Gone, Some(410), None), 100);
        assert_eq!(
            gone,
            Some(TurnOff {
                reason: "it answered 410 Gone".to_owned(),
                unless_delivered_since: None,
            })
        );
        for (status, error, last) in [
            (Some(500), None, "HTTP 500"),
            (None, Some("connection refused"), "connection refused"),
            (None, None, "no answer"),
        ] {
            let off = turns_endpoint_off(&attempt(AttemptResult::GaveUp, status, error), 100)
                .expect("given up on");
            assert_eq!(off.unless_delivered_since, Some(100));
            assert!(
                off.reason.ends_with(&format!("(the last: {last})")),
                "{off:?}"
            );
        }
        assert_eq!(
            turns_endpoint_off(&attempt(AttemptResult::Delivered, Some(200), None), 100),
            None
        );
        assert_eq!(
            turns_endpoint_off(&attempt(AttemptResult::RetryAt(600), Some(500), None), 100),
            None
        );
    }

    #[test]
    fn only_a_failing_delivery_may_turn_its_endpoint_off() {
        use AttemptResult::{Delivered, GaveUp, Gone, RetryAt};
        for result in [Delivered, RetryAt(600), GaveUp, Gone] {
            let attempt = AttemptRecord {
                delivery: 1,
                lease: 1,
                attempted_at: 500,
                status: None,
                latency_ms: 10,
                error: None,
                result,
            };
            for event_at in [0, 100, 500, i64::MAX] {
                assert_eq!(
                    turns_endpoint_off(&attempt, event_at).is_some(),
                    result.fails_delivery(),
                    "{result:?} at {event_at}"
                );
            }
        }
    }
}
