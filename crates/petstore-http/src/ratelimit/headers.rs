//! The rate-limit response headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
//! `X-RateLimit-Reset` (the window closest to exhaustion), the IETF `RateLimit-Policy` and
//! `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers) for both windows, and `Retry-After`.

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use petstore_domain::{Ban, RateDecision, RateLimits, Window};

const LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const STATE: HeaderName = HeaderName::from_static("ratelimit");

/// Headers for a counted request (allowed or refused).
pub fn write(headers: &mut HeaderMap, decision: &RateDecision, now: u64) {
    let binding = decision.binding();
    let windows = [decision.minute, decision.day];
    set(
        headers,
        binding.limit,
        binding.remaining(),
        binding.reset_at,
        windows.map(|w| {
            (
                w.window,
                w.limit,
                w.remaining(),
                w.reset_at.saturating_sub(now),
            )
        }),
    );
    if !decision.allowed {
        headers.insert(header::RETRY_AFTER, decision.retry_after(now).into());
    }
}

/// Headers for a banned client: nothing remains until the ban ends.
pub fn write_ban(headers: &mut HeaderMap, ban: Ban, limits: RateLimits, now: u64) {
    let wait = ban.until.saturating_sub(now).max(1);
    set(
        headers,
        limits.per_minute,
        0,
        ban.until,
        [
            (Window::Minute, limits.per_minute, 0, wait),
            (Window::Day, limits.per_day, 0, wait),
        ],
    );
    headers.insert(header::RETRY_AFTER, wait.into());
}

/// Headers when the counts cannot be known (the shared counter store is down and the service
/// fails closed): no request is available until the store answers again.
pub fn write_unknown(headers: &mut HeaderMap, limits: RateLimits, now: u64) {
    let reset = Window::Minute.reset_at(now);
    let wait = reset - now;
    set(
        headers,
        limits.per_minute,
        0,
        reset,
        [
            (Window::Minute, limits.per_minute, 0, wait),
            (Window::Day, limits.per_day, 0, wait),
        ],
    );
}

fn set(
    headers: &mut HeaderMap,
    limit: u32,
    remaining: u32,
    reset_at: u64,
    windows: [(Window, u32, u32, u64); 2],
) {
    // Written with `itoa` into one buffer per field: `format!` machinery was most of the cost
    // of these headers, which every response carries.
    let mut digits = itoa::Buffer::new();
    headers.insert(LIMIT, value(digits.format(limit).as_bytes()));
    headers.insert(REMAINING, value(digits.format(remaining).as_bytes()));
    headers.insert(RESET, value(digits.format(reset_at).as_bytes()));
    let mut policy = Vec::with_capacity(64);
    let mut state = Vec::with_capacity(64);
    for (i, (window, limit, remaining, reset_in)) in windows.into_iter().enumerate() {
        if i > 0 {
            policy.extend_from_slice(b", ");
            state.extend_from_slice(b", ");
        }
        for (out, field, count, last_field, last) in [
            (&mut policy, "q", u64::from(limit), "w", window.seconds()),
            (&mut state, "r", u64::from(remaining), "t", reset_in),
        ] {
            out.push(b'"');
            out.extend_from_slice(window.name().as_bytes());
            out.extend_from_slice(b"\";");
            out.extend_from_slice(field.as_bytes());
            out.push(b'=');
            out.extend_from_slice(digits.format(count).as_bytes());
            out.push(b';');
            out.extend_from_slice(last_field.as_bytes());
            out.push(b'=');
            out.extend_from_slice(digits.format(last).as_bytes());
        }
    }
    headers.insert(POLICY, value(&policy));
    headers.insert(STATE, value(&state));
}

/// A header value of ASCII digits and punctuation, which is always valid.
fn value(bytes: &[u8]) -> HeaderValue {
    HeaderValue::from_bytes(bytes).unwrap_or_else(|_| HeaderValue::from_static(""))
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
        write(&mut headers, &RateDecision::new(counts, limits, now), now);
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
}
