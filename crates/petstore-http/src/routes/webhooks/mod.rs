//! Webhook endpoints (experimental): a key registers where its events are sent (its orders'
//! `order.*`, the pets it creates' `pet.created`), reads each endpoint's delivery log and sends
//! a delivery again. Another key's endpoint is a `404`, so ids do not leak.
//!
//! The handlers are written once for whoever owns the endpoints ([`Owner`]) and make one call
//! of [`operations`] each: the public API serves them for the caller's key (`Caller`), the
//! admin API for the operators' endpoints and for a key's as the operators see them
//! (`admin/webhooks.rs`). Their annotations describe the public API's routes; the admin
//! document describes its own (`petstore-openapi`).

pub mod operations;

use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use petstore_domain::PageRequest;
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, EndpointOwner, IssuedEndpoint, NewEndpoint,
    WebhookEndpoint,
};

use crate::auth::{Caller, Read, Scope};
use crate::error::responses::{
    DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById, EndpointChangeErrors,
    NoParameters, PageParams, ReadOnlyKey,
};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{DeliveryId, EndpointId, JsonBody, NoQuery, Query};
use crate::state::AppState;
use operations::RotateSecretRequest;

/// Whose endpoints a request acts on, as its front-end names them, and what becomes of the
/// changes it makes.
pub trait Owner: FromRequest<Error = ApiError> + 'static {
    /// Whose endpoints these are.
    fn owner(&self) -> EndpointOwner;
    /// The address of the endpoints' collection: a new endpoint's is under it.
    fn collection(&self, state: &AppState, req: &HttpRequest) -> String;
    /// Notes a change made (the admin API writes it to its audit log).
    fn changed(&self, _change: Change<'_>) {}
}

/// A change made to a webhook endpoint, for [`Owner::changed`].
pub enum Change<'a> {
    /// Registered.
    Created(&'a WebhookEndpoint),
    /// Changed, as it is now.
    Updated(&'a WebhookEndpoint),
    /// Deleted: its id.
    Deleted(i64),
    /// Given a new secret: its id.
    Rotated(i64),
    /// A delivery sent again.
    Redelivered {
        /// The endpoint's id.
        endpoint: i64,
        /// The delivery's id.
        delivery: i64,
    },
}

/// The caller's key, whose own endpoints these are.
impl<S: Scope + 'static> Owner for Caller<S> {
    fn owner(&self) -> EndpointOwner {
        EndpointOwner::Key(self.key().id)
    }

    fn collection(&self, state: &AppState, req: &HttpRequest) -> String {
        format!("{}/webhook_endpoints", state.links.public_base(req))
    }
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
pub async fn list_endpoints<O: Owner>(
    state: web::Data<AppState>,
    req: HttpRequest,
    owner: O,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::list(&state, &req, owner.owner()).await
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
pub async fn create_endpoint<O: Owner>(
    state: web::Data<AppState>,
    req: HttpRequest,
    owner: O,
    _: NoQuery,
    JsonBody(body): JsonBody<NewEndpoint>,
) -> Result<HttpResponse, ApiError> {
    let collection = owner.collection(&state, &req);
    let (endpoint, response) = operations::create(&state, &collection, owner.owner(), body).await?;
    owner.changed(Change::Created(&endpoint));
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
pub async fn get_endpoint<O: Owner>(
    state: web::Data<AppState>,
    req: HttpRequest,
    owner: O,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::get(&state, &req, owner.owner(), id).await
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
pub async fn update_endpoint<O: Owner>(
    state: web::Data<AppState>,
    owner: O,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<EndpointChanges>,
) -> Result<HttpResponse, ApiError> {
    let (endpoint, response) = operations::update(&state, owner.owner(), id, body).await?;
    owner.changed(Change::Updated(&endpoint));
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
pub async fn delete_endpoint<O: Owner>(
    state: web::Data<AppState>,
    owner: O,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let response = operations::delete(&state, owner.owner(), id).await?;
    owner.changed(Change::Deleted(id));
    Ok(response)
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
pub async fn rotate_secret<O: Owner>(
    state: web::Data<AppState>,
    owner: O,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<RotateSecretRequest>,
) -> Result<HttpResponse, ApiError> {
    let response = operations::rotate(&state, owner.owner(), id, body).await?;
    owner.changed(Change::Rotated(id));
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
    operations::delivery_log(&state, &req, caller.owner(), id, page).await
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
pub async fn get_delivery<O: Owner>(
    state: web::Data<AppState>,
    req: HttpRequest,
    owner: O,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::delivery_record(&state, &req, owner.owner(), endpoint, delivery).await
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
pub async fn redeliver<O: Owner>(
    state: web::Data<AppState>,
    owner: O,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let response = operations::send_again(&state, owner.owner(), endpoint, delivery).await?;
    owner.changed(Change::Redelivered { endpoint, delivery });
    Ok(response)
}
