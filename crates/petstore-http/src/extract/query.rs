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
