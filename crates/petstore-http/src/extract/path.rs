//! Path parameters: the ids in resource paths, each a type of its own that parses itself
//! strictly (`400 invalid_path_parameter` naming the parameter).

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};

use crate::error::ApiError;

/// Declares an int64 path parameter: a newtype over the id, extracted from the segment the
/// route names `$name`.
macro_rules! path_id {
    ($(#[$doc:meta])* $type:ident, $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $type(pub i64);

        impl $type {
            /// The parameter's name in the route and in errors.
            pub const NAME: &'static str = $name;
        }

        impl FromRequest for $type {
            type Error = ApiError;
            type Future = Ready<Result<Self, ApiError>>;

            fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
                let raw = req.match_info().get($name).unwrap_or_default();
                ready(parse_id($name, raw).map(Self))
            }
        }
    };
}

path_id!(
    /// `{petId}`.
    PetId,
    "petId"
);
path_id!(
    /// `{orderId}`.
    OrderId,
    "orderId"
);
path_id!(
    /// `{endpointId}`: a webhook endpoint.
    EndpointId,
    "endpointId"
);
path_id!(
    /// `{deliveryId}`: one of a webhook endpoint's deliveries.
    DeliveryId,
    "deliveryId"
);
path_id!(
    /// `{keyId}`, in the admin API.
    KeyId,
    "keyId"
);

/// A path parameter `name` that must be an int64 (`400 invalid_path_parameter` otherwise): an
/// optional `-` and ASCII digits only (no `+`, no spaces), within the int64 range.
fn parse_id(name: &'static str, raw: &str) -> Result<i64, ApiError> {
    let invalid = || ApiError::InvalidPath {
        name,
        reason: "must be an integer (int64)",
    };
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    raw.parse().map_err(|_| invalid())
}
