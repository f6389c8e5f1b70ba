//! The safety net behind "every error is an Error object".

use actix_web::body::BoxBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::header;

use crate::error::{ErrorCode, default_retry_after, error_response};

/// Replaces any error response that is not already JSON (one produced by actix itself, say) by
/// the Error object for its status. Headers the original carried (`Allow`, ...) are kept.
pub(super) fn json_errors(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    let code = ErrorCode::for_status(status.as_u16());
    let message = status.canonical_reason().unwrap_or("error").to_lowercase();
    let (request, original) = response.into_parts();
    // The body's `status` must be the response's, even for a status with no code of its own.
    let mut replacement = error_response(status, code, &message, default_retry_after(code));
    for (name, value) in original.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(request, replacement)
}
