//! The routes under the base path, one module per resource, and health checks outside it.
//! Handlers parse (with `extract` and the domain), call the storage through [`Database`](crate::db::Database),
//! and map the result; they know no backend.

pub mod health;
pub mod metrics;
pub mod openapi;
mod orders;
mod pets;
mod rate_limit;
pub(crate) mod respond;

use actix_web::middleware::from_fn;
use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::ApiError;
use crate::middleware::{Marks, require_key_and_mark};
use crate::ratelimit::RATE_LIMIT_PATH;

/// Registers the API's resources under `base` (the base path, e.g. `/v1`), and its description
/// (`openapi.json`, which needs no key). Each API resource requires a key (so `401` precedes
/// `405`), answers `HEAD` like `GET` without the body (RFC 9110 9.3.2: the HTTP layer
/// leaves the body out), and a wrong method with `405` and `Allow`.
/// They are registered with their full paths rather than in a `/v1` scope, which would be one
/// more service (and boxed future) on every request.
pub fn configure(cfg: &mut web::ServiceConfig, base: &str) {
    cfg.service(
        web::resource(format!("{base}/pets"))
            .name("pets")
            .route(web::get().to(pets::list_pets))
            .route(web::head().to(pets::list_pets))
            .route(web::post().to(pets::create_pet))
            .default_service(web::to(method_not_allowed("GET, HEAD, POST")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::None, req, next)
            })),
    )
    .service(
        #[allow(deprecated)] // the handler is deprecated for clients; it is served to its sunset
        web::resource(format!("{base}/pets/{{petId}}"))
            .name("getPet")
            .route(web::get().to(pets::get_pet))
            .route(web::head().to(pets::get_pet))
            .default_service(web::to(method_not_allowed("GET, HEAD")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::Deprecated, req, next)
            })),
    )
    .service(
        web::resource(format!("{base}{RATE_LIMIT_PATH}"))
            .name("getRateLimit")
            .route(web::get().to(rate_limit::get_rate_limit))
            .route(web::head().to(rate_limit::get_rate_limit))
            .default_service(web::to(method_not_allowed("GET, HEAD")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::None, req, next)
            })),
    )
    .service(
        web::resource(format!("{base}/openapi.json"))
            .name("openapi")
            .route(web::get().to(openapi::openapi_json))
            .route(web::head().to(openapi::openapi_json))
            .default_service(web::to(method_not_allowed("GET, HEAD"))),
    )
    .service(
        web::resource(format!("{base}/store/orders"))
            .name("listOrders")
            .route(web::get().to(orders::list_orders))
            .route(web::head().to(orders::list_orders))
            .route(web::post().to(orders::place_order))
            .default_service(web::to(method_not_allowed("GET, HEAD, POST")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::Experimental, req, next)
            })),
    )
    .service(
        web::resource(format!("{base}/store/orders/{{orderId}}"))
            .name("getOrder")
            .route(web::get().to(orders::get_order))
            .route(web::head().to(orders::get_order))
            .route(web::delete().to(orders::cancel_order))
            .default_service(web::to(method_not_allowed("GET, HEAD, DELETE")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::Experimental, req, next)
            })),
    )
    .service(
        web::resource(format!("{base}/store/inventory"))
            .name("getInventory")
            .route(web::get().to(orders::get_inventory))
            .route(web::head().to(orders::get_inventory))
            .default_service(web::to(method_not_allowed("GET, HEAD")))
            .wrap(from_fn(|req, next| {
                require_key_and_mark(Marks::Experimental, req, next)
            })),
    );
}

/// `405` with `Allow: allow`, for any method a resource does not serve.
pub fn method_not_allowed(
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

/// A path parameter `name` that must be an int64 (`400 invalid_path_parameter` otherwise).
pub fn parse_id(name: &'static str, raw: &str) -> Result<i64, ApiError> {
    let invalid = || ApiError::InvalidPath {
        name,
        reason: "must be an integer (int64)",
    };
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    raw.parse().map_err(|_| invalid())
}
