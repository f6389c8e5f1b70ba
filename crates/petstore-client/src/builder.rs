//! [`ClientBuilder`]: a [`Client`]'s settings, checked once when it is built.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use petstore_domain::Clock;
use reqwest::Url;
use reqwest::header::HeaderValue;

use crate::cache::Validators;
use crate::{Client, Error, Inner, Limits, RetryPolicy};

/// Builds a [`Client`]: [`Client::builder`]. Its `Debug` output leaves the API key out.
#[derive(Clone)]
pub struct ClientBuilder {
    pub(crate) base_url: String,
    pub(crate) api_key: String,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) user_agent: String,
    pub(crate) retry: RetryPolicy,
    pub(crate) wait_when_exhausted: bool,
    pub(crate) max_wait: Duration,
    pub(crate) kept_answers: usize,
    pub(crate) clock: Arc<dyn Clock>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("api_key", &"(hidden)")
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("user_agent", &self.user_agent)
            .field("retry", &self.retry)
            .field("wait_when_exhausted", &self.wait_when_exhausted)
            .field("max_wait", &self.max_wait)
            .field("kept_answers", &self.kept_answers)
            .field("clock", &self.clock)
            .finish()
    }
}

impl ClientBuilder {
    /// How long one request may take, from sending to the end of the body (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long connecting may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The `User-Agent` (default `petstore-client/<version>`).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// How to retry (default [`RetryPolicy::default`]).
    pub fn retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Whether to wait for the window's reset before sending when the last response said the
    /// window is used up, instead of sending and collecting a `429` (default `true`).
    pub fn wait_when_exhausted(mut self, wait: bool) -> Self {
        self.wait_when_exhausted = wait;
        self
    }

    /// The longest the client waits for room before a request (a reset, a `Retry-After`, a
    /// ban); past it the call fails at once with [`Error::RateLimitWait`] (default 2 min: a day
    /// window used up is not waited out).
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// How many answers to `GET`s the client keeps with their `ETag`s, to ask again with
    /// `If-None-Match` and be answered `304` (free of quota, up to the key's limits' worth a
    /// minute and a day) while nothing changed (default 64,
    /// the least recently used dropped first; bodies over 256 KiB are not kept; 0 keeps none).
    pub fn kept_answers(mut self, answers: usize) -> Self {
        self.kept_answers = answers;
        self
    }

    /// The clock the rate-limit window resets (`X-RateLimit-Reset`, Unix time) are read
    /// against (default: the system's; tests set their own, `petstore_domain::ManualClock`).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The client. Fails if the base URL is not an `http` or `https` URL, or the key cannot be
    /// sent in a header.
    pub fn build(self) -> Result<Client, Error> {
        let base = Url::parse(self.base_url.trim_end_matches('/'))
            .map_err(|e| Error::Config(format!("base URL {:?}: {e}", self.base_url)))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(Error::Config(format!(
                "base URL {:?} is not an http(s) URL",
                self.base_url
            )));
        }
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", self.api_key))
            .map_err(|_| Error::Config("the API key is not a valid header value".into()))?;
        auth.set_sensitive(true);
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.connect_timeout)
            .user_agent(self.user_agent)
            .build()
            .map_err(Error::Transport)?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base: base.as_str().trim_end_matches('/').to_owned(),
                auth,
                retry: self.retry,
                wait_when_exhausted: self.wait_when_exhausted,
                max_wait: self.max_wait,
                limits: Mutex::new(Limits::default()),
                kept: Mutex::new(Validators::new(self.kept_answers)),
                clock: self.clock,
            }),
        })
    }
}
