//! The routes under the base path, one module per resource, and health checks outside it.
//! Handlers parse (with `extract` and the domain), call the storage through [`Database`](crate::db::Database),
//! and map the result; they know no backend.

pub mod health;
pub mod index;
pub mod metrics;
pub mod openapi;
pub mod orders;
pub mod pets;
pub mod rate_limit;
pub(crate) mod respond;
pub mod webhooks;

use actix_web::middleware::from_fn;
use actix_web::{FromRequest, Handler, HttpRequest, HttpResponse, Resource, Responder, Route, web};

use crate::auth::{Caller, Read, Write};
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
    let standing = Access {
        counting: Counting::StandingRead,
        ..keyed
    };
    #[allow(deprecated)] // the handler is deprecated for clients; it is served to its sunset
    let get_pet = read(pets::get_pet);
    #[allow(deprecated)] // the same: served to its sunset
    let delete_order = web::delete().to(orders::delete_order);
    let (post, delete, patch) = (web::post, web::delete, web::patch);
    // Path under the base, name, access, `Allow`, routes.
    #[rustfmt::skip]
    let table: [(&str, &'static str, Access, &'static str, Vec<Route>); 16] = [
        // The base address itself, with and without its trailing slash.
        ("", "apiIndex", Access::OPEN, "GET, HEAD", read(index::get_index)),
        ("/", "apiIndexSlash", Access::OPEN, "GET, HEAD", read(index::get_index)),
        ("/pets", "pets", keyed, "GET, HEAD, POST",
            and(read(pets::list_pets), post().to(pets::create_pet))),
        ("/pets/{petId}", "getPet", Access::key(Marks::Deprecated), "GET, HEAD", get_pet),
        ("/rate_limit", "getRateLimit", standing, "GET, HEAD", read(rate_limit::get_rate_limit)),
        ("/openapi.json", "openapi", Access::OPEN, "GET, HEAD", read(openapi::openapi_json)),
        ("/store/orders", "listOrders", experimental, "GET, HEAD, POST",
            and(read(orders::list_orders), post().to(orders::place_order))),
        ("/store/orders/{orderId}", "getOrder", experimental, "GET, HEAD, DELETE",
            and(read(orders::get_order), delete_order)),
        ("/store/orders/{orderId}/cancel", "cancelOrder", experimental, "POST",
            vec![post().to(orders::cancel_order)]),
        ("/store/inventory", "getInventory", experimental, "GET, HEAD",
            read(orders::get_inventory)),
        ("/webhook_endpoints", "listWebhookEndpoints", experimental, "GET, HEAD, POST",
            and(read(webhooks::list_endpoints::<Caller<Read>>),
                post().to(webhooks::create_endpoint::<Caller<Write>>))),
        ("/webhook_endpoints/{endpointId}", "getWebhookEndpoint", experimental,
            "GET, HEAD, PATCH, DELETE",
            and(and(read(webhooks::get_endpoint::<Caller<Read>>),
                    patch().to(webhooks::update_endpoint::<Caller<Write>>)),
                delete().to(webhooks::delete_endpoint::<Caller<Write>>))),
        ("/webhook_endpoints/{endpointId}/rotate_secret", "rotateWebhookSecret", experimental,
            "POST", vec![post().to(webhooks::rotate_secret::<Caller<Write>>)]),
        ("/webhook_endpoints/{endpointId}/deliveries", "listWebhookDeliveries", experimental,
            "GET, HEAD", read(webhooks::list_deliveries)),
        ("/webhook_endpoints/{endpointId}/deliveries/{deliveryId}", "getWebhookDelivery",
            experimental, "GET, HEAD", read(webhooks::get_delivery::<Caller<Read>>)),
        ("/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver", "redeliverWebhook",
            experimental, "POST", vec![post().to(webhooks::redeliver::<Caller<Write>>)]),
    ];
    for (path, name, access, allow, routes) in table {
        let resource = resource(&format!("{base}{path}"), name, allow, routes);
        cfg.service(resource.wrap(from_fn(move |req, next| admission(access, req, next))));
    }
}

/// `routes` and `route`.
pub(crate) fn and(mut routes: Vec<Route>, route: Route) -> Vec<Route> {
    routes.push(route);
    routes
}

/// `GET` and `HEAD` (the same handler; the HTTP layer leaves the body out) to `handler`.
pub(crate) fn read<F, Args>(handler: F) -> Vec<Route>
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    vec![web::get().to(handler.clone()), web::head().to(handler)]
}

/// One entry of a route table (the public API's, the admin API's): the resource at `path`
/// named `name`, its `routes`, and `405` with `Allow: allow` for any other method. Who may call
/// it is the table's to add (a `wrap` around it, or around its scope).
pub fn resource(
    path: &str,
    name: &'static str,
    allow: &'static str,
    routes: impl IntoIterator<Item = Route>,
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
