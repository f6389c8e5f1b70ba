//! The admin API's operations, each described by a function that exists only for its
//! `#[utoipa::path]` annotation: the keys, the orders' fulfilment, and the operators' webhook
//! delivery log. The other webhook operations are the public API's handlers, and are described
//! from the public API's descriptions (`webhooks.rs`).
#![expect(
    dead_code,
    reason = "each function exists for its annotation: never called"
)]

use petstore_domain::Plan;
use petstore_domain::key_admin::{IssuedKey, KeyView};
use petstore_domain::order_admin::OrderView;
use petstore_http::admin::orders::OrderPage;
use petstore_http::admin::routes::{CreateKeyRequest, KeyPage, RotateKeyRequest, UpdateKeyRequest};
use petstore_http::error::ErrorObject;
use petstore_http::extract::{EndpointId, KeyId, OrderId};
use petstore_http::routes::webhooks::operations::DeliveryPage;

use crate::responses::{AnyOrderById, DeliveryLogErrors, KeyById, KeyNotFound};

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
