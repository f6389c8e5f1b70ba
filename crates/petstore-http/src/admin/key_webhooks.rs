//! `/admin/v1/keys/{keyId}/webhook_endpoints`: an API key's own webhook endpoints, as the
//! operators see them: listed, read, changed (turned off, say, for a customer who no longer
//! answers, or whose key was revoked) and deleted. The same operations as the key's own routes
//! ([`crate::routes::webhooks::operations`]); each change is written to the audit log.

use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::webhook::{EndpointChanges, EndpointOwner, WebhookEndpoint};

use super::routes::find_key;
use super::token::Admin;
use super::webhooks::{Change, audit};
use crate::error::responses::{EndpointById, EndpointChangeErrors, KeyNotFound};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{EndpointId, JsonBody, KeyId, NoQuery};
use crate::routes::webhooks::operations;
use crate::state::AppState;

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
pub async fn list_endpoints(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    KeyId(key): KeyId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    // Whether the key is there at all: an unknown one is a `404`, not an empty list.
    find_key(&state, key).await?;
    operations::list(&state, &req, EndpointOwner::Key(key)).await
}

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
    ),
)]
pub async fn get_endpoint(
    state: web::Data<AppState>,
    req: HttpRequest,
    _admin: Admin,
    KeyId(key): KeyId,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::get(&state, &req, EndpointOwner::Key(key), id).await
}

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
    ),
)]
pub async fn update_endpoint(
    state: web::Data<AppState>,
    admin: Admin,
    KeyId(key): KeyId,
    EndpointId(id): EndpointId,
    _: NoQuery,
    JsonBody(body): JsonBody<EndpointChanges>,
) -> Result<HttpResponse, ApiError> {
    let owner = EndpointOwner::Key(key);
    let (endpoint, response) = operations::update(&state, owner, id, body).await?;
    audit(&admin, owner, Change::Updated(&endpoint));
    Ok(response)
}

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
    ),
)]
pub async fn delete_endpoint(
    state: web::Data<AppState>,
    admin: Admin,
    KeyId(key): KeyId,
    EndpointId(id): EndpointId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let owner = EndpointOwner::Key(key);
    let response = operations::delete(&state, owner, id).await?;
    audit(&admin, owner, Change::Deleted(id));
    Ok(response)
}
