//! Cross-cutting response rules.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

use crate::AppState;
use crate::error::{ErrorBody, ErrorCode};

/// The safety net behind "every error is an Error object": any error response that is not
/// already JSON (one produced by actix itself, say) is replaced by the Error object for its
/// status. Headers the original carried (`Allow`, ...) are kept.
pub async fn json_errors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // No clone of the request may be held across `next.call`: routing needs sole ownership.
    // Inner services answer errors as responses, so an `Err` here is not expected.
    let response = next.call(req).await?.map_into_boxed_body();
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return Ok(response);
    }
    let code = ErrorCode::for_status(status);
    let message = status.canonical_reason().unwrap_or("error").to_lowercase();
    let (request, original) = response.into_parts();
    // The body's `status` must be the response's, even for a status with no code of its own.
    let mut replacement = HttpResponse::build(status).json(ErrorBody {
        code: code.as_str(),
        message: &message,
        status: status.as_u16(),
    });
    for (name, value) in original.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    Ok(ServiceResponse::new(request, replacement))
}

/// RFC 9745 date (as a structured-field date) on which `GET /pets/{petId}` was deprecated:
/// 2026-01-01T00:00:00Z, the publication of interface 1.0.0 with the deprecation notice.
pub const DEPRECATED_AT: &str = "@1767225600";
/// RFC 8594 sunset of `GET /pets/{petId}`.
pub const SUNSET: &str = "Thu, 05 Dec 2030 00:00:00 GMT";
/// The sunset instant in Unix seconds.
pub const SUNSET_UNIX: u64 = 1_922_659_200;

/// Marks every response of a deprecated endpoint, errors included: `Deprecation`, `Sunset`, and
/// a `Link` to the replacement (`GET /pets` with a `status` filter).
pub async fn deprecation_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let successor = req.app_data::<web::Data<AppState>>().map(|state| {
        let mut link = String::with_capacity(64);
        link.push('<');
        state.settings.write_public_base(req.request(), &mut link);
        link.push_str("/pets>; rel=\"successor-version\"");
        link
    });
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(
        HeaderName::from_static("deprecation"),
        HeaderValue::from_static(DEPRECATED_AT),
    );
    headers.insert(
        HeaderName::from_static("sunset"),
        HeaderValue::from_static(SUNSET),
    );
    if let Some(link) = successor.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.append(header::LINK, link);
    }
    Ok(response)
}
