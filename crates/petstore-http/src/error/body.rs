//! The Error object of the interface, `{code, message, status}`, and the one function that
//! writes it: every error response of the service, whether from an [`ApiError`](super::ApiError)
//! or from the safety net for errors actix produces itself, goes through [`error_response`].

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, HttpResponseBuilder};
use serde::Serialize;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use super::ErrorCode;

/// The Error object: what every error response carries, and its schema (`Error`) in the OpenAPI
/// document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
#[serde(deny_unknown_fields)] // for the schema: `additionalProperties: false`
pub struct ErrorObject<'a> {
    /// Machine-readable: one of the catalogue's codes (`docs/errors.md`). Clients branch on it.
    #[schema(schema_with = code_schema)]
    code: &'static str,
    /// For people; never includes internal details.
    message: &'a str,
    /// The HTTP status of the response, repeated.
    #[schema(minimum = 400, maximum = 599)]
    status: u16,
}

/// The `code` property: a string from the closed catalogue.
fn code_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ErrorCode::ALL.map(ErrorCode::as_str)))
        .description(Some(
            "Machine-readable: one of the catalogue's codes (`docs/errors.md`). Clients branch on it.",
        ))
}

/// The bearer challenge of a `401` (RFC 6750 §3): no error code when no token came.
const BEARER: &str = "Bearer realm=\"petstore\"";
/// The challenge of a `401` for a bearer token that is not a valid key, whatever is wrong with
/// it (malformed, unknown, revoked, expired: one answer).
pub(super) const INVALID_TOKEN: &str = "Bearer realm=\"petstore\", error=\"invalid_token\"";
/// The challenge of the `403` for a key whose scope does not allow the operation.
const INSUFFICIENT_SCOPE: &str = "Bearer realm=\"petstore\", error=\"insufficient_scope\"";

/// An Error object response: `code` and `message`, sent with `status` (the code's own status,
/// except from the safety net, where the body must repeat whatever status the response has).
/// Adds the headers that every error of the code carries: `WWW-Authenticate` on `401` (the
/// challenge without an error code; [`super::ApiError`] names `invalid_token` when a token
/// came) and on `403 insufficient_scope`, and
/// `Retry-After` when the error says when to come back (`retry_after`, whole seconds: the one
/// place the field is written). The code also goes into the response's extensions, where the
/// access log finds it.
pub fn error_response(
    status: StatusCode,
    code: ErrorCode,
    message: &str,
    retry_after: Option<u64>,
) -> HttpResponse {
    let mut response = HttpResponseBuilder::new(status).json(ErrorObject {
        code: code.as_str(),
        message,
        status: status.as_u16(),
    });
    let headers = response.headers_mut();
    let challenge = match code {
        ErrorCode::Unauthorized => Some(BEARER),
        ErrorCode::InsufficientScope => Some(INSUFFICIENT_SCOPE),
        _ => None,
    };
    if let Some(challenge) = challenge {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    if let Some(seconds) = retry_after {
        headers.insert(header::RETRY_AFTER, seconds.into());
    }
    // An error tells of this moment (a limit, an outage, a pet not created yet): no cache, a
    // client's own included, keeps one to answer a later request with it.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // For the access log.
    response.extensions_mut().insert(code);
    response
}

/// When an error of `code` says to come back, whatever caused it: `503` in a second; a full disk
/// in a minute (space is not freed in a second: an operator has to act). Errors that carry a
/// wait of their own (a `429`, a key in flight) say so themselves ([`super::ApiError::retry_after`]).
pub fn default_retry_after(code: ErrorCode) -> Option<u64> {
    match code {
        ErrorCode::ServiceUnavailable => Some(1),
        ErrorCode::StorageFull => Some(60),
        _ => None,
    }
}
