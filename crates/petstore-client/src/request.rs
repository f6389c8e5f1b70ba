//! How a [`Client`] sends a request, by the rules the interface puts on clients: addresses
//! filled in, conditional `GET`s answered from the kept answers, writes with their
//! `Idempotency-Key`, the retry loop (`Retry-After`, backoff, what may be sent twice), and
//! waiting for room in the rate limit.

use std::sync::PoisonError;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;

use crate::cache::{Kept, Validators};
use crate::operations::{self, Operation};
use crate::{Client, Error, ErrorCode, Listing, PetQuery, RateLimitState, error, retry};

/// The header that makes a write safe to retry.
const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// One request, as sent on each attempt.
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) idempotency_key: Option<String>,
    /// The tag of the answer kept for a `GET`: the request is conditional, and `304` a success.
    pub(crate) if_none_match: Option<HeaderValue>,
}

impl Client {
    /// `operation`'s address, its path parameters filled in.
    pub(crate) fn url(&self, operation: &Operation, params: &[(&str, i64)]) -> Result<Url, Error> {
        let mut path = operation.path.to_owned();
        for (name, value) in params {
            path = path.replace(name, &value.to_string());
        }
        Url::parse(&format!("{}{path}", self.inner.base))
            .map_err(|e| Error::Config(format!("{path}: {e}")))
    }

    pub(crate) fn pets_url(&self, query: &PetQuery) -> Result<Url, Error> {
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
    pub(crate) fn parse_next(&self, next: &str) -> Result<Url, Error> {
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

    pub(crate) async fn listing<T: DeserializeOwned>(&self, url: Url) -> Result<Listing<T>, Error> {
        let Kept { body, next, .. } = self.get(url).await?;
        Ok(Listing {
            items: parse_json(&body)?,
            next,
        })
    }

    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
    ) -> Result<T, Error> {
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
    pub(crate) async fn json_with<B: serde::Serialize, T: DeserializeOwned>(
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
    pub(crate) async fn write<B: serde::Serialize, T: DeserializeOwned>(
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
    pub(crate) async fn send(&self, call: &Call) -> Result<reqwest::Response, Error> {
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
                    (Some(state), true) if state.remaining == 0 => {
                        reset_at(state).map_or(Duration::MAX, |reset| {
                            reset
                                .duration_since(self.inner.clock.now())
                                .unwrap_or_default()
                        })
                    }
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
                reset_at(state).is_some_and(|reset| reset <= self.inner.clock.now())
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
pub(crate) fn tidy_query(url: &mut Url) {
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
pub(crate) fn next_link(headers: &HeaderMap) -> Option<String> {
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
