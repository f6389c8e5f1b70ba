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

mod builder;
mod cache;
mod error;
mod limits;
pub mod operations;
mod query;
mod retry;
pub mod webhooks;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::stream::{self, Stream, TryStreamExt};
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;

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

use cache::{Kept, Validators};
use operations::Operation;

/// The header that makes a write safe to retry.
const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

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
}

/// What the client knows of its limits, shared by every call.
#[derive(Debug, Default)]
struct Limits {
    /// From the last response's headers.
    last: Option<RateLimitState>,
    /// No request before this (a `429`'s `Retry-After`, a ban).
    blocked_until: Option<Instant>,
}

/// One request, as sent on each attempt.
struct Call {
    method: Method,
    url: Url,
    body: Option<Vec<u8>>,
    idempotency_key: Option<String>,
    /// The tag of the answer kept for a `GET`: the request is conditional, and `304` a success.
    if_none_match: Option<HeaderValue>,
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
        }
    }

    /// The rate-limit state the last response reported (`X-RateLimit-*`: the window closest to
    /// exhaustion), if any response came yet.
    pub fn rate_limit(&self) -> Option<RateLimitState> {
        self.limits().last
    }

    /// `listPets`: one page of pets.
    pub async fn list_pets(&self, query: &PetQuery) -> Result<Listing<Pet>, Error> {
        let url = self.pets_url(query)?;
        self.listing(url).await
    }

    /// Every pet the query matches, page after page (following `Link: rel="next"`) to the end.
    pub fn pets(&self, query: &PetQuery) -> impl Stream<Item = Result<Pet, Error>> + use<> {
        let client = self.clone();
        let first = self.pets_url(query);
        stream::try_unfold(Some(first), move |next| {
            let client = client.clone();
            async move {
                let Some(url) = next else {
                    return Ok(None);
                };
                let page: Listing<Pet> = client.listing(url?).await?;
                let next = page.next.as_deref().map(|next| client.parse_next(next));
                Ok(Some((stream::iter(page.items.into_iter().map(Ok)), next)))
            }
        })
        .try_flatten()
    }

    /// `createPet`, with an `Idempotency-Key` made for this call: however many times it is
    /// retried, one pet is created.
    pub async fn create_pet(&self, pet: &NewPet) -> Result<Pet, Error> {
        let url = self.url(&operations::CREATE_PET, &[])?;
        self.write(url, pet).await
    }

    /// `getPet`.
    ///
    /// Answers [`Error::EndpointRemoved`] once the endpoint is past its sunset.
    #[deprecated(
        since = "0.1.0",
        note = "GET /pets/{petId} is deprecated and removed on 2030-12-05 (its Sunset): use \
                list_pets with a status filter"
    )]
    pub async fn get_pet(&self, id: i64) -> Result<Pet, Error> {
        let url = self.url(&operations::GET_PET, &[("{petId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `listOrders`: one page of this key's orders.
    pub async fn list_orders(&self, query: &OrderQuery) -> Result<Listing<Order>, Error> {
        let mut url = self.url(&operations::LIST_ORDERS, &[])?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(after) = query.after {
                pairs.append_pair("after", &after.to_string());
            }
        }
        tidy_query(&mut url);
        self.listing(url).await
    }

    /// `placeOrder` (experimental), with an `Idempotency-Key` made for this call.
    pub async fn place_order(&self, pet_id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::PLACE_ORDER, &[])?;
        self.write(
            url,
            &NewOrder {
                pet_id,
                quantity: 1,
            },
        )
        .await
    }

    /// `getOrder` (experimental): one of this key's orders.
    pub async fn get_order(&self, id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::GET_ORDER, &[("{orderId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `cancelOrder` (experimental): cancels a placed order.
    pub async fn cancel_order(&self, id: i64) -> Result<Order, Error> {
        let url = self.url(&operations::CANCEL_ORDER, &[("{orderId}", id)])?;
        self.json(Method::POST, url).await
    }

    /// `getInventory` (experimental): how many pets have each status.
    pub async fn inventory(&self) -> Result<Inventory, Error> {
        let url = self.url(&operations::GET_INVENTORY, &[])?;
        self.json(Method::GET, url).await
    }

    /// `getRateLimit`: the key's plan and both windows, without spending a request.
    pub async fn rate_limit_status(&self) -> Result<RateLimitStatus, Error> {
        let url = self.url(&operations::GET_RATE_LIMIT, &[])?;
        self.json(Method::GET, url).await
    }

    /// `listWebhookEndpoints` (experimental): this key's webhook endpoints.
    pub async fn list_webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>, Error> {
        let url = self.url(&operations::LIST_WEBHOOK_ENDPOINTS, &[])?;
        self.json(Method::GET, url).await
    }

    /// `createWebhookEndpoint` (experimental): registers `endpoint`; the answer holds its
    /// signing secret, shown only this once ([`webhooks::WebhookSecret::parse`] reads it).
    /// Not idempotent: a create retried after a `503` may have registered the endpoint already
    /// (list them before creating again).
    pub async fn create_webhook_endpoint(
        &self,
        endpoint: &NewEndpoint,
    ) -> Result<IssuedEndpoint, Error> {
        let url = self.url(&operations::CREATE_WEBHOOK_ENDPOINT, &[])?;
        self.json_with(Method::POST, url, endpoint).await
    }

    /// `getWebhookEndpoint` (experimental).
    pub async fn get_webhook_endpoint(&self, id: i64) -> Result<WebhookEndpoint, Error> {
        let url = self.url(&operations::GET_WEBHOOK_ENDPOINT, &[("{endpointId}", id)])?;
        self.json(Method::GET, url).await
    }

    /// `updateWebhookEndpoint` (experimental): changes the fields `changes` gives.
    pub async fn update_webhook_endpoint(
        &self,
        id: i64,
        changes: &EndpointChanges,
    ) -> Result<WebhookEndpoint, Error> {
        let url = self.url(
            &operations::UPDATE_WEBHOOK_ENDPOINT,
            &[("{endpointId}", id)],
        )?;
        self.json_with(Method::PATCH, url, changes).await
    }

    /// `deleteWebhookEndpoint` (experimental), with its delivery log.
    pub async fn delete_webhook_endpoint(&self, id: i64) -> Result<(), Error> {
        let url = self.url(
            &operations::DELETE_WEBHOOK_ENDPOINT,
            &[("{endpointId}", id)],
        )?;
        let call = Call {
            method: Method::DELETE,
            url,
            body: None,
            idempotency_key: None,
            if_none_match: None,
        };
        self.send(&call).await.map(drop)
    }

    /// `rotateWebhookSecret` (experimental): a new secret, shown only in the answer; the old
    /// one keeps signing (a second signature) for `grace` (the service's default, a day, when
    /// `None`).
    pub async fn rotate_webhook_secret(
        &self,
        id: i64,
        grace: Option<Duration>,
    ) -> Result<IssuedEndpoint, Error> {
        let url = self.url(&operations::ROTATE_WEBHOOK_SECRET, &[("{endpointId}", id)])?;
        let body = match grace {
            Some(grace) => serde_json::json!({ "graceSeconds": grace.as_secs() }),
            None => serde_json::json!({}),
        };
        self.json_with(Method::POST, url, &body).await
    }

    /// `listWebhookDeliveries` (experimental): a page of an endpoint's delivery log, newest
    /// first (`after`: only deliveries older than that id; the next page's is in `next`).
    pub async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        limit: Option<u32>,
        after: Option<i64>,
    ) -> Result<Listing<Delivery>, Error> {
        let mut url = self.url(
            &operations::LIST_WEBHOOK_DELIVERIES,
            &[("{endpointId}", endpoint)],
        )?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(after) = after {
                pairs.append_pair("after", &after.to_string());
            }
        }
        tidy_query(&mut url);
        self.listing(url).await
    }

    /// `getWebhookDelivery` (experimental): one delivery with its attempts.
    pub async fn get_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
    ) -> Result<DeliveryRecord, Error> {
        let url = self.url(
            &operations::GET_WEBHOOK_DELIVERY,
            &[("{endpointId}", endpoint), ("{deliveryId}", delivery)],
        )?;
        self.json(Method::GET, url).await
    }

    /// `redeliverWebhook` (experimental): sends a delivery again (the same `webhook-id`).
    pub async fn redeliver_webhook(&self, endpoint: i64, delivery: i64) -> Result<Delivery, Error> {
        let url = self.url(
            &operations::REDELIVER_WEBHOOK,
            &[("{endpointId}", endpoint), ("{deliveryId}", delivery)],
        )?;
        self.json(Method::POST, url).await
    }

    fn limits(&self) -> std::sync::MutexGuard<'_, Limits> {
        self.inner
            .limits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `operation`'s address, its path parameters filled in.
    fn url(&self, operation: &Operation, params: &[(&str, i64)]) -> Result<Url, Error> {
        let mut path = operation.path.to_owned();
        for (name, value) in params {
            path = path.replace(name, &value.to_string());
        }
        Url::parse(&format!("{}{path}", self.inner.base))
            .map_err(|e| Error::Config(format!("{path}: {e}")))
    }

    fn pets_url(&self, query: &PetQuery) -> Result<Url, Error> {
        let mut url = self.url(&operations::LIST_PETS, &[])?;
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(status) = query.status {
                pairs.append_pair("status", status.as_str());
            }
            if let Some(after) = query.after {
                pairs.append_pair("after", &after.to_string());
            }
        }
        tidy_query(&mut url);
        Ok(url)
    }

    /// A `next` link, which must stay on the service's own origin (the key goes with it).
    fn parse_next(&self, next: &str) -> Result<Url, Error> {
        let url =
            Url::parse(next).map_err(|e| Error::InvalidResponse(format!("Link {next:?}: {e}")))?;
        let base = Url::parse(&self.inner.base).map_err(|e| Error::Config(e.to_string()))?;
        if url.origin() != base.origin() {
            return Err(Error::InvalidResponse(format!(
                "the next page {next:?} is not on {}",
                self.inner.base
            )));
        }
        Ok(url)
    }

    async fn listing<T: DeserializeOwned>(&self, url: Url) -> Result<Listing<T>, Error> {
        let Kept { body, next, .. } = self.get(url).await?;
        Ok(Listing {
            items: parse_json(&body)?,
            next,
        })
    }

    async fn json<T: DeserializeOwned>(&self, method: Method, url: Url) -> Result<T, Error> {
        if method == Method::GET {
            return parse_json(&self.get(url).await?.body);
        }
        let call = Call {
            method,
            url,
            body: None,
            idempotency_key: None,
            if_none_match: None,
        };
        read_json(self.send(&call).await?).await
    }

    /// A request with a JSON `body` and no `Idempotency-Key` (an operation that does not take
    /// one), its JSON answer.
    async fn json_with<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: &B,
    ) -> Result<T, Error> {
        let call = Call {
            method,
            url,
            body: Some(serde_json::to_vec(body).map_err(|e| Error::Config(e.to_string()))?),
            idempotency_key: None,
            if_none_match: None,
        };
        read_json(self.send(&call).await?).await
    }

    /// A `GET` of `url`: its body and `next` link. Conditional when an answer to it is kept
    /// (`If-None-Match` with its tag): a `304` is answered with what was kept. A tagged answer
    /// is kept for next time (an untagged one replaces any kept before).
    async fn get(&self, url: Url) -> Result<Kept, Error> {
        let kept = self.kept().get(&url);
        let call = Call {
            method: Method::GET,
            url,
            body: None,
            idempotency_key: None,
            if_none_match: kept.as_ref().and_then(|kept| kept.etag.clone()),
        };
        let response = match self.send(&call).await {
            Ok(response) => response,
            Err(error) => {
                // Gone: what was kept for it is of no more use.
                if matches!(error.status(), Some(404 | 410)) {
                    self.kept().forget(&call.url);
                }
                return Err(error);
            }
        };
        if response.status() == StatusCode::NOT_MODIFIED {
            return kept.ok_or_else(|| {
                Error::InvalidResponse("304 Not Modified to an unconditional GET".into())
            });
        }
        let next = next_link(response.headers());
        let etag = response.headers().get(header::ETAG).cloned();
        let body = response.bytes().await.map_err(Error::Transport)?.to_vec();
        let answer = Kept { etag, body, next };
        self.kept().put(call.url, &answer);
        Ok(answer)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Validators> {
        self.inner
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A `POST` of `body` with a fresh `Idempotency-Key`, the same on every retry: an answer
    /// cut off in its body is asked for again too (the service replays it; the key was made
    /// here, so the caller could not).
    async fn write<B: serde::Serialize, T: DeserializeOwned>(
        &self,
        url: Url,
        body: &B,
    ) -> Result<T, Error> {
        let call = Call {
            method: Method::POST,
            url,
            body: Some(serde_json::to_vec(body).map_err(|e| Error::Config(e.to_string()))?),
            idempotency_key: Some(uuid::Uuid::now_v7().to_string()),
            if_none_match: None,
        };
        let retry = self.inner.retry;
        // One count of retries for the call, whatever made each one.
        let mut attempt = 0;
        loop {
            match read_json(self.send_counted(&call, &mut attempt).await?).await {
                // The body did not arrive in full (cut off, or past the timeout).
                Err(Error::Transport(_)) if attempt < retry.max_retries => {
                    tokio::time::sleep(retry.backoff(attempt)).await;
                    attempt += 1;
                }
                answer => return answer,
            }
        }
    }

    /// Sends `call`, retrying as the interface asks; the first response that is not a retried
    /// `429`/`503` is returned when it is a success, else its error.
    async fn send(&self, call: &Call) -> Result<reqwest::Response, Error> {
        self.send_counted(call, &mut 0).await
    }

    /// [`Self::send`], counting its retries in `attempt`, which may hold earlier ones.
    async fn send_counted(
        &self,
        call: &Call,
        attempt: &mut u32,
    ) -> Result<reqwest::Response, Error> {
        let retry = self.inner.retry;
        loop {
            self.wait_for_room().await?;
            let mut request = self
                .inner
                .http
                .request(call.method.clone(), call.url.clone())
                .header(header::AUTHORIZATION, self.inner.auth.clone());
            if let Some(body) = &call.body {
                request = request
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            if let Some(key) = &call.idempotency_key {
                request = request.header(IDEMPOTENCY_KEY, key.as_str());
            }
            if let Some(tag) = &call.if_none_match {
                request = request.header(header::IF_NONE_MATCH, tag.clone());
            }
            let response = match request.send().await {
                Ok(response) => response,
                // Unanswered: sent again only when that cannot do anything twice (a read, or a
                // write with its Idempotency-Key). A cancel is not retried: if the first went
                // through, the second would be refused (`409 order_not_cancellable`).
                Err(error)
                    if retry::is_transient(&error)
                        && *attempt < retry.max_retries
                        && (call.method == Method::GET || call.idempotency_key.is_some()) =>
                {
                    tokio::time::sleep(retry.backoff(*attempt)).await;
                    *attempt += 1;
                    continue;
                }
                Err(error) => return Err(Error::Transport(error)),
            };
            self.observe(response.headers());
            let status = response.status();
            let not_modified = status == StatusCode::NOT_MODIFIED && call.if_none_match.is_some();
            if status.is_success() || not_modified {
                return Ok(response);
            }
            let retry_after = retry::retry_after(response.headers());
            let error = error::from_response(response, retry_after).await;
            // `429` (refused before anything was done), `503` when sending again cannot do
            // anything twice (a read, or a write with its Idempotency-Key: a `503` may come after
            // a write went through), and the `409` of a write whose first attempt is still
            // running on the service (a retry after a lost answer can arrive before the first
            // finishes): waited out, then retried.
            let resendable = call.method == Method::GET || call.idempotency_key.is_some();
            let waits = status == StatusCode::TOO_MANY_REQUESTS
                || (status == StatusCode::SERVICE_UNAVAILABLE && resendable)
                || error.code() == Some(ErrorCode::IdempotencyRequestInProgress);
            if !waits {
                return Err(error);
            }
            // Nothing is sent before the instant `Retry-After` names, by any call: held back
            // even when this call gives up rather than wait that long.
            let wait = retry_after.unwrap_or(Duration::ZERO);
            if status == StatusCode::TOO_MANY_REQUESTS {
                self.block_for(wait);
            }
            if wait > self.inner.max_wait {
                return Err(error);
            }
            if error.code() == Some(ErrorCode::TemporarilyBanned) || *attempt >= retry.max_retries {
                return Err(error);
            }
            tokio::time::sleep(wait.max(retry.backoff(*attempt))).await;
            *attempt += 1;
        }
    }

    /// Waits while a `Retry-After` or a used-up window holds requests back; fails when that
    /// is longer than the configured `max_wait`.
    async fn wait_for_room(&self) -> Result<(), Error> {
        loop {
            let wait = {
                let limits = self.limits();
                let blocked = limits
                    .blocked_until
                    .map(|until| until.saturating_duration_since(Instant::now()))
                    .unwrap_or_default();
                let exhausted = match (&limits.last, self.inner.wait_when_exhausted) {
                    // A reset beyond what a clock can hold is "too long".
                    (Some(state), true) if state.remaining == 0 => reset_at(state)
                        .map_or(Duration::MAX, |reset| {
                            reset.duration_since(SystemTime::now()).unwrap_or_default()
                        }),
                    _ => Duration::ZERO,
                };
                blocked.max(exhausted)
            };
            if wait.is_zero() {
                return Ok(());
            }
            if wait > self.inner.max_wait {
                return Err(Error::RateLimitWait(wait));
            }
            tokio::time::sleep(wait).await;
            // The window has reset: what the last response said no longer holds.
            let mut limits = self.limits();
            let passed = |state: &RateLimitState| {
                reset_at(state).is_some_and(|reset| reset <= SystemTime::now())
            };
            if limits.last.as_ref().is_some_and(passed) {
                limits.last = None;
            }
        }
    }

    fn observe(&self, headers: &HeaderMap) {
        if let Some(state) = RateLimitState::from_headers(headers) {
            self.limits().last = Some(state);
        }
    }

    fn block_for(&self, wait: Duration) {
        let Some(until) = Instant::now().checked_add(wait) else {
            return;
        };
        let mut limits = self.limits();
        if limits.blocked_until.is_none_or(|current| current < until) {
            limits.blocked_until = Some(until);
        }
    }
}

/// When the window `state` describes resets (`None` past what the clock can hold).
fn reset_at(state: &RateLimitState) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::from_secs(state.reset))
}

/// `url` without a dangling `?` when no parameter was added.
fn tidy_query(url: &mut Url) {
    if url.query() == Some("") {
        url.set_query(None);
    }
}

async fn read_json<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, Error> {
    parse_json(&response.bytes().await.map_err(Error::Transport)?)
}

fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::InvalidResponse(e.to_string()))
}

/// The target of `Link: <...>; rel="next"`, among every `Link` value.
fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::LINK)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|link| {
            let (target, params) = link.split_once(';')?;
            let rel_next = params
                .split(';')
                .any(|param| param.trim().eq_ignore_ascii_case("rel=\"next\""));
            rel_next.then(|| target.trim().trim_matches(['<', '>']).to_owned())
        })
}

#[cfg(test)]
mod tests;

/// The README's examples, run as documentation tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
