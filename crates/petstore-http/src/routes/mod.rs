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

use actix_web::dev::HttpServiceFactory;
use actix_web::middleware::from_fn;
use actix_web::{HttpRequest, HttpResponse, Resource, Route, web};

use crate::error::ApiError;
use crate::middleware::{Access, Counting, Marks, admission};

/// The API's resources under `base` (the base path, e.g. `/v1`), each declared once: its path
/// and name, who may call it and how its requests count ([`Access`]), and its operations, whose
/// handlers state the scope they need in their signatures. Each answers `HEAD` like `GET`
/// without the body (RFC 9110 9.3.2: the HTTP layer leaves the body out), and a wrong method
/// with `405` and `Allow` (after admission: `429` and `401` come first).
/// They are registered with their full paths rather than in a `/v1` scope, which would be one
/// more service (and boxed future) on every request.
pub fn configure(cfg: &mut web::ServiceConfig, base: &str) {
    let keyed = Access::key(Marks::None);
    let experimental = Access::key(Marks::Experimental);
    #[allow(deprecated)] // the handler is deprecated for clients; it is served to its sunset
    let get_pet = web::get().to(pets::get_pet);
    #[allow(deprecated)]
    let head_pet = web::head().to(pets::get_pet);
    cfg.service(admitted(
        format!("{base}/pets"),
        "pets",
        keyed,
        "GET, HEAD, POST",
        [
            web::get().to(pets::list_pets),
            web::head().to(pets::list_pets),
            web::post().to(pets::create_pet),
        ],
    ))
    .service(admitted(
        format!("{base}/pets/{{petId}}"),
        "getPet",
        Access::key(Marks::Deprecated),
        "GET, HEAD",
        [get_pet, head_pet],
    ))
    .service(admitted(
        format!("{base}/rate_limit"),
        "getRateLimit",
        Access {
            counting: Counting::StandingRead,
            ..keyed
        },
        "GET, HEAD",
        [
            web::get().to(rate_limit::get_rate_limit),
            web::head().to(rate_limit::get_rate_limit),
        ],
    ))
    .service(admitted(
        format!("{base}/openapi.json"),
        "openapi",
        Access::OPEN,
        "GET, HEAD",
        [
            web::get().to(openapi::openapi_json),
            web::head().to(openapi::openapi_json),
        ],
    ))
    .service(admitted(
        format!("{base}/store/orders"),
        "listOrders",
        experimental,
        "GET, HEAD, POST",
        [
            web::get().to(orders::list_orders),
            web::head().to(orders::list_orders),
            web::post().to(orders::place_order),
        ],
    ))
    .service(admitted(
        format!("{base}/store/orders/{{orderId}}"),
        "getOrder",
        experimental,
        "GET, HEAD, DELETE",
        [
            web::get().to(orders::get_order),
            web::head().to(orders::get_order),
            web::delete().to(orders::cancel_order),
        ],
    ))
    .service(admitted(
        format!("{base}/store/inventory"),
        "getInventory",
        experimental,
        "GET, HEAD",
        [
            web::get().to(orders::get_inventory),
            web::head().to(orders::get_inventory),
        ],
    ));
}

/// A resource of the public API: [`resource`], behind admission as `access` declares.
fn admitted<const N: usize>(
    path: String,
    name: &'static str,
    access: Access,
    allow: &'static str,
    routes: [Route; N],
) -> impl HttpServiceFactory {
    resource(&path, name, allow, routes)
        .wrap(from_fn(move |req, next| admission(access, req, next)))
}

/// One entry of a route table (the public API's, the admin API's): the resource at `path`
/// named `name`, its `routes`, and `405` with `Allow: allow` for any other method. Who may call
/// it is the table's to add (a `wrap` around it, or around its scope).
pub fn resource<const N: usize>(
    path: &str,
    name: &'static str,
    allow: &'static str,
    routes: [Route; N],
) -> Resource {
    routes
        .into_iter()
        .fold(web::resource(path).name(name), |resource, route| {
            resource.route(route)
        })
        .default_service(web::to(method_not_allowed(allow)))
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
