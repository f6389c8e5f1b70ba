//! `Idempotency-Key` on writes (Stripe's semantics, shared by every instance through the
//! storage): what a create takes from its request ([`CreateRequest`]); `run` claims the key,
//! runs the write once, and answers a retry with the stored response. See
//! `petstore_domain::idempotency` for the rules and `docs/errors.md` for the codes.

use std::future::Future;

use actix_web::body::to_bytes;
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, ContentType, HeaderName, HeaderValue};
use actix_web::web::Bytes;
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};
use futures_util::future::LocalBoxFuture;
use petstore_domain::{
    ClaimOutcome, Completion, Created, Fingerprint, IdempotencyClaim, IdempotencyKey,
    IdempotentRequest, StoredResponse,
};

use crate::auth::{ApiClient, Caller, Write};
use crate::db::storage_call;
use crate::error::{ApiError, Chain};
use crate::extract::{IdempotencyHeader, JsonBytes};
use crate::state::AppState;

/// `Idempotent-Replayed: true`, on a response answered from the stored one.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// What a create takes from its request, checked in this order: the caller (a read-write key),
/// its `Idempotency-Key` if it sent one, and the JSON body as sent (the create parses it, so
/// that a refusal of it is stored under the key).
pub struct CreateRequest {
    req: HttpRequest,
    /// The caller.
    pub caller: Caller<Write>,
    key: Option<IdempotencyKey>,
    /// The body, unparsed.
    pub body: Bytes,
}

impl FromRequest for CreateRequest {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::<Write>::from_request(req, payload);
        let key = IdempotencyHeader::from_request(req, payload);
        let body = JsonBytes::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let caller = caller.await?;
            let IdempotencyHeader(key) = key.await?;
            let JsonBytes(body) = body.await?;
            Ok(Self {
                req,
                caller,
                key,
                body,
            })
        })
    }
}

/// The one path of a create (`POST /pets`, `POST /store/orders`), with an `Idempotency-Key` or
/// without: without one, `create` runs; with one, `run` claims the key first and `create` runs
/// with a [`Completion`] (the claim and the request's base address), which the storage
/// completes with [`StoredResponse::created`] of what it made, in the same transaction. Either
/// way the answer is that same `201`, written here once. A refusal of the key (`409` in
/// progress, `422` reused) links where `Idempotency-Key` is documented: `operation`, the
/// operation's place on the docs page (`pets/createPet`).
pub async fn create<T, F, Fut>(
    state: &AppState,
    request: &CreateRequest,
    operation: &str,
    create: F,
) -> Result<HttpResponse, ApiError>
where
    T: Created,
    F: FnOnce(Option<Completion>) -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let CreateRequest {
        req,
        caller,
        key,
        body,
    } = request;
    let base = state.links.public_base(req);
    let Some(key) = key.clone() else {
        let made = create(None).await?;
        return Ok(respond(StoredResponse::created(&made, &base), false));
    };
    let ran = run(state, req, caller.client(), key, body, |claim| async move {
        let completion = Completion { claim, base };
        let made = create(Some(completion.clone())).await?;
        Ok(StoredResponse::created(&made, &completion.base))
    })
    .await;
    match ran {
        Ok((stored, replayed)) => Ok(respond(stored, replayed)),
        // As draft-ietf-httpapi-idempotency-key-header-07 §2.7 suggests.
        Err(
            refused @ (ApiError::IdempotencyRequestInProgress | ApiError::IdempotencyKeyReused),
        ) => {
            let mut response = refused.error_response();
            let docs = state.links.docs_page(req);
            let documented =
                format!("<{docs}#/{operation}>; rel=\"describedby\"; type=\"text/html\"");
            if let Ok(link) = HeaderValue::try_from(documented) {
                response.headers_mut().append(header::LINK, link);
            }
            Ok(response)
        }
        Err(error) => Err(error),
    }
}

/// Runs the write `write` once per `key`: claims the key for this request (its API key, method,
/// path and `body`), then
///
/// - the same request completed before: its stored response again, `Idempotent-Replayed: true`;
/// - the key used with another request: `422 idempotency_key_reused`;
/// - the same request still running, here or on another instance:
///   `409 idempotency_request_in_progress` with `Retry-After`;
/// - claimed: `write` runs with the claim, and stores its success response itself, in its own
///   transaction (through a `Completion`). A validation error (`400`) it answers is stored here;
///   any other failure frees the key, so that a retry runs again.
async fn run<F, Fut>(
    state: &AppState,
    req: &HttpRequest,
    client: &ApiClient,
    key: IdempotencyKey,
    body: &[u8],
    write: F,
) -> Result<(StoredResponse, bool), ApiError>
where
    F: FnOnce(IdempotencyClaim) -> Fut,
    Fut: Future<Output = Result<StoredResponse, ApiError>>,
{
    let request = IdempotentRequest {
        owner: client.key().id,
        key,
        fingerprint: Fingerprint::of(req.method().as_str(), req.path(), body),
        now: state.clock.unix_seconds(),
        retention: state.idempotency.retention.as_secs(),
        lease: state.idempotency.lease.as_secs(),
    };
    let outcome = storage_call!(state.db, claim_idempotency_key(&request)).await?;
    let claim = match outcome {
        ClaimOutcome::Claimed(claim) => claim,
        ClaimOutcome::Completed(stored) => return Ok((stored, true)),
        ClaimOutcome::InFlight => return Err(ApiError::IdempotencyRequestInProgress),
        ClaimOutcome::Mismatch => return Err(ApiError::IdempotencyKeyReused),
    };
    match write(claim.clone()).await {
        Ok(stored) => Ok((stored, false)),
        Err(error) if is_final(&error) => {
            let stored = stored_error(&error).await?;
            let done = storage_call!(state.db, complete_idempotency_key(&claim, &stored)).await;
            if let Err(failure) = done {
                // The claim stays until its lease ends; a retry meanwhile gets `409`.
                log::warn!(
                    "could not store the outcome of an idempotent request: {}",
                    Chain(&failure)
                );
            }
            Ok((stored, false))
        }
        Err(error) => {
            let released = storage_call!(state.db, release_idempotency_key(&claim)).await;
            if let Err(failure) = released {
                log::warn!(
                    "could not free an idempotency key after a failure: {}",
                    Chain(&failure)
                );
            }
            Err(error)
        }
    }
}

/// Whether the same request must fail the same way whenever it is sent: a validation error
/// (`400`: the body or a parameter breaks a rule). A refusal that depends on the moment (`404`
/// no such pet yet, `409` a pet ordered by someone else, `408`, `429`) or a server error leaves
/// the key free instead, so that a retry later may succeed.
fn is_final(error: &ApiError) -> bool {
    error.status_code() == StatusCode::BAD_REQUEST
}

/// The Error object `error` answers, as stored for replay.
async fn stored_error(error: &ApiError) -> Result<StoredResponse, ApiError> {
    let response = error.error_response();
    let status = response.status().as_u16();
    let body = to_bytes(response.into_body())
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(StoredResponse {
        status,
        location: None,
        body: String::from_utf8(body.to_vec()).map_err(ApiError::internal)?,
    })
}

/// The HTTP response of `stored`: its status, `Location` and JSON body.
fn respond(stored: StoredResponse, replayed: bool) -> HttpResponse {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.content_type(ContentType::json());
    if let Some(location) = stored.location
        && let Ok(location) = HeaderValue::try_from(location)
    {
        response.insert_header((header::LOCATION, location));
    }
    if replayed {
        response.insert_header((REPLAYED, HeaderValue::from_static("true")));
    }
    // A stored error is an Error object `error_response` wrote: its answer is not kept by any
    // cache either.
    if status.is_client_error() || status.is_server_error() {
        response.insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")));
    }
    response.body(stored.body)
}
