//! The application-wide layer: authentication and rate limiting composed (this is the one place
//! that knows both, and the storage where key bans are kept), inside the JSON-error safety net.

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use petstore_domain::Ban;

use super::json_errors::json_errors;
use crate::auth::{ApiClient, Credentials};
use crate::connection::Connection;
use crate::error::ApiError;
use crate::ratelimit::headers;
use crate::ratelimit::{
    Caller, KeyBans, LimitError, RATE_LIMIT_PATH, RateStatus, Subject, Verdict,
};
use crate::report::Chain;
use crate::state::AppState;

/// Paths that are never limited: load balancers and Prometheus poll them.
const UNLIMITED: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Identifies the caller (a valid key, else the client address), counts the request, refuses it
/// with `429` when over a limit or banned, and writes the rate-limit headers on the response;
/// then rewrites any non-JSON error response as an Error object. A refused request does no
/// further work: no body is read, nothing is written. The only storage read on the way is the
/// key lookup, once per key-cache period per key (unknown keys are cached too).
pub async fn admission(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // A chunked body that an error answer leaves unread would be drained for as long as the
    // client cares to stall it (see `connection`): stop reading once answered.
    let connection = Connection::of_chunked(&req);
    // Inner services answer errors as responses, so an `Err` here is not expected.
    let response = gate(req, next).await?.map_into_boxed_body();
    if let Some(connection) = connection {
        connection.answered(response.status());
    }
    Ok(json_errors(response))
}

async fn gate(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    if UNLIMITED.contains(&req.path()) {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let state = req
        .app_data::<web::Data<AppState>>()
        .expect("BUG: AppState is registered by app()")
        .clone();
    let now = state.clock.unix_seconds();
    let limiter = &state.limiter;
    let credentials = state.auth.credentials(req.headers());
    let client = match credentials {
        None => None,
        Some(credentials) => match state.auth.authenticate(&state.db, credentials, now).await {
            Ok(found) => found,
            Err(error) => {
                let limits = limiter.limit_headers(limiter.anonymous_limits());
                return Ok(refuse(req, &error, |h| {
                    headers::write_unknown(h, &limits, now)
                }));
            }
        },
    };
    let caller = match &client {
        Some(client) => Caller {
            subject: Subject::Key(client.key().id),
            limits: client.key().limits(),
            ban: client.key().ban,
        },
        None => Caller {
            subject: limiter.address_subject(state.trusted_proxies.client_address(&req)),
            limits: limiter.anonymous_limits(),
            ban: None,
        },
    };
    let limits = limiter.limit_headers(caller.limits);
    let key_bans = StoredBans {
        state: &state,
        credentials,
    };
    if let Some(client) = &client {
        record_use(&state, client, now);
    }
    // The rate-limit status spends nothing: the caller's standing is read, not counted.
    // Only a key's own reads of its status are free: anything else there (no key, another
    // method) is counted like any request.
    let status_only = client.is_some()
        && matches!(*req.method(), Method::GET | Method::HEAD)
        && is_rate_limit_status(req.match_info().as_str(), &state);
    let verdict = if status_only {
        limiter.peek(&caller, now).await
    } else {
        let verdict = limiter.check(&caller, now, &key_bans).await;
        count_decision(&state, &verdict, &caller, client.as_ref());
        verdict
    };
    // For the handlers, and the access log (refusals included).
    if let Some(client) = client {
        req.extensions_mut().insert(client);
    }
    match verdict {
        Ok(Verdict::Allowed(decision)) => {
            if status_only {
                req.extensions_mut().insert(RateStatus {
                    decision,
                    limits: caller.limits,
                });
            }
            let mut response = next.call(req).await?;
            headers::write(response.headers_mut(), &decision, &limits, now);
            Ok(response.map_into_left_body())
        }
        Ok(Verdict::Limited(decision)) => {
            let error = ApiError::RateLimited {
                limits: caller.limits,
                retry_after: decision.retry_after(now),
            };
            Ok(refuse(req, &error, |h| {
                headers::write(h, &decision, &limits, now)
            }))
        }
        Ok(Verdict::Banned(ban)) => {
            let error = ApiError::TemporarilyBanned {
                retry_after: ban.until.saturating_sub(now).max(1),
            };
            Ok(refuse(req, &error, |h| {
                headers::write_ban(h, ban, &limits, now)
            }))
        }
        Err(error) => {
            let decision = match &error {
                LimitError::BanNotRecorded { decision, .. } => Some(*decision),
                LimitError::Counters(_) => None,
            };
            let error = ApiError::from(error);
            Ok(refuse(req, &error, |h| match decision {
                Some(decision) => headers::write(h, &decision, &limits, now),
                None => headers::write_unknown(h, &limits, now),
            }))
        }
    }
}

/// `{base}/rate_limit`, as routing sees the path (percent-decoded, as the router matches it).
fn is_rate_limit_status(path: &str, state: &AppState) -> bool {
    path.strip_prefix(state.links.settings().base_path()) == Some(RATE_LIMIT_PATH)
}

/// Records the key's use, at most once a minute per key on this instance, in the background
/// (the request does not wait for it; a failure is logged).
fn record_use(state: &web::Data<AppState>, client: &ApiClient, now: u64) {
    let id = client.key().id;
    if !state.auth.usage.note(id, now) {
        return;
    }
    let state = state.clone();
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    actix_web::rt::spawn(async move {
        if let Err(error) = state
            .db
            .call("touch_key", |storage| storage.touch_key(id, now))
            .await
        {
            log::warn!("could not record the use of key {id}: {}", Chain(&error));
        }
    });
}

/// Counts the decision in [`crate::telemetry::metric::RATE_LIMIT_DECISIONS`].
fn count_decision(
    state: &AppState,
    verdict: &Result<Verdict, LimitError>,
    caller: &Caller,
    client: Option<&ApiClient>,
) {
    let outcome = match verdict {
        Ok(Verdict::Allowed(_)) => "allowed",
        Ok(Verdict::Limited(_)) => "limited",
        Ok(Verdict::Banned(_)) => "banned",
        Err(_) => "error",
    };
    state.request_metrics.decision(
        outcome,
        client.map_or("anonymous", |client| client.key().plan.as_str()),
        caller.subject.kind(),
    );
}

/// The error's response, with the rate-limit headers `write` puts on it.
fn refuse<B>(
    req: ServiceRequest,
    error: &ApiError,
    write: impl FnOnce(&mut HeaderMap),
) -> ServiceResponse<EitherBody<B>> {
    let mut response = error.error_response();
    write(response.headers_mut());
    req.into_response(response).map_into_right_body()
}

/// Key bans, kept with the keys in the storage (where `petstore keys` sees and lifts them).
struct StoredBans<'a> {
    state: &'a AppState,
    /// What the caller presented: after a ban the key is read again under it, so this
    /// instance's cache holds the ban in force.
    credentials: Option<Credentials<'a>>,
}

impl KeyBans for StoredBans<'_> {
    fn ban_key(
        &self,
        id: i64,
        ban: Ban,
        now: u64,
    ) -> LocalBoxFuture<'_, Result<Option<Ban>, Box<dyn std::error::Error + Send + Sync>>> {
        async move {
            let state = self.state;
            // `false` when another instance just imposed one: the key read below has it.
            state
                .db
                .call("ban_key", |storage| storage.ban_key(id, ban, now))
                .await?;
            let Some(credentials) = self.credentials else {
                return Ok(None);
            };
            let client: Option<ApiClient> = state.auth.look_up(&state.db, credentials).await?;
            Ok(client.and_then(|client| client.key().ban_at(now)))
        }
        .boxed_local()
    }
}
