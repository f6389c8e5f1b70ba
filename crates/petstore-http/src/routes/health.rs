//! Health checks for load balancers, outside the base path and without authentication.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// `GET /healthz`: the process is up and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

pub use crate::db::READY_DEADLINE;

/// `GET /readyz`: the server is not shutting down, and the storage answers within
/// [`READY_DEADLINE`] with its schema current; `503` otherwise. The storage's answer is at most
/// a second old ([`crate::db::Database::check_ready`]): this route needs no key and counts
/// against no limit, and must not let anyone make a database read per request.
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    if state.draining.load(Ordering::Relaxed) {
        return Err(ApiError::NotReady(Arc::new(ApiError::ShuttingDown)));
    }
    state.db.check_ready().await.map_err(ApiError::NotReady)?;
    Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
}
