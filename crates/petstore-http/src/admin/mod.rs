//! The admin API, over what operators do to API keys (`petstore_domain::key_admin`, which the
//! `petstore keys` commands run too), served on a listener of its own (`--admin-bind`), never
//! on the public one: its routes ([`configure`]), its
//! admin-token authentication ([`token`]), its audit log and its OpenAPI document
//! ([`openapi`]).

pub mod openapi;
mod routes;
pub mod token;

use actix_web::middleware::from_fn;
use actix_web::{Route, web};

pub use routes::AUDIT_LOG;

use crate::routes::{and, read, resource};

/// The admin API's base path.
pub const ADMIN_BASE: &str = "/admin/v1";

/// Registers the admin API's route table (the same [`resource`] entries as the public API's):
/// the keys, behind an admin token, and the document, which needs none.
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
    let scope = web::scope(&format!("{ADMIN_BASE}/keys")).wrap(from_fn(token::require_admin));
    cfg.service(
        keys.into_iter()
            .fold(scope, |scope, (path, name, allow, routes)| {
                scope.service(resource(path, name, allow, routes))
            }),
    );
}
