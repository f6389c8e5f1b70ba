//! Cross-cutting response rules.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

use crate::error::{ErrorBody, ErrorCode};
use crate::{AppState, auth, ratelimit};

/// The application-wide middleware, outside routing: admission ([`ratelimit::gate`]: who is
/// calling, within their limits, the rate-limit headers) inside the JSON-error safety net. The
/// two are one layer because each layer costs a boxed future per request.
pub async fn admission(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // Inner services answer errors as responses, so an `Err` here is not expected.
    let response = ratelimit::gate(req, next).await?.map_into_boxed_body();
    Ok(json_errors(response))
}

/// The safety net behind "every error is an Error object": any error response that is not
/// already JSON (one produced by actix itself, say) is replaced by the Error object for its
/// status. Headers the original carried (`Allow`, ...) are kept.
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
    ServiceResponse::new(request, replacement)
}

/// What a resource adds to every one of its responses, errors included.
#[derive(Debug, Clone, Copy)]
pub enum Marks {
    /// `Deprecation`, `Sunset`, and a `Link` to the replacement (`GET /pets` with a `status`
    /// filter): `GET /pets/{petId}`.
    Deprecated,
    /// `X-API-Stability: experimental`: the orders area, whose shape may change without a new
    /// version.
    Experimental,
}

/// A resource's middleware: [`auth::require_key`], and the resource's [`Marks`] on whatever
/// comes back. One layer rather than two, for the same reason as [`admission`].
pub async fn require_key_and_mark(
    marks: Marks,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let successor = match marks {
        Marks::Deprecated => req
            .app_data::<web::Data<AppState>>()
            .and_then(|state| state.settings.successor_link(req.request())),
        Marks::Experimental => None,
    };
    let mut response = auth::require_key(req, next).await?;
    let headers = response.headers_mut();
    match marks {
        Marks::Deprecated => {
            headers.insert(DEPRECATION, HeaderValue::from_static(DEPRECATED_AT));
            headers.insert(SUNSET_HEADER, HeaderValue::from_static(SUNSET));
            if let Some(link) = successor {
                headers.append(header::LINK, link);
            }
        }
        Marks::Experimental => {
            headers.insert(STABILITY, HeaderValue::from_static("experimental"));
        }
    }
    Ok(response)
}

const DEPRECATION: HeaderName = HeaderName::from_static("deprecation");
const SUNSET_HEADER: HeaderName = HeaderName::from_static("sunset");
const STABILITY: HeaderName = HeaderName::from_static("x-api-stability");

/// RFC 9745 date (as a structured-field date) on which `GET /pets/{petId}` was deprecated:
/// 2026-01-01T00:00:00Z, the publication of interface 1.0.0 with the deprecation notice.
pub const DEPRECATED_AT: &str = "@1767225600";
/// RFC 8594 sunset of `GET /pets/{petId}`.
pub const SUNSET: &str = "Thu, 05 Dec 2030 00:00:00 GMT";
/// The sunset instant in Unix seconds.
pub const SUNSET_UNIX: u64 = 1_922_659_200;
