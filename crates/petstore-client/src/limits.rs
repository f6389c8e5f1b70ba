//! The rate-limit state the service reports on every response.

use reqwest::header::HeaderMap;

/// `X-RateLimit-*` of the last response: the window closest to exhaustion (the minute, or the
/// day when fewer of its requests are left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimitState {
    /// Requests allowed in that window.
    pub limit: u32,
    /// Requests left in it.
    pub remaining: u32,
    /// Unix time (seconds) at which it resets.
    pub reset: u64,
}

impl RateLimitState {
    /// The state `headers` report, if they carry all three values.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
        Some(Self {
            limit: u32::try_from(number("x-ratelimit-limit")?).ok()?,
            remaining: u32::try_from(number("x-ratelimit-remaining")?).ok()?,
            reset: number("x-ratelimit-reset")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn the_state_is_read_from_the_three_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-limit", HeaderValue::from_static("60"));
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        assert_eq!(RateLimitState::from_headers(&headers), None, "incomplete");
        headers.insert("x-ratelimit-reset", HeaderValue::from_static("1795393020"));
        assert_eq!(
            RateLimitState::from_headers(&headers),
            Some(RateLimitState {
                limit: 60,
                remaining: 0,
                reset: 1_795_393_020
            })
        );
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("-1"));
        assert_eq!(RateLimitState::from_headers(&headers), None, "malformed");
    }
}
