//! The rate-limit response headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
//! `X-RateLimit-Reset` (the window closest to exhaustion), the IETF `RateLimit-Policy` and
//! `RateLimit` fields for both windows, as draft-ietf-httpapi-ratelimit-headers-11 writes them:
//! Lists of Items named by a String (`"minute"`, `"day"`), with the Integer parameters `q`
//! and `w` (§3.1) and `r` and `t` (§4.1). A refusal's
//! `Retry-After` is its error's, written with the Error object (`error::error_response`).

use std::convert::Infallible;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::web::Bytes;
use petstore_domain::{Ban, RateDecision, RateLimits, Window};
use quick_cache::sync::Cache;

const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const STATE: HeaderName = HeaderName::from_static("ratelimit");

/// The header values that depend only on a caller's limits (`X-RateLimit-Limit` for either
/// window, and `RateLimit-Policy`). Kept in a [`HeaderCache`] rather than built on every
/// response (what that saves: docs/performance.md). Cloning one is three reference counts.
#[derive(Debug, Clone)]
pub struct LimitHeaders {
    per_minute: HeaderValue,
    per_day: HeaderValue,
    policy: HeaderValue,
}

impl LimitHeaders {
    /// The values for `limits`.
    pub fn new(limits: RateLimits) -> Self {
        let mut policy = Vec::with_capacity(64);
        for (i, (window, limit)) in [
            (Window::Minute, limits.per_minute),
            (Window::Day, limits.per_day),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                policy.extend_from_slice(b", ");
            }
            push_item(
                &mut policy,
                window,
                b"q",
                limit.into(),
                b"w",
                window.seconds(),
            );
        }
        Self {
            per_minute: limits.per_minute.into(),
            per_day: limits.per_day.into(),
            policy: value(policy),
        }
    }

    fn limit(&self, window: Window) -> &HeaderValue {
        match window {
            Window::Minute => &self.per_minute,
            Window::Day => &self.per_day,
        }
    }
}

/// [`LimitHeaders`] per distinct limits: every key of a plan shares its plan's, so there are a
/// handful (plus one per enterprise key with limits of its own). Bounded at
/// [`HeaderCache::CAPACITY`]: past it, the limits least in use are evicted.
#[derive(Debug)]
pub struct HeaderCache(Cache<RateLimits, LimitHeaders>);

impl Default for HeaderCache {
    fn default() -> Self {
        Self(Cache::new(Self::CAPACITY))
    }
}

impl HeaderCache {
    /// Most entries kept.
    pub const CAPACITY: usize = 4_096;

    /// The values for `limits`, built on first use.
    pub fn get(&self, limits: RateLimits) -> LimitHeaders {
        let Ok(headers) = self
            .0
            .get_or_insert_with(&limits, || Ok::<_, Infallible>(LimitHeaders::new(limits)));
        headers
    }
}

/// Headers for a counted request (allowed or refused), under the caller's `limits`.
pub fn write(headers: &mut HeaderMap, decision: &RateDecision, limits: &LimitHeaders, now: u64) {
    let binding = decision.binding();
    set(
        headers,
        limits,
        binding.window,
        binding.remaining(),
        binding.reset_at,
        [decision.minute, decision.day]
            .map(|w| (w.window, w.remaining(), w.reset_at.saturating_sub(now))),
    );
}

/// Headers for a banned client: nothing remains until the ban ends.
pub fn write_ban(headers: &mut HeaderMap, ban: Ban, limits: &LimitHeaders, now: u64) {
    let wait = ban.until.saturating_sub(now).max(1);
    set(
        headers,
        limits,
        Window::Minute,
        0,
        ban.until,
        [(Window::Minute, 0, wait), (Window::Day, 0, wait)],
    );
}

/// Headers when the counts cannot be known (the shared counter store is down and the service
/// fails closed, or the key could not be looked up): nothing is available until the refusal's
/// `Retry-After` (`retry_after`), when the service may know again; the fields say the same
/// wait, never a reset later than the client is told to come back. Without a `Retry-After`,
/// until the minute's window turns.
pub fn write_unknown(
    headers: &mut HeaderMap,
    limits: &LimitHeaders,
    now: u64,
    retry_after: Option<u64>,
) {
    let reset = retry_after.map_or_else(
        || Window::Minute.reset_at(now),
        |wait| now.saturating_add(wait),
    );
    let wait = reset - now;
    set(
        headers,
        limits,
        Window::Minute,
        0,
        reset,
        [(Window::Minute, 0, wait), (Window::Day, 0, wait)],
    );
}

/// Writes the five fields: `binding` is the window the `X-RateLimit-*` fields describe, and
/// `windows` holds each window's remaining requests and seconds to its reset.
fn set(
    headers: &mut HeaderMap,
    limits: &LimitHeaders,
    binding: Window,
    remaining: u32,
    reset_at: u64,
    windows: [(Window, u32, u64); 2],
) {
    let mut state = Vec::with_capacity(64);
    for (i, (window, remaining, reset_in)) in windows.into_iter().enumerate() {
        if i > 0 {
            state.extend_from_slice(b", ");
        }
        push_item(&mut state, window, b"r", remaining.into(), b"t", reset_in);
    }
    headers.insert(LIMIT, limits.limit(binding).clone());
    headers.insert(REMAINING, HeaderValue::from(remaining));
    headers.insert(RESET, HeaderValue::from(reset_at));
    headers.insert(POLICY, limits.policy.clone());
    headers.insert(STATE, value(state));
}

/// `"<window>";<first>=<a>;<second>=<b>`: one item of a structured-field list.
fn push_item(out: &mut Vec<u8>, window: Window, first: &[u8], a: u64, second: &[u8], b: u64) {
    let mut digits = itoa::Buffer::new();
    out.push(b'"');
    out.extend_from_slice(window.name().as_bytes());
    out.extend_from_slice(b"\";");
    out.extend_from_slice(first);
    out.push(b'=');
    out.extend_from_slice(digits.format(a).as_bytes());
    out.push(b';');
    out.extend_from_slice(second);
    out.push(b'=');
    out.extend_from_slice(digits.format(b).as_bytes());
}

/// A header value of ASCII digits and punctuation, which is always valid.
fn value(bytes: impl Into<Bytes>) -> HeaderValue {
    HeaderValue::from_maybe_shared(bytes.into()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use petstore_domain::Counts;

    #[test]
    fn headers_describe_the_binding_window_and_both_policies() {
        let limits = RateLimits {
            per_minute: 60,
            per_day: 1_000,
        };
        let now = 1_795_264_496; // 12:34:56
        let counts = Counts {
            allowed: true,
            minute_used: 10,
            day_used: 995,
            rejected: 0,
        };
        let mut headers = HeaderMap::new();
        let decision = RateDecision::new(counts, limits, now);
        write(&mut headers, &decision, &LimitHeaders::new(limits), now);
        let get = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        };
        assert_eq!(get("x-ratelimit-limit"), "1000");
        assert_eq!(get("x-ratelimit-remaining"), "5");
        assert_eq!(get("x-ratelimit-reset"), "1795305600");
        assert_eq!(
            get("ratelimit-policy"),
            "\"minute\";q=60;w=60, \"day\";q=1000;w=86400"
        );
        assert_eq!(get("ratelimit"), "\"minute\";r=50;t=4, \"day\";r=5;t=41104");
        assert_eq!(get("retry-after"), "");
    }

    #[test]
    fn a_flood_of_distinct_limits_stays_bounded_and_every_answer_is_right() {
        let cache = HeaderCache(Cache::new(100));
        let plan = RateLimits {
            per_minute: 60,
            per_day: 1_000,
        };
        for n in 1..10_000 {
            let custom = RateLimits {
                per_minute: n,
                per_day: 1_000_000,
            };
            let headers = cache.get(custom);
            assert_eq!(headers.per_minute, HeaderValue::from(n));
            assert_eq!(cache.get(plan).per_day, HeaderValue::from(1_000u32));
        }
        assert!(cache.0.len() <= 100, "bounded: {}", cache.0.len());
    }
}
