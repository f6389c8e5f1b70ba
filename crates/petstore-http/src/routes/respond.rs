//! Successful JSON responses.

use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, HttpResponseBuilder, ResponseError};

use crate::encode::EncodeJson;
use crate::error::ApiError;

/// A JSON body of `items` resources, through serde.
pub fn json_body<T: serde::Serialize>(
    response: HttpResponseBuilder,
    value: &T,
    items: usize,
) -> HttpResponse {
    body_of(response, items, |out| serde_json::to_writer(out, value))
}

/// A JSON body of `items` resources with a direct encoding ([`EncodeJson`]: pets).
pub fn encoded_body<T: EncodeJson + ?Sized>(
    response: HttpResponseBuilder,
    value: &T,
    items: usize,
) -> HttpResponse {
    body_of(response, items, |out| value.encode_json(out))
}

/// The JSON that `write` produces, encoded into a buffer sized for `items` resources up front:
/// growing one from empty (what `HttpResponseBuilder::json` does) reallocated and copied it
/// several times per page.
fn body_of(
    mut response: HttpResponseBuilder,
    items: usize,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> HttpResponse {
    /// A typical resource's JSON (a pet with a short name is about 70 bytes).
    const PER_ITEM: usize = 96;
    let mut body = Vec::with_capacity(2 + PER_ITEM * items);
    match write(&mut body) {
        Ok(()) => response.content_type(ContentType::json()).body(body),
        Err(error) => ApiError::internal(error).error_response(),
    }
}
