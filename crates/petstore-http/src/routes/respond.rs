//! Successful JSON responses, and conditional ones.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, ContentType};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError};

use crate::conditional::{Caching, ETag, Fingerprint};
use crate::encode::EncodeJson;
use crate::error::ApiError;

/// A `200` of a representation tagged `tag`, whose body `body` writes, unless the request's
/// `If-None-Match` names the tag: then `304 Not Modified`, with the same headers and no body
/// (`body` is not called: nothing is encoded). Either way with `ETag` and `caching`'s headers.
/// Admission takes a `304` back from the caller's counts.
pub fn conditional(
    req: &HttpRequest,
    mut response: HttpResponseBuilder,
    tag: ETag,
    caching: Caching,
    body: impl FnOnce(HttpResponseBuilder) -> HttpResponse,
) -> HttpResponse {
    response.insert_header((header::ETAG, tag.header_value()));
    let mut answer = if tag.matched_by(req.headers()) {
        response.status(StatusCode::NOT_MODIFIED).finish()
    } else {
        body(response)
    };
    // Not on the error of a body that could not be encoded: errors are `no-store`.
    if !answer.status().is_server_error() {
        caching.write(answer.headers_mut());
    }
    answer
}

/// A `200` of `value` as JSON, tagged by what it shows ([`ETag::of`]) for a client's cache: a
/// `304` when `If-None-Match` names the tag, with nothing encoded.
pub fn fingerprinted_json<T: Fingerprint + serde::Serialize>(
    req: &HttpRequest,
    value: &T,
) -> HttpResponse {
    let tag = ETag::of(value);
    conditional(req, HttpResponse::Ok(), tag, Caching::Private, |r| {
        json_body(r, value, 1)
    })
}

/// A `200` (or `response`'s status) of the JSON `body`, tagged by its bytes (a `304` when
/// `If-None-Match` names them): for representations read rarely, encoded before the tag is known
/// rather than fingerprinted field by field as a pet is (the documents, webhook endpoints).
pub fn tagged_bytes(
    req: &HttpRequest,
    response: HttpResponseBuilder,
    body: Vec<u8>,
    caching: Caching,
) -> HttpResponse {
    let tag = ETag::of_bytes(&body);
    conditional(req, response, tag, caching, |mut r| {
        r.content_type(ContentType::json()).body(body)
    })
}

/// `value` as JSON, tagged by its bytes (see [`tagged_bytes`]), for a client's cache only.
pub fn tagged_json(
    req: &HttpRequest,
    response: HttpResponseBuilder,
    value: &impl serde::Serialize,
) -> Result<HttpResponse, ApiError> {
    let body = serde_json::to_vec(value).map_err(ApiError::internal)?;
    Ok(tagged_bytes(req, response, body, Caching::Private))
}

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
