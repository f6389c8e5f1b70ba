//! Request parsing that reports errors as the interface wants them, one extractor per kind of
//! input, used alike by the public and the admin API: the strict JSON body ([`JsonBody`], or
//! [`JsonBytes`] unparsed), path ids ([`PetId`], [`OrderId`], [`KeyId`]), query parameters
//! ([`Query`] of a [`FromQuery`] type, or [`NoQuery`]) and the `Idempotency-Key` header
//! ([`IdempotencyHeader`]).

mod header;
mod json;
mod path;
mod query;

pub use header::{IDEMPOTENCY_KEY, IdempotencyHeader};
pub use json::{BodyTimeout, JsonBody, JsonBytes, MAX_BODY_BYTES, parse};
pub use path::{DeliveryId, EndpointId, KeyId, OrderId, PetId};
pub use query::{FromQuery, NoQuery, Query, as_strs};

/// Implements `FromRequest` for a value a middleware left in the request's extensions for the
/// handlers (the admin token, the caller's rate-limit standing): a clone of it, or the error
/// `$missing` when it is not there.
macro_rules! from_extensions {
    ($type:ty, $missing:expr) => {
        impl actix_web::FromRequest for $type {
            type Error = $crate::error::ApiError;
            type Future = std::future::Ready<Result<Self, Self::Error>>;

            fn from_request(
                req: &actix_web::HttpRequest,
                _: &mut actix_web::dev::Payload,
            ) -> Self::Future {
                let found = actix_web::HttpMessage::extensions(req)
                    .get::<Self>()
                    .cloned();
                std::future::ready(found.ok_or_else(|| $missing))
            }
        }
    };
}
pub(crate) use from_extensions;
