//! Path parameters: the ids in resource paths, each a type of its own that parses itself
//! strictly (`400 invalid_path_parameter` naming the parameter) and describes itself to the
//! OpenAPI documents (`params(EndpointId)` in an annotation).

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::{IntoParams, PartialSchema};

use crate::error::ApiError;

/// Declares an int64 path parameter: a newtype over the id, extracted from the segment the
/// route names `$name`, and described as `$description` in the documents.
macro_rules! path_id {
    ($(#[$doc:meta])* $type:ident, $name:literal, $description:literal) => {
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

        impl IntoParams for $type {
            fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                vec![path_parameter($name, $description)]
            }
        }
    };
}

path_id!(
    /// `{petId}`.
    PetId,
    "petId",
    "The pet's id."
);
path_id!(
    /// `{orderId}`.
    OrderId,
    "orderId",
    "The order's id."
);
path_id!(
    /// `{endpointId}`: a webhook endpoint.
    EndpointId,
    "endpointId",
    "The endpoint's id."
);
path_id!(
    /// `{deliveryId}`: one of a webhook endpoint's deliveries.
    DeliveryId,
    "deliveryId",
    "The delivery's id."
);
path_id!(
    /// `{keyId}`, in the admin API.
    KeyId,
    "keyId",
    "The key's id."
);

/// The description of path parameter `name`: required, an int64.
fn path_parameter(name: &str, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .description(Some(description))
        .required(Required::True)
        .schema(Some(i64::schema()))
        .build()
}

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
