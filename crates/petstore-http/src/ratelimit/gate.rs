//! The admission middleware: who is calling, are they within their limits, and the rate-limit
//! headers on every response (health checks excepted).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, ResponseError, web};
use petstore_domain::{ApiKey, ApiKeyRepository, Ban, KeyHash, RateDecision, RateLimits};

use super::{Subject, Verdict, headers};
use crate::auth::bearer_secret;
use crate::error::{ErrorCode, error_response};
use crate::{ApiClient, ApiError, AppState, db, db_read};

/// Paths that are never limited: load balancers poll them.
const UNLIMITED: [&str; 2] = ["/healthz", "/readyz"];

enum Admission {
    Pass {
        key: Option<ApiKey>,
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
        Admission::Pass { key, decision } => {
            if let Some(key) = key {
                req.extensions_mut().insert(ApiClient { key });
            }
            let mut response = next.call(req).await?;
            headers::write(response.headers_mut(), &decision, now);
            Ok(response.map_into_left_body())
        }
        Admission::Reject(response) => Ok(req.into_response(response).map_into_right_body()),
    }
}

async fn admit(state: &web::Data<AppState>, req: &ServiceRequest, now: u64) -> Admission {
    let limiter = &state.limiter;
    let address = state.trusted_proxies.client_address(req);
    let mut hash = None;
    let key = match bearer_secret(req.headers()) {
        None => None,
        Some(secret) => {
            let key_hash = secret.hash();
            hash = Some(key_hash.clone());
            match state.keys.get(&key_hash) {
                Some(known) => known,
                None => {
                    let lookup = key_hash.clone();
                    match db_read(state, move |store| store.find_active_key(&lookup)).await {
                        Ok(found) => {
                            state.keys.put(key_hash, found.clone());
                            found
                        }
                        Err(error) => {
                            let mut response = error.error_response();
                            headers::write_unknown(response.headers_mut(), limiter.anonymous, now);
                            return Admission::Reject(response);
                        }
                    }
                }
            }
        }
    };
    let (subject, limits) = match &key {
        Some(key) => (Subject::Key(key.id), key.limits()),
        None => (Subject::Address(address), limiter.anonymous),
    };
    if let Some(ban) = key.as_ref().and_then(|key| key.ban_at(now)) {
        return Admission::Reject(banned(ban, limits, now));
    }
    match limiter.check(subject, limits, now).await {
        Ok(Verdict::Allowed(decision)) => Admission::Pass { key, decision },
        Ok(Verdict::Banned(ban)) => Admission::Reject(banned(ban, limits, now)),
        Ok(Verdict::Limited {
            decision,
            previous_ban,
        }) => {
            let known = key.zip(hash);
            refuse(state, subject, known, limits, decision, previous_ban, now).await
        }
        Err(error) => {
            let mut response = error.error_response();
            headers::write_unknown(response.headers_mut(), limits, now);
            Admission::Reject(response)
        }
    }
}

/// `429`: over a limit (and banned if this refusal crosses the ban threshold), or banned.
async fn refuse(
    state: &web::Data<AppState>,
    subject: Subject,
    key: Option<(ApiKey, KeyHash)>,
    limits: RateLimits,
    decision: RateDecision,
    previous_ban: Option<Ban>,
    now: u64,
) -> Admission {
    let policy = state.limiter.bans;
    if !policy.triggers(&decision) {
        let message = format!(
            "rate limit exceeded ({} requests per minute, {} per day); retry after {} s",
            limits.per_minute,
            limits.per_day,
            decision.retry_after(now)
        );
        let mut response = error_response(ErrorCode::RateLimited, &message);
        headers::write(response.headers_mut(), &decision, now);
        return Admission::Reject(response);
    }
    let ban = match key {
        Some((key, hash)) => {
            state.limiter.start_ban(subject, None, now).await;
            ban_key(state, key, hash, now).await
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
            Admission::Reject(banned(ban, limits, now))
        }
        None => {
            let mut response =
                ApiError::Unavailable("could not record a ban".into()).error_response();
            headers::write(response.headers_mut(), &decision, now);
            Admission::Reject(response)
        }
    }
}

/// Bans a key in the database (where `petstore keys` sees and lifts it), unless another
/// instance just did, and refreshes this instance's cached copy. Returns the ban in force.
async fn ban_key(state: &web::Data<AppState>, key: ApiKey, hash: KeyHash, now: u64) -> Option<Ban> {
    let ban = state.limiter.bans.next_ban(key.ban, now);
    let lookup = hash.clone();
    let stored = db(state, move |store| {
        store.ban_key(key.id, ban, now)?;
        store.find_active_key(&lookup)
    })
    .await;
    match stored {
        Ok(found) => {
            let in_force = found.as_ref().and_then(|k| k.ban_at(now));
            state.keys.put(hash, found);
            in_force
        }
        Err(error) => {
            log::error!("could not record a ban of key {}: {error}", key.id);
            None
        }
    }
}

fn banned(ban: Ban, limits: RateLimits, now: u64) -> HttpResponse {
    let wait = ban.until.saturating_sub(now).max(1);
    let message = format!(
        "temporarily banned for continuing to send requests after being rate limited; retry after {wait} s"
    );
    let mut response = error_response(ErrorCode::TemporarilyBanned, &message);
    headers::write_ban(response.headers_mut(), ban, limits, now);
    response
}
