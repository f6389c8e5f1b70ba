//! What the PostgreSQL and MariaDB floors answer, written once: a page of pets (`limit + 1`
//! rows read, to tell whether a next page follows) as the service answers it, with its bytes
//! and its header set (the rate-limit headers, a request id, `Link` when a next page follows,
//! the tag and caching headers). Included by `pg_floor.rs` and `mysql_floor.rs`.

use actix_web::http::header::{self, ContentType, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use petstore_domain::Pet;
use petstore_http::conditional::{Caching, ETag};
use petstore_http::encode::EncodeJson;

/// The request's `limit` (20 when absent or unreadable: a floor checks nothing).
pub fn limit(req: &HttpRequest) -> i64 {
    req.query_string()
        .split('&')
        .find_map(|pair| pair.strip_prefix("limit="))
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(20)
}

/// The page of `limit` pets of `pets` (read with one more, to tell whether a next page
/// follows), answered as the service answers the list route.
pub fn answer(req: &HttpRequest, limit: i64, mut pets: Vec<Pet>) -> HttpResponse {
    let more = pets.len() as i64 > limit;
    pets.truncate(limit as usize);
    let mut response = HttpResponse::Ok();
    if more && let Some(last) = pets.last() {
        let host = req.connection_info().host().to_owned();
        response.insert_header((
            header::LINK,
            format!(
                "<http://{host}/v1/pets?limit={limit}&after={}>; rel=\"next\"",
                last.id
            ),
        ));
    }
    for (name, value) in [
        ("x-ratelimit-limit", "1000000"),
        ("x-ratelimit-remaining", "999999"),
        ("x-ratelimit-reset", "1795264500"),
        (
            "ratelimit-policy",
            "\"minute\";q=1000000;w=60, \"day\";q=100000000;w=86400",
        ),
        (
            "ratelimit",
            "\"minute\";r=999999;t=41, \"day\";r=99999999;t=41095",
        ),
        ("x-request-id", "0199e5a4-7c1e-7d2a-9b3c-5d6e7f809a1b"),
    ] {
        response.insert_header((
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        ));
    }
    // The service's validator and caching headers, computed as it computes them.
    let next = more.then(|| pets.last().map(|pet| pet.id)).flatten();
    response.insert_header((
        header::ETAG,
        ETag::of(&(pets.as_slice(), next)).header_value(),
    ));
    let mut body = Vec::with_capacity(2 + 96 * pets.len());
    let mut response = match pets.as_slice().encode_json(&mut body) {
        Ok(()) => response.content_type(ContentType::json()).body(body),
        Err(error) => return HttpResponse::InternalServerError().body(error.to_string()),
    };
    Caching::Private.write(response.headers_mut());
    response
}
