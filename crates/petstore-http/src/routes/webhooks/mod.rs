//! Webhook endpoints (experimental): a key registers where its events are sent (its orders'
//! `order.*`, the pets it creates' `pet.created`), reads each endpoint's delivery log and sends
//! a delivery again. Another key's endpoint is a `404`, so ids do not leak.
//!
//! The handlers are written once for whoever owns the endpoints ([`Owner`]) and make one call
//! of [`operations`] each: the public API serves them for the caller's key (`Caller`), the
//! admin API for the operators' endpoints and for a key's as the operators see them
//! (`admin/webhooks.rs`). `petstore-openapi` describes both APIs' routes.

pub mod operations;

use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use petstore_domain::PageRequest;
use petstore_domain::webhook::{EndpointChanges, EndpointOwner, NewEndpoint, WebhookEndpoint};

use crate::auth::{Caller, Read, Scope};
use crate::error::ApiError;
use crate::extract::{DeliveryId, EndpointId, JsonBody, NoQuery, Query};
use crate::state::AppState;
use operations::{RotateSecretRequest, Shown};

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
pub async fn list_endpoints<O: Owner>(
    state: web::Data<AppState>,
    req: HttpRequest,
    owner: O,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    operations::list(&state, &req, owner.owner()).await
}

/// `createWebhookEndpoint`.
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
pub async fn list_deliveries(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    EndpointId(id): EndpointId,
    Query(page): Query<PageRequest>,
) -> Result<HttpResponse, ApiError> {
    let owner = caller.owner();
    operations::delivery_page(&state, &req, owner, id, page, Shown::Linked).await
}

/// `getWebhookDelivery`.
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
