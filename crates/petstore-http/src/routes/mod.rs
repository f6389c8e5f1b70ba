//! Routes under the base path, one module per resource.

pub mod health;
mod orders;
mod pets;

use actix_web::http::header::ContentType;
use actix_web::middleware::from_fn;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError, web};

use crate::encode::EncodeJson;
use crate::middleware::{self, Marks};
use crate::{ApiError, HttpSettings, auth};

/// Registers the API's resources under `base` (the base path, e.g. `/v1`). Each resource
/// authenticates (so `401` precedes `405`), and answers a wrong method with `405` and `Allow`.
/// They are registered with their full paths rather than in a `/v1` scope, which would be one
/// more service (and boxed future) on every request.
pub fn configure(cfg: &mut web::ServiceConfig, base: &str) {
    cfg.service(
        web::resource(format!("{base}/pets"))
            .name("pets")
            .route(web::get().to(pets::list_pets))
            .route(web::post().to(pets::create_pet))
            .default_service(web::to(method_not_allowed("GET, POST")))
            .wrap(from_fn(auth::require_key)),
    )
    .service(
        web::resource(format!("{base}/pets/{{petId}}"))
            .name("getPet")
            .route(web::get().to(pets::get_pet))
            .default_service(web::to(method_not_allowed("GET")))
            .wrap(from_fn(|req, next| {
                middleware::require_key_and_mark(Marks::Deprecated, req, next)
            })),
    )
    .service(
        web::resource(format!("{base}/store/orders"))
            .name("listOrders")
            .route(web::get().to(orders::list_orders))
            .default_service(web::to(method_not_allowed("GET")))
            .wrap(from_fn(|req, next| {
                middleware::require_key_and_mark(Marks::Experimental, req, next)
            })),
    );
}

fn method_not_allowed(
    allow: &'static str,
) -> impl Fn(HttpRequest) -> std::future::Ready<Result<HttpResponse, ApiError>> + Clone + 'static {
    move |req: HttpRequest| {
        std::future::ready(Err(ApiError::MethodNotAllowed {
            method: req.method().to_string(),
            allow,
        }))
    }
}

/// `404` for any path that is not an endpoint.
pub async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::RouteNotFound(req.path().to_owned()))
}

/// A JSON body of `items` resources, through serde.
fn json_body<T: serde::Serialize>(
    response: HttpResponseBuilder,
    value: &T,
    items: usize,
) -> HttpResponse {
    body_of(response, items, |out| serde_json::to_writer(out, value))
}

/// A JSON body of `items` resources with a direct encoding ([`EncodeJson`]: pets).
fn encoded_body<T: EncodeJson + ?Sized>(
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

/// `<{base}{path}?limit=…[&status=…]&after=…>; rel="next"` (RFC 8288), the link to the page
/// after `after`. Every value is digits or a status name, so nothing needs percent-encoding.
fn next_link(
    settings: &HttpSettings,
    req: &HttpRequest,
    path: &str,
    limit: u32,
    status: Option<&str>,
    after: i64,
) -> String {
    let mut digits = itoa::Buffer::new();
    let mut link = String::with_capacity(96);
    link.push('<');
    settings.write_public_base(req, &mut link);
    link.push_str(path);
    link.push_str("?limit=");
    link.push_str(digits.format(limit));
    if let Some(status) = status {
        link.push_str("&status=");
        link.push_str(status);
    }
    link.push_str("&after=");
    link.push_str(digits.format(after));
    link.push_str(">; rel=\"next\"");
    link
}
