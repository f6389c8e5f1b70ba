//! The docs page's files, tagged for conditional requests.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;

use crate::conditional::{Caching, ETag};

/// A file's `200` gets an `ETag` of its bytes and `Cache-Control: public, no-cache`; a `GET` or
/// `HEAD` whose `If-None-Match` names the tag gets `304 Not Modified` instead, with no body.
/// Swagger UI's files are embedded in the binary: a new version of the service may change them,
/// which the tag tells.
pub async fn tag_files(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let read = matches!(*req.method(), Method::GET | Method::HEAD);
    let response = next.call(req).await?.map_into_boxed_body();
    if !read || response.status() != StatusCode::OK {
        return Ok(response);
    }
    let (req, response) = response.into_parts();
    let (mut head, body) = response.into_parts();
    let bytes = match body.try_into_bytes() {
        Ok(bytes) => bytes,
        // A streamed body (none of Swagger UI's files is one) goes untagged.
        Err(body) => return Ok(ServiceResponse::new(req, head.set_body(body))),
    };
    let tag = ETag::of_bytes(&bytes);
    let headers = head.headers_mut();
    headers.insert(header::ETAG, tag.header_value());
    Caching::Public.write(headers);
    let response = if tag.matched_by(req.headers()) {
        headers.remove(header::CONTENT_LENGTH);
        headers.remove(header::CONTENT_TYPE);
        *head.status_mut() = StatusCode::NOT_MODIFIED;
        head.set_body(BoxBody::new(()))
    } else {
        head.set_body(BoxBody::new(bytes))
    };
    Ok(ServiceResponse::new(req, response))
}
