//! The deprecation schedule of the interface's operations: `GET /pets/{petId}` is deprecated
//! and removed on 5 December 2030. Its handler answers `410` from then on; its resource's
//! middleware announces both dates on every response before that. `DELETE
//! /store/orders/{orderId}`, which `POST /store/orders/{orderId}/cancel` replaces, is
//! deprecated and removed on 30 November 2027; its handler announces both on its answers.

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::links::Links;

/// RFC 9745 date (as a structured-field date) on which `GET /pets/{petId}` was deprecated:
/// 2026-01-01T00:00:00Z, the publication of interface 1.0.0 with the deprecation notice.
pub const DEPRECATED_AT: &str = "@1767225600";
/// RFC 8594 sunset of `GET /pets/{petId}`.
pub const SUNSET: &str = "Thu, 05 Dec 2030 00:00:00 GMT";
/// The sunset instant in Unix seconds.
pub const SUNSET_UNIX: u64 = 1_922_659_200;

/// RFC 9745 date on which `DELETE /store/orders/{orderId}` was deprecated: 2026-11-27.
pub const DELETE_ORDER_DEPRECATED_AT: &str = "@1795737600";
/// RFC 8594 sunset of `DELETE /store/orders/{orderId}`: a year later.
pub const DELETE_ORDER_SUNSET: &str = "Tue, 30 Nov 2027 00:00:00 GMT";
/// The same instant in Unix seconds.
pub const DELETE_ORDER_SUNSET_UNIX: u64 = 1_827_532_800;

/// `DELETE /store/orders/{id}`'s marks on an answer: `Deprecation`, `Sunset`, and a `Link` to
/// its successor (for the order `id`, or the template when the path named no valid id) and to
/// where both are documented.
pub fn announce_delete_order(links: &Links, req: &HttpRequest, id: &str, headers: &mut HeaderMap) {
    headers.insert(
        HeaderName::from_static("deprecation"),
        HeaderValue::from_static(DELETE_ORDER_DEPRECATED_AT),
    );
    headers.insert(
        HeaderName::from_static("sunset"),
        HeaderValue::from_static(DELETE_ORDER_SUNSET),
    );
    let base = links.public_base(req);
    let docs = format!("{}#/store/deleteOrder", links.docs_page(req));
    let link = format!(
        "<{base}/store/orders/{id}/cancel>; rel=\"successor-version\", \
         <{docs}>; rel=\"deprecation\"; type=\"text/html\", \
         <{docs}>; rel=\"sunset\"; type=\"text/html\""
    );
    if let Ok(link) = HeaderValue::try_from(link) {
        headers.append(header::LINK, link);
    }
}
