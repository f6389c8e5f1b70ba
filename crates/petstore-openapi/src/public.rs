//! The public API's document: its operations, each described by a function that exists only for
//! its `#[utoipa::path]` annotation (the handlers, in `petstore_http::routes`, transport; these
//! describe), and [`document`], which gathers them. The route table and the document are held
//! together by a test: every documented path answers exactly its documented methods.
#![expect(
    dead_code,
    reason = "each function exists for its annotation: never called"
)]

use petstore_domain::webhook::{
    Delivery, DeliveryRecord, EndpointChanges, IssuedEndpoint, NewEndpoint, WebhookEndpoint,
};
use petstore_domain::{Inventory, NewOrder, NewPet, Order, Pet, PetStatus, RateLimitStatus};
use petstore_http::error::ErrorObject;
use petstore_http::extract::{DeliveryId, EndpointId, OrderId, PetId};
use petstore_http::routes::index::ApiIndex;
use petstore_http::routes::webhooks::operations::RotateSecretRequest;
use utoipa::openapi::OpenApi as Document;
use utoipa::{Modify, OpenApi};

use crate::conventions::Conventions;
use crate::responses::{
    DeliveryById, DeliveryLogErrors, EndpointBodyErrors, EndpointById, EndpointChangeErrors,
    JsonBodyErrors, NoParameters, OrderById, PageParams, PetNotFound, ReadOnlyKey,
    SecretRotationErrors,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Animal Store Service",
        version = "1.0.0",
        description = "A catalogue of animals offered by a store, and a store-orders area. Every \
            operation needs an API key (`Authorization: Bearer <API_KEY>`). Every response carries \
            the rate-limit headers; every error the Error object. Operations marked \
            `x-stability: experimental` may change without a new version.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    paths(
        list_pets,
        create_pet,
        get_pet,
        list_orders,
        place_order,
        get_order,
        cancel_order,
        delete_order,
        get_inventory,
        get_rate_limit,
        get_index
    ),
    // With the webhook operations ([`WebhookOperations`]), which the admin API describes too.
    // The schemas come with the operations' bodies, parameters and responses.
    tags(
        (name = "pets", description = "The catalogue of animals."),
        (name = "store", description = "The store-orders area (experimental)."),
        (name = "webhooks", description = "Events pushed to your endpoints, signed (Standard \
            Webhooks v1): `order.placed`, `order.approved`, `order.delivered`, \
            `order.cancelled`, `pet.created` (experimental)."),
        (name = "rate limits", description = "Your standing against your plan's limits."),
        (name = "index", description = "Where things are: the base address itself."),
    ),
)]
struct ApiDoc;

/// The webhook operations, as the public API serves them: the admin API serves the same handlers
/// for the operators' endpoints and any key's, and describes them from these
/// (`admin::webhooks`).
#[derive(OpenApi)]
#[openapi(paths(
    list_endpoints,
    create_endpoint,
    get_endpoint,
    update_endpoint,
    delete_endpoint,
    rotate_secret,
    list_deliveries,
    get_delivery,
    redeliver
))]
pub(crate) struct WebhookOperations;

/// The public API's document, without servers: the application names them as it serves it.
pub(crate) fn document() -> Document {
    let mut document = ApiDoc::openapi();
    document.merge(WebhookOperations::openapi());
    Conventions.modify(&mut document);
    document
}

/// `listPets`: a page in ascending id order; `Link: rel="next"` when more follow.
#[utoipa::path(
    get,
    path = "/pets",
    operation_id = "listPets",
    tag = "pets",
    summary = "List pets",
    description = "Pets in ascending id order, filtered by `status` when given. When more pets \
        follow, `Link: <...>; rel=\"next\"` gives the next page's address (keyset cursor \
        `after`); the body stays a plain array.",
    params(
        PageParams,
        ("status" = Option<PetStatus>, Query, description = "Only pets with this status."),
    ),
    responses(
        (status = 200, description = "A page of pets.", body = Vec<Pet>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when more pets follow."),
        )),
        (status = 400, description = "`invalid_query_parameter` or `unknown_query_parameter`, \
            naming the parameter.", body = ErrorObject),
    ),
)]
pub(crate) fn list_pets() {}

/// `createPet`: `201`, the pet, and its `Location`.
#[utoipa::path(
    post,
    path = "/pets",
    operation_id = "createPet",
    tag = "pets",
    summary = "Add a pet",
    description = "Stores a new pet; `status` defaults to `available`. The body is strict: unknown \
        fields (including `id`), `null`s and wrong types are refused, naming the field. \
        Send an `Idempotency-Key` to retry safely: the same request with the same key is \
        answered once and replayed after (`Idempotent-Replayed: true`), for 24 hours. Needs a \
        read-write key.",
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 512,
            pattern = r#"^([!#-~][!-~]{0,254}|"([ !#-\[\]-~]|\\["\\]){1,255}")$"#,
            description = "A key of the client's choosing, unique per request it means (a UUID, \
                say): a retry with the same key and body creates nothing more and gets the \
                first answer again. Scoped to the API key; kept 24 hours. A Structured Field \
                string (`\"8e03-...\"`, RFC 9651; draft-ietf-httpapi-idempotency-key-header): \
                1 to 255 printable ASCII characters between the quotes, spaces included, \
                `\\\"` and `\\\\` escaped; or, the same key, those characters bare when \
                they hold no space and do not start with a quote."),
    ),
    request_body(content = NewPet, content_type = "application/json"),
    responses(
        (status = 201, description = "The pet, with its id; durable when answered.", body = Pet,
            headers(
                ("Location" = String, description = "The pet's address."),
                ("Idempotent-Replayed" = String,
                    description = "`true` when this is the stored answer to an earlier request \
                        with the same `Idempotency-Key`."),
            )),
        (status = 400, description = "`invalid_json`, `missing_field`, `unknown_field` or \
            `invalid_field`, naming the field; `invalid_header`: a malformed `Idempotency-Key`.",
            body = ErrorObject),
        (status = 409, description = "`idempotency_request_in_progress`: a request with this \
            `Idempotency-Key` is still being processed; retry after `Retry-After`.",
            body = ErrorObject, headers(("Retry-After" = u64, description = "Seconds to wait."),
                ("Link" = String, description = "`<{site}/docs/#/{tag}/{operationId}>; rel=\"describedby\"; type=\"text/html\"`: \
                where `Idempotency-Key` is documented (draft-ietf-httpapi-idempotency-key-header-07 \
                §2.7)."))),
        ReadOnlyKey,
        JsonBodyErrors,
    ),
)]
pub(crate) fn create_pet() {}

/// `getPet` (deprecated): the pet, `404`, or `410` once past the sunset.
#[utoipa::path(
    get,
    path = "/pets/{petId}",
    operation_id = "getPet",
    tag = "pets",
    summary = "Get a pet (deprecated)",
    description = "Deprecated: removed on 5 December 2030 (`Sunset`), answering `410` from then \
        on. Use `GET /pets` with a `status` filter instead (`Link: rel=\"successor-version\"`).",
    params(PetId),
    responses(
        (status = 200, description = "The pet.", body = Pet, headers(
            ("Link" = String, description = "`<{base}/pets>; rel=\"successor-version\"`, then \
                `<{site}/docs/#/pets/getPet>` as `rel=\"deprecation\"` (RFC 9745) and \
                `rel=\"sunset\"` (RFC 8594), `type=\"text/html\"`."),
        )),
        (status = 400, description = "`invalid_path_parameter`: `petId` is not an int64.",
            body = ErrorObject),
        (status = 410, description = "`endpoint_removed`: past the sunset.", body = ErrorObject),
        PetNotFound,
    ),
    extensions(("x-sunset" = json!("2030-12-05"))),
)]
#[deprecated(note = "removed on 5 December 2030: use GET /pets with a status filter")]
pub(crate) fn get_pet() {}

/// `listOrders`: the caller's orders in ascending id order, paged like pets (`limit`, `after`).
#[utoipa::path(
    get,
    path = "/store/orders",
    operation_id = "listOrders",
    tag = "store",
    summary = "List your orders (experimental)",
    description = "The orders placed with this API key, in ascending id order, paged like pets. \
        Experimental: may change without a new version (`X-API-Stability: experimental`).",
    params(PageParams),
    responses(
        (status = 200, description = "A page of orders.", body = Vec<Order>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when more orders follow."),
        )),
        (status = 400, description = "`invalid_query_parameter` or `unknown_query_parameter`.",
            body = ErrorObject),
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn list_orders() {}

/// `placeOrder`: `201`, the order, and its `Location`; the pet becomes `pending`.
#[utoipa::path(
    post,
    path = "/store/orders",
    operation_id = "placeOrder",
    tag = "store",
    summary = "Order a pet (experimental)",
    description = "Orders an available pet: in one transaction the order is created `placed` \
        and the pet becomes `pending`, so two customers can never order the same pet. The body \
        is strict, like a pet's. Honours `Idempotency-Key` as `POST /pets` does. Needs a \
        read-write key.",
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 512,
            pattern = r#"^([!#-~][!-~]{0,254}|"([ !#-\[\]-~]|\\["\\]){1,255}")$"#,
            description = "As for `POST /pets`: a retry with the same key and body places \
                nothing more and gets the first answer again."),
    ),
    request_body(content = NewOrder, content_type = "application/json"),
    responses(
        (status = 201, description = "The order, placed.", body = Order, headers(
            ("Location" = String, description = "The order's address."),
            ("Idempotent-Replayed" = String,
                description = "`true` when this is the stored answer to an earlier request \
                    with the same `Idempotency-Key`."),
        )),
        (status = 400, description = "`invalid_json`, `missing_field`, `unknown_field` or \
            `invalid_field`, naming the field; `invalid_header`.", body = ErrorObject),
        (status = 409, description = "`pet_not_available`: the pet is pending or sold; or \
            `idempotency_request_in_progress`.", body = ErrorObject,
            headers(("Retry-After" = u64, description = "Seconds to wait (in progress only)."),
                ("Link" = String, description = "`<{site}/docs/#/{tag}/{operationId}>; rel=\"describedby\"; type=\"text/html\"`: \
                where `Idempotency-Key` is documented (draft-ietf-httpapi-idempotency-key-header-07 \
                §2.7)."))),
        ReadOnlyKey,
        PetNotFound,
        JsonBodyErrors,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn place_order() {}

/// `getOrder`: the caller's order, or `404`.
#[utoipa::path(
    get,
    path = "/store/orders/{orderId}",
    operation_id = "getOrder",
    tag = "store",
    summary = "Get one of your orders (experimental)",
    params(OrderId),
    responses(
        (status = 200, description = "The order.", body = Order),
        OrderById,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn get_order() {}

/// `cancelOrder`: a placed order is cancelled and its pet available again.
#[utoipa::path(
    post,
    path = "/store/orders/{orderId}/cancel",
    operation_id = "cancelOrder",
    tag = "store",
    summary = "Cancel one of your orders (experimental)",
    description = "Cancels a `placed` order: in one transaction the order becomes `cancelled` \
        and its pet `available`; the order stays readable, `cancelled`. An approved or \
        delivered order can no longer be cancelled. No body. Needs a read-write key.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, cancelled.", body = Order),
        OrderById,
        (status = 409, description = "`order_not_cancellable`: the order is approved, \
            delivered or cancelled already.", body = ErrorObject),
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn cancel_order() {}

/// `deleteOrder`: [`cancel_order`]'s former address, deprecated (a `DELETE` that leaves the
/// order readable is not what HTTP's `DELETE` means); every answer carries `Deprecation`,
/// `Sunset` and the `Link` to its successor, and from its sunset it is `410`.
#[utoipa::path(
    delete,
    path = "/store/orders/{orderId}",
    operation_id = "deleteOrder",
    tag = "store",
    summary = "Cancel one of your orders: deprecated, use cancelOrder (experimental)",
    description = "The same as `POST /store/orders/{orderId}/cancel`, which replaces it: the \
        order is cancelled, not deleted (it stays readable). Deprecated; removed on 30 November \
        2027 (`410 endpoint_removed` from then on).",
    params(OrderId),
    responses(
        (status = 200, description = "The order, cancelled.", body = Order),
        OrderById,
        (status = 409, description = "`order_not_cancellable`: the order is approved, \
            delivered or cancelled already.", body = ErrorObject),
        (status = 410, description = "`endpoint_removed`: past its sunset.", body = ErrorObject),
        ReadOnlyKey,
    ),
    // (No `x-sunset` beside `x-stability`: utoipa keeps extensions in a map whose order varies,
    // and the document must be the same bytes every time; the sunset is in the description
    // and the `Sunset` header.)
    extensions(("x-stability" = json!("experimental"))),
)]
#[deprecated = "clients use `cancelOrder`; served until its sunset"]
pub(crate) fn delete_order() {}

/// `getInventory`: how many pets have each status.
#[utoipa::path(
    get,
    path = "/store/inventory",
    operation_id = "getInventory",
    tag = "store",
    summary = "Pets by status (experimental)",
    responses(
        (status = 200, description = "The counts.", body = Inventory),
        NoParameters,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn get_inventory() {}

/// `listWebhookEndpoints`.
#[utoipa::path(
    get,
    path = "/webhook_endpoints",
    operation_id = "listWebhookEndpoints",
    tag = "webhooks",
    summary = "List your webhook endpoints (experimental)",
    description = "Your endpoints (at most 20), in id order. Secrets are never shown again.",
    responses(
        (status = 200, description = "The endpoints, in id order.", body = Vec<WebhookEndpoint>),
        NoParameters,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn list_endpoints() {}

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
        (status = 409, description = "`webhook_endpoint_limit_reached`: 20 endpoints already; \
            `webhook_endpoint_url_taken`: one of them has this URL already.", body = ErrorObject),
        EndpointBodyErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn create_endpoint() {}

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
pub(crate) fn get_endpoint() {}

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
        (status = 409, description = "`webhook_endpoint_url_taken`: another endpoint of the \
            same owner has the new `url`.", body = ErrorObject),
        EndpointChangeErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn update_endpoint() {}

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
        (status = 204, description = "Deleted, with its delivery log."),
        EndpointById,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn delete_endpoint() {}

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
        SecretRotationErrors,
        ReadOnlyKey,
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub(crate) fn rotate_secret() {}

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
pub(crate) fn list_deliveries() {}

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
pub(crate) fn get_delivery() {}

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
pub(crate) fn redeliver() {}

/// `getApiIndex`.
#[utoipa::path(
    get,
    path = "/",
    operation_id = "getApiIndex",
    tag = "index",
    summary = "Where things are",
    description = "The addresses of the docs page, of this document and of each resource. \
        Needs no key (counted per client address).",
    security(()),
    responses(
        (status = 200, description = "The addresses.", body = ApiIndex),
        NoParameters,
    ),
)]
pub(crate) fn get_index() {}

/// `getRateLimit`.
#[utoipa::path(
    get,
    path = "/rate_limit",
    operation_id = "getRateLimit",
    tag = "rate limits",
    summary = "Your rate-limit standing",
    description = "The key's plan and, for the current minute and day, the limit, the requests \
        left and the reset time. Not counted against the limits (the headers show the same \
        standing); a banned key still gets `429 temporarily_banned`.",
    responses(
        (status = 200, description = "The standing.", body = RateLimitStatus, headers(
            ("Cache-Control" = String, description = "`no-store`: stale as soon as it is sent."),
        )),
        NoParameters,
    ),
)]
pub(crate) fn get_rate_limit() {}
