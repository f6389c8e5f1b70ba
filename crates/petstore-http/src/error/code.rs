//! The catalogue of `code` values lives in the domain crate (`petstore_domain::ErrorCode`),
//! shared with clients; this is its HTTP status as actix-web spells it.

use actix_web::http::StatusCode;

pub use petstore_domain::ErrorCode;

/// The HTTP status `code` is sent with.
pub fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
