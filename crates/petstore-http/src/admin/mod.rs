//! The admin API, over what operators do to API keys, orders and webhook endpoints
//! (`petstore_domain::key_admin` and `order_admin`, which the `petstore keys` and `petstore
//! orders` commands run too), served on a listener of its own (`--admin-bind`), never on the
//! public one: its routes ([`configure`]), its admin-token authentication ([`token`]) and its
//! audit log. Its OpenAPI document is built by `petstore-openapi`, and served by
//! `routes::openapi`.

pub mod orders;
pub mod routes;
pub mod token;
pub mod webhooks;

use actix_web::middleware::from_fn;
use actix_web::{Route, web};
use petstore_domain::OrderAction;

pub use routes::AUDIT_LOG;

use crate::routes::openapi::admin_openapi_json;
use crate::routes::webhooks as endpoints;
use crate::routes::{and, read, resource};
use routes::KeyAction;
use webhooks::{KeyEndpoints, Operators};

/// The admin API's base path.
pub const ADMIN_BASE: &str = "/admin/v1";

/// Registers the admin API's route table (the same [`resource`] entries as the public API's):
/// the keys and the orders, behind an admin token, and the document, which needs none.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let (post, patch, delete) = (web::post, web::patch, web::delete);
    let path = format!("{ADMIN_BASE}/openapi.json");
    cfg.service(resource(
        &path,
        "adminOpenapi",
        "GET, HEAD",
        read(admin_openapi_json),
    ));
    // Path under `/keys`, name, `Allow`, routes.
    #[rustfmt::skip]
    let keys: [(&str, &'static str, &'static str, Vec<Route>); 7] = [
        ("", "listKeys", "GET, HEAD, POST",
            and(read(routes::list_keys), post().to(routes::create_key))),
        ("/{keyId}", "getKey", "GET, HEAD, PATCH",
            and(read(routes::get_key), patch().to(routes::update_key))),
        ("/{keyId}/rotate", "rotateKey", "POST", vec![post().to(routes::rotate_key)]),
        ("/{keyId}/revoke", "revokeKey", "POST", vec![routes::change_key(KeyAction::Revoke)]),
        ("/{keyId}/unban", "unbanKey", "POST", vec![routes::change_key(KeyAction::Unban)]),
        ("/{keyId}/webhook_endpoints", "listKeyWebhookEndpoints", "GET, HEAD",
            read(endpoints::list_endpoints::<KeyEndpoints>)),
        ("/{keyId}/webhook_endpoints/{endpointId}", "getKeyWebhookEndpoint",
            "GET, HEAD, PATCH, DELETE",
            and(and(read(endpoints::get_endpoint::<KeyEndpoints>),
                    patch().to(endpoints::update_endpoint::<KeyEndpoints>)),
                delete().to(endpoints::delete_endpoint::<KeyEndpoints>))),
    ];
    // Path under `/orders`, name, `Allow`, routes.
    #[rustfmt::skip]
    let orders: [(&str, &'static str, &'static str, Vec<Route>); 5] = [
        ("", "listAllOrders", "GET, HEAD", read(orders::list_orders)),
        ("/{orderId}", "getAnyOrder", "GET, HEAD", read(orders::get_order)),
        ("/{orderId}/approve", "approveOrder", "POST", vec![orders::change(OrderAction::Approve)]),
        ("/{orderId}/deliver", "deliverOrder", "POST", vec![orders::change(OrderAction::Deliver)]),
        ("/{orderId}/cancel", "cancelAnyOrder", "POST", vec![orders::change(OrderAction::Cancel)]),
    ];
    // Path under `/webhook_endpoints`, name, `Allow`, routes.
    #[rustfmt::skip]
    let endpoints: [(&str, &'static str, &'static str, Vec<Route>); 6] = [
        ("", "listOperatorWebhookEndpoints", "GET, HEAD, POST",
            and(read(endpoints::list_endpoints::<Operators>),
                post().to(endpoints::create_endpoint::<Operators>))),
        ("/{endpointId}", "getOperatorWebhookEndpoint", "GET, HEAD, PATCH, DELETE",
            and(and(read(endpoints::get_endpoint::<Operators>),
                    patch().to(endpoints::update_endpoint::<Operators>)),
                delete().to(endpoints::delete_endpoint::<Operators>))),
        ("/{endpointId}/rotate_secret", "rotateOperatorWebhookSecret", "POST",
            vec![post().to(endpoints::rotate_secret::<Operators>)]),
        ("/{endpointId}/deliveries", "listOperatorWebhookDeliveries", "GET, HEAD",
            read(webhooks::list_deliveries)),
        ("/{endpointId}/deliveries/{deliveryId}", "getOperatorWebhookDelivery", "GET, HEAD",
            read(endpoints::get_delivery::<Operators>)),
        ("/{endpointId}/deliveries/{deliveryId}/redeliver", "redeliverOperatorWebhook", "POST",
            vec![post().to(endpoints::redeliver::<Operators>)]),
    ];
    let tables: [(&str, Vec<_>); 3] = [
        ("keys", keys.into()),
        ("orders", orders.into()),
        ("webhook_endpoints", endpoints.into()),
    ];
    for (collection, table) in tables {
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
