//! Health checks for load balancers, outside the base path and without authentication.

use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::rt::time::timeout;
use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /healthz`: the process is up and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// How long `/readyz` waits for the storage's answer: load balancers poll it with short timeouts
/// of their own, and a silent database must read as "not ready", not as a hung check.
pub const READY_DEADLINE: Duration = Duration::from_secs(2);

/// `GET /readyz`: the server is not shutting down, and the storage answers within
/// [`READY_DEADLINE`] with its schema current; `503` otherwise.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if state.draining.load(Ordering::Relaxed) {
        return Err(ApiError::NotReady(Box::new(ApiError::ShuttingDown)));
    }
    timeout(
        READY_DEADLINE,
        state
            .db
            .call("check_ready", |storage| storage.check_ready()),
    )
    .await
    .unwrap_or(Err(ApiError::StorageDeadline(READY_DEADLINE)))
    .map_err(|error| ApiError::NotReady(Box::new(error)))?;
    Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
}
