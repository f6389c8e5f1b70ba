//! The admission middleware: who is calling, are they within their limits, and the rate-limit
//! headers on every response (health checks excepted).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError, web};
use petstore_domain::{ApiKey, ApiKeyRepository, ApiKeySecret, Ban, RateDecision, RateLimits};

use super::{LimitHeaders, Subject, Verdict, headers};
use crate::auth::{KeyFingerprint, bearer_token};
use crate::error::{ErrorCode, error_response};
use crate::{ApiClient, ApiError, AppState, db, db_read};

/// Paths that are never limited: load balancers poll them.
const UNLIMITED: [&str; 2] = ["/healthz", "/readyz"];

enum Admission {
    Pass {
        client: Option<ApiClient>,
        decision: RateDecision,
    },
    Reject(HttpResponse),
}

/// Identifies the caller (a valid key, else the client address), counts the request, refuses it
/// with `429` when over a limit or banned, and writes the rate-limit headers on the response.
/// A refused request does no further work: no body is read, nothing is written. The only
/// database read on the way is the key lookup, done once per key-cache period per key (unknown
/// keys are cached too), before the caller is known.
pub async fn gate(
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
    match admit(&state, &req, now).await {
        Admission::Pass { client, decision } => {
            if let Some(client) = &client {
                req.extensions_mut().insert(client.clone());
            }
            let mut response = next.call(req).await?;
            let limit_headers = client
                .as_ref()
                .map_or(&state.limiter.anonymous_headers, ApiClient::limit_headers);
            headers::write(response.headers_mut(), &decision, limit_headers, now);
            Ok(response.map_into_left_body())
        }
        Admission::Reject(response) => Ok(req.into_response(response).map_into_right_body()),
    }
}

async fn admit(state: &web::Data<AppState>, req: &ServiceRequest, now: u64) -> Admission {
    let limiter = &state.limiter;
    let address = state.trusted_proxies.client_address(req);
    let token = bearer_token(req.headers());
    let fingerprint = token.map(|token| state.keys.fingerprint(token));
    let client = match token.zip(fingerprint) {
        None => None,
        Some((token, fingerprint)) => match state.keys.get(fingerprint) {
            Some(known) => known,
            None => match look_up_key(state, token, fingerprint).await {
                Ok(found) => found,
                Err(error) => {
                    let mut response = error.error_response();
                    headers::write_unknown(response.headers_mut(), &limiter.anonymous_headers, now);
                    return Admission::Reject(response);
                }
            },
        },
    };
    let (subject, limits, limit_headers) = match &client {
        Some(client) => (
            Subject::Key(client.key().id),
            client.key().limits(),
            client.limit_headers(),
        ),
        None => (
            Subject::Address(address),
            limiter.anonymous,
            &limiter.anonymous_headers,
        ),
    };
    if let Some(ban) = client.as_ref().and_then(|c| c.key().ban_at(now)) {
        return Admission::Reject(banned(ban, limit_headers, now));
    }
    match limiter.check(subject, limits, now).await {
        Ok(Verdict::Allowed(decision)) => Admission::Pass { client, decision },
        Ok(Verdict::Banned(ban)) => Admission::Reject(banned(ban, limit_headers, now)),
        Ok(Verdict::Limited {
            decision,
            previous_ban,
        }) => {
            let refused = Refused {
                key: client.as_ref().zip(token.zip(fingerprint)),
                limits,
                limit_headers,
            };
            refuse(state, subject, refused, decision, previous_ban, now).await
        }
        Err(error) => {
            let mut response = error.error_response();
            headers::write_unknown(response.headers_mut(), limit_headers, now);
            Admission::Reject(response)
        }
    }
}

/// Who a refused request came from: its key (with the token and fingerprint it was presented
/// and cached under), if any, and the limits it was counted against.
struct Refused<'a> {
    key: Option<(&'a ApiClient, (&'a [u8], KeyFingerprint))>,
    limits: RateLimits,
    limit_headers: &'a LimitHeaders,
}

/// `429`: over a limit (and banned if this refusal crosses the ban threshold), or banned.
async fn refuse(
    state: &web::Data<AppState>,
    subject: Subject,
    refused: Refused<'_>,
    decision: RateDecision,
    previous_ban: Option<Ban>,
    now: u64,
) -> Admission {
    let policy = state.limiter.bans;
    let Refused {
        key,
        limits,
        limit_headers,
    } = refused;
    if !policy.triggers(&decision) {
        let message = format!(
            "rate limit exceeded ({} requests per minute, {} per day); retry after {} s",
            limits.per_minute,
            limits.per_day,
            decision.retry_after(now)
        );
        let mut response = error_response(ErrorCode::RateLimited, &message);
        headers::write(response.headers_mut(), &decision, limit_headers, now);
        return Admission::Reject(response);
    }
    let ban = match key {
        Some((client, (token, fingerprint))) => {
            state.limiter.start_ban(subject, None, now).await;
            ban_key(state, client.key(), token, fingerprint, now).await
        }
        None => {
            let ban = policy.next_ban(previous_ban, now);
            state.limiter.start_ban(subject, Some(ban), now).await;
            Some(ban)
        }
    };
    match ban {
        Some(ban) => {
            log::warn!(
                "{subject} banned until {} (ban #{} in a row) for requests after 429s",
                ban.until,
                ban.level
            );
            Admission::Reject(banned(ban, limit_headers, now))
        }
        None => {
            let mut response =
                ApiError::Unavailable("could not record a ban".into()).error_response();
            headers::write(response.headers_mut(), &decision, limit_headers, now);
            Admission::Reject(response)
        }
    }
}

/// Reads the key presented as `token` from the database (the one per-request database read
/// on the way in, which the key cache saves on all but one request per key and cache period),
/// and caches the answer.
async fn look_up_key(
    state: &web::Data<AppState>,
    token: &[u8],
    fingerprint: KeyFingerprint,
) -> Result<Option<ApiClient>, ApiError> {
    // A token that is not even shaped like a key is not worth a query, nor a cache entry.
    let secret = std::str::from_utf8(token)
        .ok()
        .and_then(ApiKeySecret::parse);
    let Some(hash) = secret.map(|secret| secret.hash()) else {
        return Ok(None);
    };
    let found = db_read(state, move |store| store.find_active_key(&hash))
        .await?
        .map(ApiClient::new);
    state.keys.put(fingerprint, found.clone());
    Ok(found)
}

/// Bans a key in the database (where `petstore keys` sees and lifts it), unless another
/// instance just did, and refreshes this instance's cached copy. Returns the ban in force.
async fn ban_key(
    state: &web::Data<AppState>,
    key: &ApiKey,
    token: &[u8],
    fingerprint: KeyFingerprint,
    now: u64,
) -> Option<Ban> {
    let ban = state.limiter.bans.next_ban(key.ban, now);
    let id = key.id;
    let stored = db(state, move |store| store.ban_key(id, ban, now)).await;
    let found = match stored {
        Ok(_) => look_up_key(state, token, fingerprint).await,
        Err(error) => Err(error),
    };
    match found {
        Ok(found) => found.and_then(|client| client.key().ban_at(now)),
        Err(error) => {
            log::error!("could not record a ban of key {}: {error}", key.id);
            None
        }
    }
}

fn banned(ban: Ban, limits: &LimitHeaders, now: u64) -> HttpResponse {
    let wait = ban.until.saturating_sub(now).max(1);
    let message = format!(
        "temporarily banned for continuing to send requests after being rate limited; retry after {wait} s"
    );
    let mut response = error_response(ErrorCode::TemporarilyBanned, &message);
    headers::write_ban(response.headers_mut(), ban, limits, now);
    response
}
