//! The safety net behind "every error is an Error object".

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;

use crate::connection::Connection;
use crate::error::{ErrorCode, error_response};

/// Replaces any error response that is not already JSON (one produced by actix itself, say) by
/// the Error object for its status. Headers the original carried (`Allow`, ...) are kept.
fn json_errors(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
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
    let mut replacement = error_response(status, code, &message);
    for (name, value) in original.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(request, replacement)
}

/// The application-wide layer around routing (of the API's application and the admin
/// listener's): every error answer becomes the Error object ([`json_errors`]), and a chunked
/// body an error answer leaves unread stops being read (see `connection`).
pub async fn error_objects(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let connection = Connection::of_chunked(&req);
    let response = next.call(req).await?.map_into_boxed_body();
    if let Some(connection) = connection {
        connection.answered(response.status());
    }
    Ok(json_errors(response))
}
