//! The admin API's webhook routes. Their handlers are the public API's, written once for any
//! owner of endpoints (`petstore_http::routes::webhooks`) and served by the admin API for the
//! operators' endpoints and for a key's: a handler's annotation describes its public route, so
//! these, which describe nothing else, describe the admin API's.
#![expect(
    dead_code,
    reason = "each function exists for its annotation: never called"
)]

use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, IssuedEndpoint, NewEndpoint, WebhookEndpoint,
};
use petstore_http::error::ErrorObject;
use petstore_http::error::responses::{
    DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById, EndpointChangeErrors,
    KeyNotFound,
};
use petstore_http::extract::{DeliveryId, EndpointId, KeyId};
use petstore_http::routes::webhooks::operations::{DeliveryPage, RotateSecretRequest};

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
fn list_operator_webhook_endpoints() {}

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
fn create_operator_webhook_endpoint() {}

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
fn get_operator_webhook_endpoint() {}

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
fn update_operator_webhook_endpoint() {}

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
fn delete_operator_webhook_endpoint() {}

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
fn rotate_operator_webhook_secret() {}

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
fn list_operator_webhook_deliveries() {}

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
fn get_operator_webhook_delivery() {}

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
fn redeliver_operator_webhook() {}

/// `listKeyWebhookEndpoints`.
#[utoipa::path(
    get,
    path = "/keys/{keyId}/webhook_endpoints",
    operation_id = "listKeyWebhookEndpoints",
    tag = "webhooks",
    summary = "List an API key's webhook endpoints",
    description = "In id order, never with their secrets; a revoked or expired key's too (they \
        receive nothing).",
    params(KeyId),
    responses(
        (status = 200, description = "The key's endpoints.", body = Vec<WebhookEndpoint>),
        (status = 400, description = "`invalid_path_parameter` or `unknown_query_parameter`.",
            body = ErrorObject),
        KeyNotFound,
    ),
)]
fn list_key_webhook_endpoints() {}

/// `getKeyWebhookEndpoint`.
#[utoipa::path(
    get,
    path = "/keys/{keyId}/webhook_endpoints/{endpointId}",
    operation_id = "getKeyWebhookEndpoint",
    tag = "webhooks",
    summary = "Get one of an API key's webhook endpoints",
    params(KeyId, EndpointId),
    responses(
        (status = 200, description = "The endpoint.", body = WebhookEndpoint),
        EndpointById,
        (status = 404, description = "`key_not_found`, or `webhook_endpoint_not_found`: the key \
            has no endpoint with the id.", body = ErrorObject),
    ),
)]
fn get_key_webhook_endpoint() {}

/// `updateKeyWebhookEndpoint`.
#[utoipa::path(
    patch,
    path = "/keys/{keyId}/webhook_endpoints/{endpointId}",
    operation_id = "updateKeyWebhookEndpoint",
    tag = "webhooks",
    summary = "Change one of an API key's webhook endpoints",
    description = "As the key itself may: `enabled: false` turns it off (its waiting deliveries \
        fail, no event is recorded for it), and so on.",
    params(KeyId, EndpointId),
    request_body(content = EndpointChanges, content_type = "application/json"),
    responses(
        (status = 200, description = "The endpoint, changed.", body = WebhookEndpoint),
        (status = 409, description = "`webhook_endpoint_url_taken`: another of the key's \
            endpoints has the new `url`.", body = ErrorObject),
        EndpointChangeErrors,
        (status = 404, description = "`key_not_found`, or `webhook_endpoint_not_found`: the key \
            has no endpoint with the id.", body = ErrorObject),
    ),
)]
fn update_key_webhook_endpoint() {}

/// `deleteKeyWebhookEndpoint`.
#[utoipa::path(
    delete,
    path = "/keys/{keyId}/webhook_endpoints/{endpointId}",
    operation_id = "deleteKeyWebhookEndpoint",
    tag = "webhooks",
    summary = "Delete one of an API key's webhook endpoints",
    params(KeyId, EndpointId),
    responses(
        (status = 204, description = "Deleted, with its delivery log."),
        EndpointById,
        (status = 404, description = "`key_not_found`, or `webhook_endpoint_not_found`: the key \
            has no endpoint with the id.", body = ErrorObject),
    ),
)]
fn delete_key_webhook_endpoint() {}
