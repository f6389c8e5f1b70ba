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
///
/// A `HEAD` is served as the `GET` it stands for (Swagger UI's service routes `GET` alone);
/// the connection leaves the body out, as for every `HEAD`, keeping its length.
pub async fn tag_files(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if req.method() == Method::HEAD {
        req.head_mut().method = Method::GET;
    }
    let read = req.method() == Method::GET;
    let response = next.call(req).await?.map_into_boxed_body();
    if !read || response.status() != StatusCode::OK {
        return Ok(response);
    }
    let (req, response) = response.into_parts();
    let (mut head, body) = response.into_parts();
    let bytes = match body.try_into_bytes() {
        Ok(bytes) => titled(bytes),
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

/// The page's title as a browser tab shows it: the API's name, not the tool's.
const TITLE: &str = "<title>Animal Store Service: API docs</title>";

/// `bytes` with Swagger UI's own `<title>` (its page, `index.html`) replaced by [`TITLE`];
/// any other file as it is.
fn titled(bytes: actix_web::web::Bytes) -> actix_web::web::Bytes {
    const THEIRS: &[u8] = b"<title>Swagger UI</title>";
    match bytes
        .windows(THEIRS.len())
        .position(|window| window == THEIRS)
    {
        Some(at) => {
            let mut page = Vec::with_capacity(bytes.len() + TITLE.len());
            page.extend_from_slice(&bytes[..at]);
            page.extend_from_slice(TITLE.as_bytes());
            page.extend_from_slice(&bytes[at + THEIRS.len()..]);
            page.into()
        }
        None => bytes,
    }
}
