//! Webhook endpoints (experimental): a key registers where its events are sent (its orders'
//! `order.*`, the pets it creates' `pet.created`), reads each endpoint's delivery log and sends
//! a delivery again. Another key's endpoint is a `404`, so ids do not leak.
//!
//! The handlers of a key's own endpoints: each takes the caller's key as the owner and makes
//! one call of [`operations`], which are written once for any owner and served by the admin API
//! too (the operators' endpoints, which receive every event, and a key's as operators see them).

pub(crate) mod operations;

use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::PageRequest;
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, EndpointOwner, IssuedEndpoint, NewEndpoint,
    WebhookEndpoint,
};

use crate::auth::{Caller, Read, Scope, Write};
use crate::error::responses::{
    DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById, EndpointChangeErrors,
    NoParameters, PageParams, ReadOnlyKey,
};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{DeliveryId, EndpointId, JsonBody, NoQuery, Query};
use crate::state::AppState;
use operations::RotateSecretRequest;

/// The caller's key, whose endpoints these are.
fn owner<S: Scope>(caller: &Caller<S>) -> EndpointOwner {
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
    operations::list(&state, &req, owner(&caller)).await
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
    let (_, response) = operations::create(&state, &collection, owner(&caller), body).await?;
    Ok(response)
}

/// `getWebhookEndpoint`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "getWebhookEndpoint",
    tag = "webhooks",
    summary = "Get one of your webhook endpoints (experimental)",
    params(EndpointId),
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
    operations::get(&state, &req, owner(&caller), id).await
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
    params(EndpointId),
    request_body(content = EndpointChanges, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, changed.", body = WebhookEndpoint),
        (status = 409, description = "`webhook_endpoint_url_taken`: another endpoint has the \
            new `url`.", body = ErrorObject),
        EndpointChangeErrors,
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
    let (_, response) = operations::update(&state, owner(&caller), id, body).await?;
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
    params(EndpointId),
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
    operations::delete(&state, owner(&caller), id).await
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
    params(EndpointId),
    request_body(content = RotateSecretRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, with its new secret.", body = IssuedEndpoint),
        EndpointChangeErrors,
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
    operations::rotate(&state, owner(&caller), id, body).await
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
    params(EndpointId, PageParams),
    responses(
        (status = 200, description = "A page of deliveries.", body = Vec<Delivery>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when older deliveries follow."),
        )),
        DeliveryLogErrors,
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
    operations::delivery_log(&state, &req, owner(&caller), id, page).await
}

/// `getWebhookDelivery`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
    operation_id = "getWebhookDelivery",
    tag = "webhooks",
    summary = "One delivery of one of your webhook endpoints, with its attempts (experimental)",
    params(EndpointId, DeliveryId),
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
    operations::delivery_record(&state, &req, owner(&caller), endpoint, delivery).await
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
    params(EndpointId, DeliveryId),
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
    operations::send_again(&state, owner(&caller), endpoint, delivery).await
}
