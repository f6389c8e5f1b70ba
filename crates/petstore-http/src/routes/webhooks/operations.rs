//! The webhook endpoints' operations, written once for any owner ([`EndpointOwner`]: a key, or
//! the operators): served by the public API for a key's own endpoints ([`super`]) and by the
//! admin API for the operators' and for a key's as the operators see them. Each checks its
//! input, makes one storage call and maps the answer; an endpoint's URL is checked against the
//! service's policy and where its host leads by the resolver the program hands over
//! (`AppState::receivers`: no request forgery towards the service's own networks; the sender
//! checks again where it connects). `create` and `update` hand back the endpoint too, for the
//! admin API's audit line.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, EndpointOwner, EndpointUrl, EndpointWrite,
    IssuedEndpoint, MAX_ENDPOINTS, NewEndpoint, ReceiverRefused, WebhookEndpoint, grace_until,
};
use petstore_domain::{Page, PageRequest};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::storage_call;
use crate::error::ApiError;
use crate::routes::respond::{json_body, tagged_json};
use crate::state::AppState;

/// `POST .../rotate_secret`'s body (`{}` for the default).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateSecretRequest {
    /// How long the old secret keeps signing deliveries (a second signature beside the new
    /// one's), in seconds: default 86400 (a day), 0 for not at all (after a leak), at most
    /// 604800 (a week).
    #[schema(examples(86400), minimum = 0, maximum = 604800)]
    #[serde(default, deserialize_with = "whole_seconds")]
    grace_seconds: Option<u64>,
}

/// A number of seconds written as a whole number (`3`, `3.0`: JSON Schema's integers), or
/// `null` for the default.
fn whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Whole(#[serde(deserialize_with = "petstore_domain::pet::whole_number")] i64);
    match Option::<Whole>::deserialize(d)? {
        None => Ok(None),
        Some(Whole(n)) => u64::try_from(n).map(Some).map_err(|_| {
            serde::de::Error::invalid_value(serde::de::Unexpected::Signed(n), &"seconds, 0 or more")
        }),
    }
}

// As the admin API shows one (the public API's is an array and a `next` link); the doc comment
// is the schema's description.
/// A page of deliveries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryPage {
    /// The deliveries, newest first.
    deliveries: Vec<Delivery>,
    /// The cursor of the next (older) page (`after`), or `null` on the last page.
    next_after: Option<i64>,
}

/// Checks where `url`'s host leads, for `owner` (the program's resolver; see `ReceiverCheck`).
async fn check_target(
    state: &AppState,
    url: &EndpointUrl,
    owner: EndpointOwner,
) -> Result<(), ApiError> {
    state
        .receivers
        .check(url, state.webhook_policy, owner)
        .await
        .map_err(|refused| match refused {
            ReceiverRefused::NotPublic | ReceiverRefused::TooSlow(_) => {
                ApiError::WebhookUrlRefused(refused.to_string())
            }
            ReceiverRefused::Busy(within) => ApiError::ResolverUnavailable(within),
            ReceiverRefused::Failed(reason) => ApiError::internal(reason),
        })
}

/// Creates an endpoint for `owner` from `body`: `201` with its secret, and its address under
/// `collection` (the address of the endpoints' collection).
pub(crate) async fn create(
    state: &AppState,
    collection: &str,
    owner: EndpointOwner,
    body: NewEndpoint,
) -> Result<(WebhookEndpoint, HttpResponse), ApiError> {
    let policy = state.webhook_policy;
    let spec = body.validate(policy)?;
    check_target(state, &spec.url, owner).await?;
    let written = storage_call!(state.db, create_webhook_endpoint(owner, &spec)).await?;
    let (endpoint, secret) = written_or_refused(written, 0)?;
    let location = format!("{collection}/{}", endpoint.id);
    let mut response = HttpResponse::Created();
    response.insert_header((header::LOCATION, location));
    let issued = IssuedEndpoint::new(endpoint.clone(), &secret);
    Ok((endpoint, secret_body(response, &issued)))
}

/// What was written, or why not (endpoint `id` when it was a change).
fn written_or_refused<T>(written: EndpointWrite<T>, id: i64) -> Result<T, ApiError> {
    match written {
        EndpointWrite::Done(value) => Ok(value),
        EndpointWrite::NotFound => Err(ApiError::WebhookEndpointNotFound(id)),
        EndpointWrite::LimitReached => Err(ApiError::WebhookEndpointLimitReached(MAX_ENDPOINTS)),
        EndpointWrite::UrlTaken(other) => Err(ApiError::WebhookEndpointUrlTaken(other)),
    }
}

/// `owner`'s endpoints.
pub(crate) async fn list(
    state: &AppState,
    req: &HttpRequest,
    owner: EndpointOwner,
) -> Result<HttpResponse, ApiError> {
    let endpoints = storage_call!(state.db, list_webhook_endpoints(owner)).await?;
    tagged_json(req, HttpResponse::Ok(), &endpoints)
}

/// Endpoint `id`, `owner`'s.
pub(crate) async fn get(
    state: &AppState,
    req: &HttpRequest,
    owner: EndpointOwner,
    id: i64,
) -> Result<HttpResponse, ApiError> {
    let endpoint = find(state, owner, id).await?;
    tagged_json(req, HttpResponse::Ok(), &endpoint)
}

async fn find(
    state: &AppState,
    owner: EndpointOwner,
    id: i64,
) -> Result<WebhookEndpoint, ApiError> {
    storage_call!(state.db, find_webhook_endpoint(id, owner))
        .await?
        .ok_or(ApiError::WebhookEndpointNotFound(id))
}

/// Applies `body` to endpoint `id` (`owner`'s).
pub(crate) async fn update(
    state: &AppState,
    owner: EndpointOwner,
    id: i64,
    body: EndpointChanges,
) -> Result<(WebhookEndpoint, HttpResponse), ApiError> {
    let policy = state.webhook_policy;
    let update = body.validate(policy)?;
    if let Some(url) = &update.url {
        check_target(state, url, owner).await?;
    }
    let written = storage_call!(state.db, update_webhook_endpoint(id, owner, &update)).await?;
    let endpoint = written_or_refused(written, id)?;
    let response = json_body(HttpResponse::Ok(), &endpoint, 1);
    Ok((endpoint, response))
}

/// Deletes endpoint `id` (`owner`'s): `204`.
pub(crate) async fn delete(
    state: &AppState,
    owner: EndpointOwner,
    id: i64,
) -> Result<HttpResponse, ApiError> {
    let deleted = storage_call!(state.db, delete_webhook_endpoint(id, owner)).await?;
    if !deleted {
        return Err(ApiError::WebhookEndpointNotFound(id));
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Gives endpoint `id` (`owner`'s) a new secret: `200` with it.
pub(crate) async fn rotate(
    state: &AppState,
    owner: EndpointOwner,
    id: i64,
    body: RotateSecretRequest,
) -> Result<HttpResponse, ApiError> {
    let grace_until = grace_until(state.clock.unix_now(), body.grace_seconds)?;
    let (endpoint, secret) = storage_call!(state.db, rotate_webhook_secret(id, owner, grace_until))
        .await?
        .ok_or(ApiError::WebhookEndpointNotFound(id))?;
    let issued = IssuedEndpoint::new(endpoint, &secret);
    Ok(secret_body(HttpResponse::Ok(), &issued))
}

/// An answer showing a signing secret: never stored by a cache on the way (`no-store`), as a
/// new API key's is not.
fn secret_body(mut response: HttpResponseBuilder, issued: &IssuedEndpoint) -> HttpResponse {
    response.insert_header((header::CACHE_CONTROL, "no-store"));
    json_body(response, issued, 1)
}

/// How a page of an endpoint's deliveries is shown.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shown {
    /// As the public API's lists are: the deliveries, and a `next` link when older ones follow.
    Linked,
    /// As the admin API's lists are: a [`DeliveryPage`], with its cursor.
    WithCursor,
}

/// A page of endpoint `id`'s deliveries (`owner`'s), newest first, shown as `shown` says.
pub(crate) async fn delivery_page(
    state: &AppState,
    req: &HttpRequest,
    owner: EndpointOwner,
    id: i64,
    page: PageRequest,
    shown: Shown,
) -> Result<HttpResponse, ApiError> {
    let Page { items, next_after } =
        storage_call!(state.db, list_webhook_deliveries(id, owner, page))
            .await?
            .ok_or(ApiError::WebhookEndpointNotFound(id))?;
    match shown {
        Shown::Linked => {
            let mut response = HttpResponse::Ok();
            if let Some(after) = next_after {
                let path = format!("/webhook_endpoints/{id}/deliveries");
                let link = state
                    .links
                    .next_page(req, &path, page.limit.get(), None, after);
                response.insert_header((header::LINK, link));
            }
            tagged_json(req, response, &items)
        }
        Shown::WithCursor => {
            let page = DeliveryPage {
                deliveries: items,
                next_after,
            };
            tagged_json(req, HttpResponse::Ok(), &page)
        }
    }
}

/// Delivery `delivery` of endpoint `endpoint` (`owner`'s), with its attempts.
pub(crate) async fn delivery_record(
    state: &AppState,
    req: &HttpRequest,
    owner: EndpointOwner,
    endpoint: i64,
    delivery: i64,
) -> Result<HttpResponse, ApiError> {
    let found = storage_call!(state.db, find_webhook_delivery(endpoint, delivery, owner)).await?;
    let Some((found, attempts)) = found else {
        // Which is missing: the endpoint (not the caller's) or the delivery.
        find(state, owner, endpoint).await?;
        return Err(ApiError::WebhookDeliveryNotFound { endpoint, delivery });
    };
    let record = DeliveryRecord {
        delivery: found,
        attempts,
    };
    tagged_json(req, HttpResponse::Ok(), &record)
}

/// Sends delivery `delivery` of endpoint `endpoint` (`owner`'s) again: `202` with the
/// delivery, pending. Refused for an endpoint that is turned off.
pub(crate) async fn send_again(
    state: &AppState,
    owner: EndpointOwner,
    endpoint: i64,
    delivery: i64,
) -> Result<HttpResponse, ApiError> {
    if !find(state, owner, endpoint).await?.enabled {
        return Err(ApiError::WebhookEndpointDisabled(endpoint));
    }
    let now = state.clock.unix_now();
    let redelivered = storage_call!(state.db, redeliver_webhook(endpoint, delivery, owner, now))
        .await?
        .ok_or(ApiError::WebhookDeliveryNotFound { endpoint, delivery })?;
    Ok(json_body(HttpResponse::Accepted(), &redelivered, 1))
}
