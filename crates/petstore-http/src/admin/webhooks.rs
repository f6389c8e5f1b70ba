//! The admin API's webhook endpoints: the operators' own (`/admin/v1/webhook_endpoints`),
//! which receive every event (every key's orders and pets), and a key's as the operators see
//! them (`/admin/v1/keys/{keyId}/webhook_endpoints`: listed, read, changed, deleted). Both are
//! served by the public API's handlers ([`crate::routes::webhooks`]) over the [`Owner`]s here,
//! which write each change to the audit log; the delivery log is paged as the admin API pages
//! its lists ([`list_deliveries`]).

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, HttpResponse, dev::Payload, web};
use futures_util::future::LocalBoxFuture;
use petstore_domain::PageRequest;
use petstore_domain::webhook::{EndpointOwner, loggable_url};

use super::routes::find_key;
use super::token::Admin;
use super::{ADMIN_BASE, AUDIT_LOG};
use crate::error::ApiError;
use crate::extract::{EndpointId, KeyId, Query};
use crate::routes::webhooks::operations::{self, Shown};
use crate::routes::webhooks::{Change, Owner};
use crate::state::AppState;

/// The operators' endpoints, acted on with an admin token.
pub struct Operators(Admin);

impl FromRequest for Operators {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        ready(Admin::from_request(req, payload).into_inner().map(Self))
    }
}

impl Owner for Operators {
    fn owner(&self) -> EndpointOwner {
        EndpointOwner::Operator
    }

    fn collection(&self, _: &AppState, _: &HttpRequest) -> String {
        format!("{ADMIN_BASE}/webhook_endpoints")
    }

    fn changed(&self, change: Change<'_>) {
        audit(&self.0, self.owner(), change);
    }
}

/// Key `keyId`'s endpoints, acted on with an admin token; an unknown key is a `404`
/// (`key_not_found`), not an empty list.
pub struct KeyEndpoints {
    admin: Admin,
    key: i64,
}

impl FromRequest for KeyEndpoints {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let admin = Admin::from_request(req, payload);
        let key = KeyId::from_request(req, payload);
        let state = web::Data::<AppState>::from_request(req, payload);
        Box::pin(async move {
            let (admin, KeyId(key)) = (admin.await?, key.await?);
            let state = state
                .await
                .map_err(|_| ApiError::internal("the admin application has no state"))?;
            find_key(&state, key).await?;
            Ok(Self { admin, key })
        })
    }
}

impl Owner for KeyEndpoints {
    fn owner(&self) -> EndpointOwner {
        EndpointOwner::Key(self.key)
    }

    fn collection(&self, _: &AppState, _: &HttpRequest) -> String {
        format!("{ADMIN_BASE}/keys/{}/webhook_endpoints", self.key)
    }

    fn changed(&self, change: Change<'_>) {
        audit(&self.admin, self.owner(), change);
    }
}

/// One audit line: who (the admin token), what, which endpoint (and whose, when a key's). A
/// URL is written by [`loggable_url`] (no query: it may hold the receiver's token).
fn audit(admin: &Admin, owner: EndpointOwner, change: Change<'_>) {
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

/// `listOperatorWebhookDeliveries`: a page of the delivery log with its cursor
/// ([`operations::DeliveryPage`]), as the admin API's lists are.
pub async fn list_deliveries(
    state: web::Data<AppState>,
    req: HttpRequest,
    _: Operators,
    EndpointId(id): EndpointId,
    Query(page): Query<PageRequest>,
) -> Result<HttpResponse, ApiError> {
    let owner = EndpointOwner::Operator;
    operations::delivery_page(&state, &req, owner, id, page, Shown::WithCursor).await
}
