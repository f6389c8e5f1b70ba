//! Query strings: [`Query`] for the operations that take parameters (each parameter set a type
//! that parses itself from the decoded pairs, [`FromQuery`]), [`NoQuery`] for those that take
//! none.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use petstore_domain::{OrderListQuery, PageRequest, PetListQuery, ValidationError};

use crate::error::ApiError;

/// A set of query parameters, parsed strictly from the decoded `name=value` pairs: unknown,
/// repeated and malformed parameters are `400`, naming the parameter.
pub trait FromQuery: Sized {
    /// Parses `pairs`; `req` gives the context a parameter is judged in (the clock, say).
    fn from_query(pairs: &[(String, String)], req: &HttpRequest) -> Result<Self, ApiError>;
}

/// The pairs as `&str`s, for the domain's parsers.
pub fn as_strs(pairs: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    pairs
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
}

impl FromQuery for PetListQuery {
    fn from_query(pairs: &[(String, String)], _: &HttpRequest) -> Result<Self, ApiError> {
        Ok(Self::from_pairs(as_strs(pairs))?)
    }
}

impl FromQuery for OrderListQuery {
    fn from_query(pairs: &[(String, String)], _: &HttpRequest) -> Result<Self, ApiError> {
        Ok(Self::from_pairs(as_strs(pairs))?)
    }
}

/// `limit` and `after` alone (a webhook endpoint's deliveries).
impl FromQuery for PageRequest {
    fn from_query(pairs: &[(String, String)], _: &HttpRequest) -> Result<Self, ApiError> {
        Ok(Self::from_pairs(as_strs(pairs))?)
    }
}

/// The operation's query parameters, as `T`.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<T: FromQuery> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(pairs(req).and_then(|pairs| T::from_query(&pairs, req).map(Self)))
    }
}

/// For an operation that takes no query parameter: `400 unknown_query_parameter` naming the
/// first one sent.
#[derive(Debug, Clone, Copy)]
pub struct NoQuery;

impl FromRequest for NoQuery {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(pairs(req).and_then(|pairs| match pairs.into_iter().next() {
            Some((name, _)) => Err(ValidationError::UnknownParameter(name).into()),
            None => Ok(Self),
        }))
    }
}

/// The decoded `name=value` pairs of the query string, in order.
fn pairs(req: &HttpRequest) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_str(req.query_string()).map_err(|e| {
        ApiError::Validation(ValidationError::InvalidParameter {
            name: "query",
            reason: format!("cannot be decoded: {e}"),
        })
    })
}
