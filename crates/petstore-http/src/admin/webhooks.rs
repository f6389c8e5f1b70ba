//! `/admin/v1/webhook_endpoints`: the operators' webhook endpoints, which receive every event
//! (every key's orders and pets). The same operations as a key's own endpoints
//! ([`crate::routes::webhooks::operations`]), each change written to the audit log ([`audit`],
//! which [`super::key_webhooks`] writes with too).

use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::PageRequest;
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, EndpointOwner, IssuedEndpoint, NewEndpoint,
    WebhookEndpoint, loggable_url,
};

use super::token::Admin;
use super::{ADMIN_BASE, AUDIT_LOG};
use crate::error::responses::{
    DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById, EndpointChangeErrors,
};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{DeliveryId, EndpointId, JsonBody, NoQuery, Query};
use crate::routes::webhooks::operations::{self, DeliveryPage, RotateSecretRequest};
use crate::state::AppState;

const OPERATORS: EndpointOwner = EndpointOwner::Operator;

/// What an operator changed of a webhook endpoint, for its audit line.
pub(super) enum Change<'a> {
    Created(&'a WebhookEndpoint),
    Updated(&'a WebhookEndpoint),
    Deleted(i64),
    Rotated(i64),
    Redelivered { endpoint: i64, delivery: i64 },
}

/// One audit line: who (the admin token), what, which endpoint (and whose, when a key's). A
/// URL is written by [`loggable_url`] (no query: it may hold the receiver's token).
pub(super) fn audit(admin: &Admin, owner: EndpointOwner, change: Change<'_>) {
    let whose = match owner {
        EndpointOwner::Key(key) => format!(" of key {key}"),
        EndpointOwner::Operator => String::new(),
    };
    let (action, endpoint, detail) = match change {
        Change::Created(endpoint) => {
            let detail = format!(" for {}", loggable_url(&endpoint.url));
            ("created", endpoint.id, detail)
        }
        Change::Updated(endpoint) => {
            let now = if endpoint.enabled {
                "enabled"
            } else {
                "disabled"
            };
            let detail = format!(" ({now}, {})", loggable_url(&endpoint.url));
            ("updated", endpoint.id, detail)
        }
        Change::Deleted(id) => ("deleted", id, String::new()),
        Change::Rotated(id) => ("rotated the secret of", id, String::new()),
        Change::Redelivered { endpoint, delivery } => {
            ("redelivered", endpoint, format!(" (delivery {delivery})"))
        }
    };
    tracing::info!(
        target: AUDIT_LOG,
        admin_token_id = admin.0.id,
        admin_token_label = %admin.0.label,
        action,
        webhook_endpoint_id = endpoint,
        "admin token {} ({}) {action} webhook endpoint {endpoint}{whose}{detail}",
        admin.0.id,
        admin.0.label,
    );
}

/// `listOperatorWebhookEndpoints`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints",
    operation_id = "listOperatorWebhookEndpoints",
    tag = "webhooks",
    summary = "List the operators' webhook endpoints",
    description = "They receive every event of every key (at most 20 endpoints).",
    responses(
        (status = 200, description = "The endpoints.", body = Vec<WebhookEndpoint>),
    ),
)]
pub async fn list_endpoints(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::list(&state, &req, OPERATORS).await
}

/// `createOperatorWebhookEndpoint`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints",
    operation_id = "createOperatorWebhookEndpoint",
    tag = "webhooks",
    summary = "Register an endpoint that receives every event",
    description = "As a key's own endpoint, but it receives the events of every key. The \
        secret is in this answer only.",
    request_body(content = NewEndpoint, content_type = "application/json"),
    responses(
        (status = 201, description = "The endpoint, with its signing secret.",
            body = IssuedEndpoint,
            headers(("Location" = String, description = "The endpoint's address."))),
        (status = 409, description = "`webhook_endpoint_limit_reached` or \
            `webhook_endpoint_url_taken`.", body = ErrorObject),
        EndpointBodyErrors,
    ),
)]
pub async fn create_endpoint(
    state: web::Data<AppState>,
    admin: Admin,
    _: NoQuery,
    JsonBody(body): JsonBody<NewEndpoint>,
) -> Result<HttpResponse, ApiError> {
    let collection = format!("{ADMIN_BASE}/webhook_endpoints");
    let (endpoint, response) = operations::create(&state, &collection, OPERATORS, body).await?;
    audit(&admin, OPERATORS, Change::Created(&endpoint));
    Ok(response)
}

/// `getOperatorWebhookEndpoint`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "getOperatorWebhookEndpoint",
    tag = "webhooks",
    summary = "Get one of the operators' webhook endpoints",
    params(EndpointId),
    responses(
        (status = 200, description = "The endpoint.", body = WebhookEndpoint),
        EndpointById,
    ),
)]
pub async fn get_endpoint(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::get(&state, &req, OPERATORS, id).await
}

/// `updateOperatorWebhookEndpoint`.
#[utoipa::path(
    patch,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "updateOperatorWebhookEndpoint",
    tag = "webhooks",
    summary = "Change one of the operators' webhook endpoints",
    params(EndpointId),
    request_body(content = EndpointChanges, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, changed.", body = WebhookEndpoint),
        (status = 409, description = "`webhook_endpoint_url_taken`: another endpoint has the \
            new `url`.", body = ErrorObject),
        EndpointChangeErrors,
    ),
)]
pub async fn update_endpoint(
    state: web::Data<AppState>,
    admin: Admin,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<EndpointChanges>,
) -> Result<HttpResponse, ApiError> {
    let (endpoint, response) = operations::update(&state, OPERATORS, id, body).await?;
    audit(&admin, OPERATORS, Change::Updated(&endpoint));
    Ok(response)
}

/// `deleteOperatorWebhookEndpoint`.
#[utoipa::path(
    delete,
    path = "/webhook_endpoints/{endpointId}",
    operation_id = "deleteOperatorWebhookEndpoint",
    tag = "webhooks",
    summary = "Delete one of the operators' webhook endpoints",
    params(EndpointId),
    responses(
        (status = 204, description = "Deleted, with its delivery log."),
        EndpointById,
    ),
)]
pub async fn delete_endpoint(
    state: web::Data<AppState>,
    admin: Admin,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let response = operations::delete(&state, OPERATORS, id).await?;
    audit(&admin, OPERATORS, Change::Deleted(id));
    Ok(response)
}

/// `rotateOperatorWebhookSecret`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints/{endpointId}/rotate_secret",
    operation_id = "rotateOperatorWebhookSecret",
    tag = "webhooks",
    summary = "Give one of the operators' webhook endpoints a new secret",
    description = "Both secrets sign deliveries until the grace period ends.",
    params(EndpointId),
    request_body(content = RotateSecretRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, with its new secret.", body = IssuedEndpoint),
        EndpointChangeErrors,
    ),
)]
pub async fn rotate_secret(
    state: web::Data<AppState>,
    admin: Admin,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<RotateSecretRequest>,
) -> Result<HttpResponse, ApiError> {
    let response = operations::rotate(&state, OPERATORS, id, body).await?;
    audit(&admin, OPERATORS, Change::Rotated(id));
    Ok(response)
}

/// `listOperatorWebhookDeliveries`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}/deliveries",
    operation_id = "listOperatorWebhookDeliveries",
    tag = "webhooks",
    summary = "The delivery log of one of the operators' webhook endpoints",
    description = "Newest first, paged with `limit` and `after` (older than that id).",
    params(
        EndpointId,
        ("limit" = Option<u32>, Query, description = "How many at most: 1 to 100, default 20."),
        ("after" = Option<i64>, Query, description = "Only deliveries older than this id (`nextAfter`)."),
    ),
    responses(
        (status = 200, description = "A page of deliveries.", body = DeliveryPage),
        DeliveryLogErrors,
    ),
)]
pub async fn list_deliveries(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    EndpointId(id): EndpointId,
    Query(page): Query<PageRequest>,
) -> Result<HttpResponse, ApiError> {
    operations::delivery_page(&state, &req, OPERATORS, id, page).await
}

/// `getOperatorWebhookDelivery`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
    operation_id = "getOperatorWebhookDelivery",
    tag = "webhooks",
    summary = "One delivery of one of the operators' webhook endpoints, with its attempts",
    params(EndpointId, DeliveryId),
    responses(
        (status = 200, description = "The delivery and its attempts.", body = DeliveryRecord),
        DeliveryById,
    ),
)]
pub async fn get_delivery(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::delivery_record(&state, &req, OPERATORS, endpoint, delivery).await
}

/// `redeliverOperatorWebhook`.
#[utoipa::path(
    post,
    path = "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver",
    operation_id = "redeliverOperatorWebhook",
    tag = "webhooks",
    summary = "Send a delivery of one of the operators' webhook endpoints again",
    params(EndpointId, DeliveryId),
    responses(
        (status = 202, description = "The delivery, pending.", body = Delivery),
        (status = 409, description = "`webhook_endpoint_disabled`.", body = ErrorObject),
        DeliveryById,
    ),
)]
pub async fn redeliver(
    state: web::Data<AppState>,
    admin: Admin,
    EndpointId(endpoint): EndpointId,
    DeliveryId(delivery): DeliveryId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let response = operations::send_again(&state, OPERATORS, endpoint, delivery).await?;
    audit(
        &admin,
        OPERATORS,
        Change::Redelivered { endpoint, delivery },
    );
    Ok(response)
}
