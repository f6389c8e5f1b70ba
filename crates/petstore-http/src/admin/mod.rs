//! The admin API, over what operators do to API keys and orders (`petstore_domain::key_admin`
//! and `order_admin`, which the `petstore keys` and `petstore orders` commands run too), served
//! on a listener of its own (`--admin-bind`), never on the public one: its routes
//! ([`configure`]), its
//! admin-token authentication ([`token`]), its audit log and its OpenAPI document
//! ([`openapi`]).

pub mod openapi;
mod orders;
mod routes;
pub mod token;

use actix_web::middleware::from_fn;
use actix_web::{Route, web};

pub use routes::AUDIT_LOG;

use crate::routes::{and, read, resource};

/// The admin API's base path.
pub const ADMIN_BASE: &str = "/admin/v1";

/// Registers the admin API's route table (the same [`resource`] entries as the public API's):
/// the keys and the orders, behind an admin token, and the document, which needs none.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let (post, patch) = (web::post, web::patch);
    let path = format!("{ADMIN_BASE}/openapi.json");
    cfg.service(resource(
        &path,
        "adminOpenapi",
        "GET, HEAD",
        read(openapi::openapi_json),
    ));
    // Path under `/keys`, name, `Allow`, routes.
    #[rustfmt::skip]
    let keys: [(&str, &'static str, &'static str, Vec<Route>); 5] = [
        ("", "listKeys", "GET, HEAD, POST",
            and(read(routes::list_keys), post().to(routes::create_key))),
        ("/{keyId}", "getKey", "GET, HEAD, PATCH",
            and(read(routes::get_key), patch().to(routes::update_key))),
        ("/{keyId}/rotate", "rotateKey", "POST", vec![post().to(routes::rotate_key)]),
        ("/{keyId}/revoke", "revokeKey", "POST", vec![post().to(routes::revoke_key)]),
        ("/{keyId}/unban", "unbanKey", "POST", vec![post().to(routes::unban_key)]),
    ];
    // Path under `/orders`, name, `Allow`, routes.
    #[rustfmt::skip]
    let orders: [(&str, &'static str, &'static str, Vec<Route>); 5] = [
        ("", "listAllOrders", "GET, HEAD", read(orders::list_orders)),
        ("/{orderId}", "getAnyOrder", "GET, HEAD", read(orders::get_order)),
        ("/{orderId}/approve", "approveOrder", "POST", vec![post().to(orders::approve)]),
        ("/{orderId}/deliver", "deliverOrder", "POST", vec![post().to(orders::deliver)]),
        ("/{orderId}/cancel", "cancelAnyOrder", "POST", vec![post().to(orders::cancel)]),
    ];
    for (collection, table) in [("keys", keys), ("orders", orders)] {
        let scope =
            web::scope(&format!("{ADMIN_BASE}/{collection}")).wrap(from_fn(token::require_admin));
        cfg.service(
            table
                .into_iter()
                .fold(scope, |scope, (path, name, allow, routes)| {
                    scope.service(resource(path, name, allow, routes))
                }),
        );
    }
}
