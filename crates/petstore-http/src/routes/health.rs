//! Health checks for load balancers, outside the base path and without authentication.

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /healthz`: the process is up and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// `GET /readyz`: the storage answers and its schema is current; `503` otherwise.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state
        .db
        .call(|db| db.check_ready())
        .await
        .map_err(|error| ApiError::NotReady(Box::new(error)))?;
    Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
}
