//! Who is calling the admin API: an admin token (`Authorization: Bearer psa_...`), looked up
//! in the storage on every request (no cache: a revoked token stops working at once, and the
//! admin API's traffic is an operator's). Anything else, whatever is wrong with it, gets the
//! same `401`.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use petstore_domain::{AdminToken, AdminTokenSecret};

use crate::auth::bearer_token;
use crate::db::storage_call;
use crate::error::ApiError;
use crate::extract::from_extensions;
use crate::state::AppState;

/// The admin token a request was authenticated with: taken by every admin handler (and named
/// in its audit line).
#[derive(Debug, Clone)]
pub struct Admin(pub AdminToken);

// Only a handler mounted without `require_admin` would miss it: a bug, answered as no token.
from_extensions!(Admin, ApiError::AdminUnauthorized { presented: false });

/// Refuses a request without a valid admin token with `401` before anything else of it is
/// read; otherwise hands it on with its [`Admin`].
pub async fn require_admin(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    match authenticate(&req).await {
        Ok(admin) => {
            req.extensions_mut().insert(admin);
            Ok(next.call(req).await?.map_into_boxed_body())
        }
        Err(error) => {
            let response = error.error_response();
            Ok(req.into_response(response))
        }
    }
}

async fn authenticate(req: &ServiceRequest) -> Result<Admin, ApiError> {
    let token = bearer_token(req.headers());
    let refused = ApiError::AdminUnauthorized {
        presented: token.is_some(),
    };
    let Some(secret) = token
        .and_then(|token| std::str::from_utf8(token).ok())
        .and_then(AdminTokenSecret::parse)
    else {
        return Err(refused);
    };
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::internal("the admin application has no state"))?;
    let hash = secret.hash();
    let token = storage_call!(state.db, find_admin_token(&hash)).await?;
    token.map(Admin).ok_or(refused)
}
