//! `GET /rate_limit`: the caller's plan and both windows, read without spending a request
//! (GitHub's convention). The resource is declared `Counting::StandingRead` (`routes`), so
//! admission reads a key's standing instead of counting the request; a banned caller still gets
//! its `429`. It has no `ETag`: every counted request changes it, and reading it is free
//! anyway; it is `Cache-Control: no-store`, stale as soon as it is sent.

use actix_web::HttpResponse;
use actix_web::http::header;
use petstore_domain::{RateLimitStatus, WindowStatus};

use crate::auth::{Caller, Read};
use crate::error::ApiError;
use crate::extract::{NoQuery, from_extensions};
use crate::ratelimit::RateStatus;

/// `getRateLimit`.
pub async fn get_rate_limit(
    caller: Caller<Read>,
    status: RateStatus,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(RateLimitStatus {
            plan: caller.key().plan,
            minute: WindowStatus::from(&status.decision.minute),
            day: WindowStatus::from(&status.decision.day),
        }))
}

// The caller's standing, as admission read it for a resource declared
// `Counting::StandingRead` (a handler elsewhere would get a `500`: a declaration missing).
from_extensions!(
    RateStatus,
    ApiError::internal("admission left no rate-limit standing")
);
