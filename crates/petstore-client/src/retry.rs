//! When and how long to wait before trying again.

use std::time::Duration;

use reqwest::header::{self, HeaderMap};

/// How the client retries a request that got no answer, a `429` or a `503`. Built from the
/// default (`RetryPolicy::default().max_retries(5)`): the struct is non-exhaustive, so that a
/// setting can be added in a minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 3; 0: never retry).
    pub max_retries: u32,
    /// The first backoff's ceiling (default 200 ms); each retry doubles it.
    pub base_delay: Duration,
    /// The largest backoff ceiling (default 30 s).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first backoff's ceiling; each retry doubles it.
    #[must_use]
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// The largest backoff ceiling.
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The wait before retry number `attempt + 1`: exponential backoff with full jitter, a
    /// random duration between zero and `min(max_delay, base_delay * 2^attempt)`, so that many
    /// clients failing together do not retry together. A `Retry-After` is waited in full on top
    /// of the choice: the longer of the two is slept.
    ///
    /// ```
    /// use std::time::Duration;
    /// use petstore_client::RetryPolicy;
    ///
    /// let policy = RetryPolicy::default(); // 3 retries, 200 ms doubling, at most 30 s
    /// assert!(policy.backoff(0) <= Duration::from_millis(200));
    /// assert!(policy.backoff(2) <= Duration::from_millis(800));
    /// assert!(policy.backoff(20) <= Duration::from_secs(30));
    /// ```
    pub fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// `Retry-After` in seconds (the service sends whole seconds; an HTTP date is not used).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = headers
        .get(header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// Whether a failed send may have a different outcome if tried again (the connection failed or
/// was lost, or the request timed out), as opposed to a request that cannot be built.
pub(crate) fn is_transient(error: &reqwest::Error) -> bool {
    !(error.is_builder() || error.is_redirect() || error.is_decode() || error.is_status())
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_ceiling() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        for attempt in 0..8 {
            let ceiling = Duration::from_millis((100u64 << attempt.min(10)).min(500));
            let waits: Vec<Duration> = (0..200).map(|_| policy.backoff(attempt)).collect();
            assert!(waits.iter().all(|w| *w <= ceiling), "attempt {attempt}");
            // Jitter: not one fixed value (200 draws from a continuum).
            assert!(waits.iter().any(|w| *w != waits[0]), "attempt {attempt}");
        }
        assert!(policy.backoff(u32::MAX) <= policy.max_delay);
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("17"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(17)));
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }
}
