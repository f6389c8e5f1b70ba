//! Webhook endpoints (experimental): a key registers where its events are sent (its orders'
//! `order.*`, the pets it creates' `pet.created`), reads each endpoint's delivery log and sends
//! a delivery again. Another key's endpoint is a `404`, so ids do not leak.
//!
//! The operations are written once for any owner (`create`, `list`, ..., below the handlers'
//! shared helpers) and served here for a key's own endpoints and by the admin API for the
//! operators', which receive every event. Each parses and checks its input, makes one storage
//! call and maps the answer; an endpoint's URL is checked against the service's policy and where
//! its host leads by the resolver the program hands over (`AppState::receivers`: no request
//! forgery towards the service's own networks; the sender checks again where it connects).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use petstore_domain::webhook::ReceiverRefused;
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, EndpointOwner, EndpointUrl, EndpointWrite,
    IssuedEndpoint, MAX_ENDPOINTS, NewEndpoint, WebhookEndpoint,
};
use petstore_domain::{PageRequest, ValidationError};
use serde::Deserialize;

use super::respond::{json_body, tagged_bytes};
use crate::auth::{Caller, Read, Write};
use crate::conditional::Caching;
use crate::error::responses::{
    DeliveryById, EndpointBodyErrors, EndpointById, NoParameters, PageParams, ReadOnlyKey,
};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{DeliveryId, EndpointId, JsonBody, NoQuery, Query};
use crate::state::AppState;

fn owner<S: crate::auth::Scope>(caller: &Caller<S>) -> EndpointOwner {
    EndpointOwner::Key(caller.key().id)
}

/// `listWebhookEndpoints`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints",
    operation_id = "listWebhookEndpoints",
    tag = "webhooks",
    summary = "List your webhook endpoints (experimental)",
    description = "Your endpoints (at most 20), in id order. Secrets are never shown again.",
    responses(
        (status = 200, description = "Your endpoints.", body = Vec<WebhookEndpoint>),
        NoParameters,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn list_endpoints(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    list(&state, &req, owner(&caller)).await
}

/// `createWebhookEndpoint`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints",
    operation_id = "createWebhookEndpoint",
    tag = "webhooks",
    summary = "Register a webhook endpoint (experimental)",
    description = "Events of the types named are sent to `url`, signed as the Standard \
        Webhooks specification (v1) says, with the `secret` in this answer (shown only here): \
        `order.placed`, `order.approved`, `order.delivered`, `order.cancelled` for your orders, \
        `pet.created` for the pets you create. `url` must be `https` and must not name or \
        resolve to an address of a private, loopback, link-local or reserved network. Needs a \
        read-write key.",
    request_body(content = NewEndpoint, content_type = "application/json"),
    responses(
        (status = 201, description = "The endpoint, with its signing secret.",
            body = IssuedEndpoint,
            headers(("Location" = String, description = "The endpoint's address."))),
        (status = 409, description = "`webhook_endpoint_limit_reached`: you have 20 endpoints; \
            `webhook_endpoint_url_taken`: one of them has this URL already.", body = ErrorObject),
        EndpointBodyErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn create_endpoint(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Write>,
    _: NoQuery,
    JsonBody(body): JsonBody<NewEndpoint>,
) -> Result<HttpResponse, ApiError> {
    let collection = format!("{}/webhook_endpoints", state.links.public_base(&req));
    let (_, response) = create(&state, &collection, owner(&caller), body).await?;
    Ok(response)
}

/// `getWebhookEndpoint`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "getWebhookEndpoint",
    tag = "webhooks",
    summary = "Get one of your webhook endpoints (experimental)",
    params(("endpointId" = i64, Path, description = "The endpoint's id.")),
    responses(
        (status = 200, description = "The endpoint.", body = WebhookEndpoint),
        EndpointById,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn get_endpoint(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    get(&state, &req, owner(&caller), id).await
}

/// `updateWebhookEndpoint`.
#[utoipa::path(
    patch,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "updateWebhookEndpoint",
    tag = "webhooks",
    summary = "Change one of your webhook endpoints (experimental)",
    description = "Changes the fields given. `enabled: false` stops deliveries (events are no \
        longer recorded for it, and those waiting fail); `enabled: true` turns an endpoint the \
        service turned off back on. Needs a read-write key.",
    params(("endpointId" = i64, Path, description = "The endpoint's id.")),
    request_body(content = EndpointChanges, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, changed.", body = WebhookEndpoint),
        (status = 404, description = "`webhook_endpoint_not_found`.", body = ErrorObject),
        (status = 409, description = "`webhook_endpoint_url_taken`: another endpoint has the \
            new `url`.", body = ErrorObject),
        EndpointBodyErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn update_endpoint(
    state: web::Data<AppState>,
    caller: Caller<Write>,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<EndpointChanges>,
) -> Result<HttpResponse, ApiError> {
    let (_, response) = update(&state, owner(&caller), id, body).await?;
    Ok(response)
}

/// `deleteWebhookEndpoint`.
#[utoipa::path(
    delete,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "deleteWebhookEndpoint",
    tag = "webhooks",
    summary = "Delete one of your webhook endpoints (experimental)",
    description = "With its delivery log; nothing more is sent to it. Needs a read-write key.",
    params(("endpointId" = i64, Path, description = "The endpoint's id.")),
    responses(
        (status = 204, description = "Deleted."),
        EndpointById,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn delete_endpoint(
    state: web::Data<AppState>,
    caller: Caller<Write>,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    delete(&state, owner(&caller), id).await
}

/// `rotateWebhookSecret`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints/{endpointId}/rotate_secret",
    operation_id = "rotateWebhookSecret",
    tag = "webhooks",
    summary = "Give one of your webhook endpoints a new secret (experimental)",
    description = "The new secret is in this answer only. Until the grace period ends, each \
        delivery carries two signatures (the new secret's and the old's, space-separated in \
        `webhook-signature`), so receivers can switch at their pace. Needs a read-write key.",
    params(("endpointId" = i64, Path, description = "The endpoint's id.")),
    request_body(content = RotateSecretRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, with its new secret.", body = IssuedEndpoint),
        (status = 404, description = "`webhook_endpoint_not_found`.", body = ErrorObject),
        EndpointBodyErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn rotate_secret(
    state: web::Data<AppState>,
    caller: Caller<Write>,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<RotateSecretRequest>,
) -> Result<HttpResponse, ApiError> {
    let (_, response) = rotate(&state, owner(&caller), id, body).await?;
    Ok(response)
}

/// `listWebhookDeliveries`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}/deliveries",
    operation_id = "listWebhookDeliveries",
    tag = "webhooks",
    summary = "The delivery log of one of your webhook endpoints (experimental)",
    description = "Its deliveries, newest first: each event, where its delivery stands \
        (`pending`, `delivered`, `failed`), its attempts, the last one's status, latency and \
        error, and the next attempt's time. Paged with `limit` and `after` (older than that \
        id), following the `next` link. Ended deliveries are kept 30 days.",
    params(("endpointId" = i64, Path, description = "The endpoint's id."), PageParams),
    responses(
        (status = 200, description = "A page of deliveries.", body = Vec<Delivery>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when older deliveries follow."),
        )),
        (status = 400, description = "`invalid_path_parameter`, `invalid_query_parameter` or \
            `unknown_query_parameter`.", body = ErrorObject),
        (status = 404, description = "`webhook_endpoint_not_found`.", body = ErrorObject),
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn list_deliveries(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    EndpointId(id): EndpointId,
    Query(page): Query<PageRequest>,
) -> Result<HttpResponse, ApiError> {
    let deliveries = deliveries(&state, owner(&caller), id, page).await?;
    let mut response = HttpResponse::Ok();
    if let Some(after) = deliveries.next_after {
        let path = format!("/webhook_endpoints/{id}/deliveries");
        let link = state
            .links
            .next_page(&req, &path, page.limit.get(), None, after);
        response.insert_header((header::LINK, link));
    }
    tagged_json(&req, response, &deliveries.items)
}

/// `getWebhookDelivery`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
    operation_id = "getWebhookDelivery",
    tag = "webhooks",
    summary = "One delivery of one of your webhook endpoints, with its attempts (experimental)",
    params(
        ("endpointId" = i64, Path, description = "The endpoint's id."),
        ("deliveryId" = i64, Path, description = "The delivery's id."),
    ),
    responses(
        (status = 200, description = "The delivery and its attempts (the latest 100).",
            body = DeliveryRecord),
        DeliveryById,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn get_delivery(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    delivery_record(&state, &req, owner(&caller), endpoint, delivery).await
}

/// `redeliverWebhook`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver",
    operation_id = "redeliverWebhook",
    tag = "webhooks",
    summary = "Send a delivery again (experimental)",
    description = "Whatever its state: it is pending again, sent within seconds with the same \
        `webhook-id` (receivers deduplicate by it), and retried on the schedule from the start. \
        Needs a read-write key.",
    params(
        ("endpointId" = i64, Path, description = "The endpoint's id."),
        ("deliveryId" = i64, Path, description = "The delivery's id."),
    ),
    responses(
        (status = 202, description = "The delivery, pending.", body = Delivery),
        (status = 409, description = "`webhook_endpoint_disabled`: the endpoint is turned \
            off.", body = ErrorObject),
        DeliveryById,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn redeliver(
    state: web::Data<AppState>,
    caller: Caller<Write>,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let (_, response) = send_again(&state, owner(&caller), endpoint, delivery).await?;
    Ok(response)
}

/// How long a rotated-out secret keeps signing when the request does not say: a day.
const DEFAULT_GRACE: u64 = 24 * 3600;
/// The longest grace a rotation may give: a week.
const MAX_GRACE: u64 = 7 * 24 * 3600;

/// `POST .../rotate_secret`'s body (`{}` for the default).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
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

/// Checks where `url`'s host leads (the program's resolver; see `ReceiverCheck`).
async fn check_target(state: &AppState, url: &EndpointUrl) -> Result<(), ApiError> {
    state
        .receivers
        .check(url, state.webhook_policy)
        .await
        .map_err(|refused| match refused {
            ReceiverRefused::NotPublic | ReceiverRefused::TooSlow(_) => {
                ApiError::WebhookUrlRefused(refused.to_string())
            }
            ReceiverRefused::Busy(within) => ApiError::ResolverUnavailable(within),
            ReceiverRefused::Failed(reason) => ApiError::internal(reason),
        })
}

/// `value` as JSON, tagged by its bytes (a `304` when `If-None-Match` names them): these
/// representations are read rarely, so they are encoded before the tag is known rather than
/// fingerprinted field by field as a pet is.
pub(crate) fn tagged_json(
    req: &HttpRequest,
    response: HttpResponseBuilder,
    value: &impl serde::Serialize,
) -> Result<HttpResponse, ApiError> {
    let body = serde_json::to_vec(value).map_err(ApiError::internal)?;
    Ok(tagged_bytes(req, response, body, Caching::Private))
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
    check_target(state, &spec.url).await?;
    let written = state
        .db
        .call("create_webhook_endpoint", |storage| {
            storage.create_webhook_endpoint(owner, &spec)
        })
        .await?;
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
    let endpoints = state
        .db
        .call("list_webhook_endpoints", |storage| {
            storage.list_webhook_endpoints(owner)
        })
        .await?;
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
    state
        .db
        .call("find_webhook_endpoint", |storage| {
            storage.find_webhook_endpoint(id, owner)
        })
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
        check_target(state, url).await?;
    }
    let written = state
        .db
        .call("update_webhook_endpoint", |storage| {
            storage.update_webhook_endpoint(id, owner, &update)
        })
        .await?;
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
    let deleted = state
        .db
        .call("delete_webhook_endpoint", |storage| {
            storage.delete_webhook_endpoint(id, owner)
        })
        .await?;
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
) -> Result<(WebhookEndpoint, HttpResponse), ApiError> {
    let grace = body.grace_seconds.unwrap_or(DEFAULT_GRACE);
    if grace > MAX_GRACE {
        return Err(ValidationError::InvalidField {
            field: "graceSeconds".into(),
            reason: format!("must be at most {MAX_GRACE} (a week)"),
        }
        .into());
    }
    let grace_until = state
        .clock
        .unix_now()
        .saturating_add(i64::try_from(grace).unwrap_or(i64::MAX));
    let (endpoint, secret) = state
        .db
        .call("rotate_webhook_secret", |storage| {
            storage.rotate_webhook_secret(id, owner, grace_until)
        })
        .await?
        .ok_or(ApiError::WebhookEndpointNotFound(id))?;
    let issued = IssuedEndpoint::new(endpoint.clone(), &secret);
    Ok((endpoint, secret_body(HttpResponse::Ok(), &issued)))
}

/// An answer showing a signing secret: never stored by a cache on the way (`no-store`), as a
/// new API key's is not.
fn secret_body(mut response: HttpResponseBuilder, issued: &IssuedEndpoint) -> HttpResponse {
    response.insert_header((header::CACHE_CONTROL, "no-store"));
    json_body(response, issued, 1)
}

/// A page of endpoint `id`'s deliveries, newest first.
pub(crate) async fn deliveries(
    state: &AppState,
    owner: EndpointOwner,
    id: i64,
    page: PageRequest,
) -> Result<petstore_domain::Page<Delivery>, ApiError> {
    state
        .db
        .call("list_webhook_deliveries", |storage| {
            storage.list_webhook_deliveries(id, owner, page)
        })
        .await?
        .ok_or(ApiError::WebhookEndpointNotFound(id))
}

/// Delivery `delivery` of endpoint `endpoint` (`owner`'s), with its attempts.
pub(crate) async fn delivery_record(
    state: &AppState,
    req: &HttpRequest,
    owner: EndpointOwner,
    endpoint: i64,
    delivery: i64,
) -> Result<HttpResponse, ApiError> {
    let found = state
        .db
        .call("find_webhook_delivery", |storage| {
            storage.find_webhook_delivery(endpoint, delivery, owner)
        })
        .await?;
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
) -> Result<(Delivery, HttpResponse), ApiError> {
    if !find(state, owner, endpoint).await?.enabled {
        return Err(ApiError::WebhookEndpointDisabled(endpoint));
    }
    let now = state.clock.unix_now();
    let redelivered = state
        .db
        .call("redeliver_webhook", |storage| {
            storage.redeliver_webhook(endpoint, delivery, owner, now)
        })
        .await?
        .ok_or(ApiError::WebhookDeliveryNotFound { endpoint, delivery })?;
    let response = json_body(HttpResponse::Accepted(), &redelivered, 1);
    Ok((redelivered, response))
}
