//! The admin API's operations, each described by a function that exists only for its
//! `#[utoipa::path]` annotation: the keys, the orders' fulfilment, and the webhook endpoints. The
//! webhook handlers are the public API's, written once for any owner of endpoints
//! (`petstore_http::routes::webhooks`) and served here for the operators' endpoints and for a
//! key's: these describe those routes as the admin API serves them.
#![expect(
    dead_code,
    reason = "each function exists for its annotation: never called"
)]

use petstore_domain::Plan;
use petstore_domain::key_admin::{IssuedKey, KeyView};
use petstore_domain::order_admin::OrderView;
use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, IssuedEndpoint, NewEndpoint, WebhookEndpoint,
};
use petstore_http::admin::orders::OrderPage;
use petstore_http::admin::routes::{CreateKeyRequest, KeyPage, RotateKeyRequest, UpdateKeyRequest};
use petstore_http::error::ErrorObject;
use petstore_http::extract::{DeliveryId, EndpointId, KeyId, OrderId};
use petstore_http::routes::webhooks::operations::{DeliveryPage, RotateSecretRequest};

use crate::responses::{
    AnyOrderById, DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById,
    EndpointChangeErrors, KeyById, KeyNotFound,
};

/// `createKey`.
#[utoipa::path(
    post,
    path = "/keys",
    operation_id = "createKey",
    tag = "keys",
    summary = "Issue an API key",
    description = "Issues a key; its secret (`key`) is in this answer only.",
    request_body(content = CreateKeyRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The key, with its secret.", body = IssuedKey,
            headers(("Location" = String, description = "The key's address."))),
        (status = 400, description = "A missing, unknown or invalid field, named.", body = ErrorObject),
    ),
)]
pub(crate) fn create_key() {}

/// `listKeys`.
#[utoipa::path(
    get,
    path = "/keys",
    operation_id = "listKeys",
    tag = "keys",
    summary = "List API keys",
    description = "Keys in id order, never their secrets; `nextAfter` is the cursor of the next \
        page.",
    params(
        ("limit" = Option<u32>, Query, description = "How many keys at most: 1 to 100, default 20."),
        ("after" = Option<i64>, Query, minimum = 0, description = "Only keys whose id is greater."),
        ("plan" = Option<Plan>, Query, description = "Only keys on this plan."),
        ("state" = Option<String>, Query, description = "Only keys in this state now: `active`, \
            `expired` or `revoked`."),
    ),
    responses(
        (status = 200, description = "A page of keys.", body = KeyPage),
        (status = 400, description = "A malformed or unknown query parameter, named.", body = ErrorObject),
    ),
)]
pub(crate) fn list_keys() {}

/// `getKey`.
#[utoipa::path(
    get,
    path = "/keys/{keyId}",
    operation_id = "getKey",
    tag = "keys",
    summary = "Show an API key",
    params(KeyId),
    responses(
        (status = 200, description = "The key (never its secret).", body = KeyView),
        KeyById,
    ),
)]
pub(crate) fn get_key() {}

/// `updateKey`.
#[utoipa::path(
    patch,
    path = "/keys/{keyId}",
    operation_id = "updateKey",
    tag = "keys",
    summary = "Change an API key's plan, limits, scope or label",
    description = "Every field is checked before anything changes. Takes effect on every \
        instance within the key-cache TTL (5 s by default).",
    params(KeyId),
    request_body(content = UpdateKeyRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The key as it now is.", body = KeyView),
        (status = 400, description = "A missing, unknown or invalid field, named.", body = ErrorObject),
        KeyNotFound,
    ),
)]
pub(crate) fn update_key() {}

/// `rotateKey`.
#[utoipa::path(
    post,
    path = "/keys/{keyId}/rotate",
    operation_id = "rotateKey",
    tag = "keys",
    summary = "Give an API key a new secret",
    description = "The key keeps its id, plan, limits, label, scope, expiry, counters and any \
        ban; the old secret keeps working for the grace period (on every instance within the \
        key-cache TTL). The new secret is in this answer only.",
    params(KeyId),
    request_body(content = RotateKeyRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The key, with its new secret.", body = IssuedKey),
        (status = 400, description = "An unknown or invalid field, named.", body = ErrorObject),
        (status = 409, description = "`key_revoked`: a revoked key cannot be rotated.", body = ErrorObject),
        KeyNotFound,
    ),
)]
pub(crate) fn rotate_key() {}

/// `revokeKey`.
#[utoipa::path(
    post,
    path = "/keys/{keyId}/revoke",
    operation_id = "revokeKey",
    tag = "keys",
    summary = "Revoke an API key",
    description = "For good: every instance refuses it within the key-cache TTL. Revoking again \
        keeps the first revocation's time.",
    params(KeyId),
    responses(
        (status = 200, description = "The key, revoked.", body = KeyView),
        KeyById,
    ),
)]
pub(crate) fn revoke_key() {}

/// `unbanKey`.
#[utoipa::path(
    post,
    path = "/keys/{keyId}/unban",
    operation_id = "unbanKey",
    tag = "keys",
    summary = "Lift an API key's temporary ban",
    description = "Lifts the ban and forgets its history (the next ban starts short again).",
    params(KeyId),
    responses(
        (status = 200, description = "The key, unbanned.", body = KeyView),
        KeyById,
    ),
)]
pub(crate) fn unban_key() {}

/// `listAllOrders`.
#[utoipa::path(
    get,
    path = "/orders",
    operation_id = "listAllOrders",
    tag = "orders",
    summary = "List orders",
    description = "Every order, whoever placed it, in id order, with the key that placed it; \
        `nextAfter` is the cursor of the next page. Each filter walks an index of its own, \
        whatever the number of orders.",
    params(
        ("limit" = Option<u32>, Query, description = "How many orders at most: 1 to 100, default 20."),
        ("after" = Option<i64>, Query, minimum = 0, description = "Only orders whose id is greater."),
        ("status" = Option<petstore_domain::OrderStatus>, Query, description = "Only orders with this status."),
        ("key" = Option<i64>, Query, minimum = 1, description = "Only orders placed with this API key (its id)."),
    ),
    responses(
        (status = 200, description = "A page of orders.", body = OrderPage),
        (status = 400, description = "A malformed or unknown query parameter, named.", body = ErrorObject),
    ),
)]
pub(crate) fn list_orders() {}

/// `getAnyOrder`.
#[utoipa::path(
    get,
    path = "/orders/{orderId}",
    operation_id = "getAnyOrder",
    tag = "orders",
    summary = "Show an order",
    params(OrderId),
    responses(
        (status = 200, description = "The order, with the key that placed it.", body = OrderView),
        AnyOrderById,
    ),
)]
pub(crate) fn get_order() {}

/// `approveOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/approve",
    operation_id = "approveOrder",
    tag = "orders",
    summary = "Approve a placed order",
    description = "The store accepts the order: `placed` becomes `approved`; its pet stays \
        `pending`.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, approved.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_transition_refused`: the order is not `placed`.",
            body = ErrorObject),
    ),
)]
pub(crate) fn approve() {}

/// `deliverOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/deliver",
    operation_id = "deliverOrder",
    tag = "orders",
    summary = "Deliver an approved order",
    description = "The pet is handed over: `approved` becomes `delivered`, and the pet `sold`, \
        in one transaction.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, delivered.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_transition_refused`: the order is not `approved`.",
            body = ErrorObject),
    ),
)]
pub(crate) fn deliver() {}

/// `cancelAnyOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/cancel",
    operation_id = "cancelAnyOrder",
    tag = "orders",
    summary = "Cancel a placed order",
    description = "As its customer can: `placed` becomes `cancelled`, and the pet `available` \
        again, in one transaction.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, cancelled.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_not_cancellable`: the order is not `placed`.",
            body = ErrorObject),
    ),
)]
pub(crate) fn cancel() {}

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
