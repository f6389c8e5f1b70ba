//! The Rust client of the Animal Store Service, behaving the way the interface asks clients to
//! behave, by construction:
//!
//! - after a `429` it waits for `Retry-After` (never less) before anything else is sent, even
//!   by a call that gave up rather than wait that long ([`ClientBuilder::max_wait`]), then
//!   retries at most [`RetryPolicy::max_retries`] times with exponential backoff and full jitter;
//!   `503` likewise, and `409 idempotency_request_in_progress` (a write's first attempt still
//!   running); connection errors and timeouts with backoff, and a keyed write's answer cut off
//!   in its body; `503`s and errors only for reads and keyed writes (a cancel that got no
//!   answer, or a `503`, is not sent twice: it may have gone through);
//! - a `429 temporarily_banned` is returned at once, never retried;
//! - when the last response said the window is used up, it waits for the window's reset instead
//!   of collecting a `429` ([`ClientBuilder::wait_when_exhausted`]);
//! - [`Client::create_pet`] and [`Client::place_order`] send an `Idempotency-Key` made once per
//!   call and reused by that call's retries, so a retried write never happens twice;
//! - a `GET` it has an answer to (with its `ETag`) asks again with `If-None-Match`, and a
//!   `304 Not Modified` is answered from what it kept: while nothing changes, polling spends
//!   none of the key's quota, up to its limits' worth of `304`s a minute and a day (the
//!   service's bound; [`ClientBuilder::kept_answers`] bounds the memory);
//! - the API key never shows in `Debug` output, the builder's included;
//! - [`webhooks::WebhookSecret`] verifies a webhook delivery signed as the Standard Webhooks
//!   specification says (constant-time comparison, a timestamp tolerance against replays).
//!
//! The types are the domain's (`petstore-domain`): [`Pet`], [`NewPet`], [`PetStatus`],
//! [`Order`], the error catalogue [`ErrorCode`]; nothing is defined twice.
//!
//! ```no_run
//! use petstore_client::{Client, NewPet, PetQuery, PetStatus};
//!
//! # async fn example() -> Result<(), petstore_client::Error> {
//! let client = Client::builder("https://api.example.com/v1", "pst_0123...").build()?;
//! let rex = NewPet { name: "Rex".into(), category_id: 1, status: None };
//! let created = client.create_pet(&rex).await?;
//! let page = client
//!     .list_pets(&PetQuery::default().status(PetStatus::Available))
//!     .await?;
//! println!("created {}; {} available on the first page", created.id, page.items.len());
//! if let Some(state) = client.rate_limit() {
//!     println!("{} requests left until {}", state.remaining, state.reset);
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod api;
mod builder;
mod cache;
mod error;
mod limits;
pub mod operations;
mod query;
mod request;
mod retry;
pub mod webhooks;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::header::HeaderValue;

pub use builder::ClientBuilder;
pub use error::Error;
pub use limits::RateLimitState;
pub use petstore_domain::webhook::{
    Attempt, Delivery, DeliveryRecord, DeliveryState, EndpointChanges, EventSet, EventType,
    IssuedEndpoint, NewEndpoint, WebhookEndpoint,
};
pub use petstore_domain::{
    ErrorCode, Inventory, NewOrder, NewPet, Order, OrderStatus, Pet, PetStatus, Plan,
    RateLimitStatus, WindowStatus,
};
pub use query::{Listing, OrderQuery, PetQuery};
pub use retry::RetryPolicy;

use cache::Validators;

/// A client of one service, with one API key. Cheap to clone (clones share their connection
/// pool and rate-limit state), and safe to use from many tasks at once.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    base: String,
    auth: HeaderValue,
    retry: RetryPolicy,
    wait_when_exhausted: bool,
    max_wait: Duration,
    limits: Mutex<Limits>,
    /// Answers to `GET`s, with their tags.
    kept: Mutex<Validators>,
    /// What the windows' resets are read against.
    clock: Arc<dyn petstore_domain::Clock>,
}

/// What the client knows of its limits, shared by every call.
#[derive(Debug, Default)]
struct Limits {
    /// From the last response's headers.
    last: Option<RateLimitState>,
    /// No request before this (a `429`'s `Retry-After`, a ban).
    blocked_until: Option<Instant>,
}

impl Client {
    /// A builder for the service at `base_url` (its base address, e.g.
    /// `https://api.example.com/v1`), calling with `api_key`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use petstore_client::{Client, RetryPolicy};
    ///
    /// let client = Client::builder("http://127.0.0.1:8080/v1", "pst_0123")
    ///     .timeout(Duration::from_secs(10))
    ///     .user_agent("inventory-sync/2.1")
    ///     .retry_policy(RetryPolicy::default().max_retries(5))
    ///     .wait_when_exhausted(true)
    ///     .build()?;
    /// assert!(client.rate_limit().is_none(), "nothing was sent yet");
    /// # Ok::<(), petstore_client::Error>(())
    /// ```
    pub fn builder(base_url: impl Into<String>, api_key: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.into(),
            api_key: api_key.into(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            user_agent: concat!("petstore-client/", env!("CARGO_PKG_VERSION")).into(),
            retry: RetryPolicy::default(),
            wait_when_exhausted: true,
            max_wait: Duration::from_secs(120),
            kept_answers: 64,
            clock: Arc::new(petstore_domain::SystemClock),
        }
    }

    /// The rate-limit state the last response reported (`X-RateLimit-*`: the window closest to
    /// exhaustion), if any response came yet.
    pub fn rate_limit(&self) -> Option<RateLimitState> {
        self.limits().last
    }

    fn limits(&self) -> std::sync::MutexGuard<'_, Limits> {
        self.inner
            .limits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;

/// The README's examples, run as documentation tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
