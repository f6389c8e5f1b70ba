//! `GET /rate_limit`: the caller's plan and both windows, read without spending a request
//! (GitHub's convention). Admission reads the standing instead of counting for this path; a
//! banned caller still gets its `429`.

use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use petstore_domain::{RateLimitStatus, WindowStatus};

use crate::auth::Caller;
use crate::error::{ApiError, ErrorObject};
use crate::extract::no_query_parameters;
use crate::ratelimit::RateStatus;

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
        (status = 200, description = "The standing.", body = RateLimitStatus),
        (status = 400, description = "`unknown_query_parameter`: the operation takes none.",
            body = ErrorObject),
    ),
)]
pub async fn get_rate_limit(req: HttpRequest, caller: Caller) -> Result<HttpResponse, ApiError> {
    no_query_parameters(&req)?;
    let status = req
        .extensions()
        .get::<RateStatus>()
        .copied()
        .ok_or_else(|| ApiError::internal("admission left no rate-limit standing"))?;
    // (Admission reads the standing for every authenticated GET or HEAD of this route, as the
    // router sees its path: the handler never runs without it.)
    Ok(HttpResponse::Ok().json(RateLimitStatus {
        plan: caller.key().plan,
        minute: WindowStatus::from(&status.decision.minute),
        day: WindowStatus::from(&status.decision.day),
    }))
}
