//! Query strings.

use actix_web::HttpRequest;
use petstore_domain::ValidationError;

use crate::error::ApiError;

/// The decoded `name=value` pairs of the query string, in order.
pub fn query_pairs(req: &HttpRequest) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_str(req.query_string()).map_err(|e| {
        ApiError::Validation(ValidationError::InvalidParameter {
            name: "query",
            reason: format!("cannot be decoded: {e}"),
        })
    })
}

/// For an operation that takes no query parameter: `400 unknown_query_parameter` naming the
/// first one sent.
pub fn no_query_parameters(req: &HttpRequest) -> Result<(), ApiError> {
    match query_pairs(req)?.into_iter().next() {
        Some((name, _)) => Err(ValidationError::UnknownParameter(name).into()),
        None => Ok(()),
    }
}
