//! Key administration: what operators do to API keys ([`keys`], one implementation for the
//! `petstore keys` commands and the admin API), and the admin API itself, served on a listener
//! of its own (`--admin-bind`), never on the public one: its routes ([`configure`]), its
//! admin-token authentication ([`token`]), its audit log and its OpenAPI document
//! ([`openapi`]).

pub mod keys;
pub mod openapi;
mod routes;
pub mod token;

use actix_web::middleware::from_fn;
use actix_web::web;

pub use routes::AUDIT_LOG;

use crate::routes::method_not_allowed;

/// The admin API's base path.
pub const ADMIN_BASE: &str = "/admin/v1";

/// Registers the admin API's routes: the keys, behind an admin token, and the document, which
/// needs none.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{ADMIN_BASE}/openapi.json"))
            .route(web::get().to(openapi::openapi_json))
            .route(web::head().to(openapi::openapi_json))
            .default_service(web::to(method_not_allowed("GET, HEAD"))),
    )
    .service(
        web::scope(&format!("{ADMIN_BASE}/keys"))
            .wrap(from_fn(token::require_admin))
            .service(
                web::resource("")
                    .route(web::get().to(routes::list_keys))
                    .route(web::head().to(routes::list_keys))
                    .route(web::post().to(routes::create_key))
                    .default_service(web::to(method_not_allowed("GET, HEAD, POST"))),
            )
            .service(
                web::resource("/{keyId}")
                    .route(web::get().to(routes::get_key))
                    .route(web::head().to(routes::get_key))
                    .route(web::patch().to(routes::update_key))
                    .default_service(web::to(method_not_allowed("GET, HEAD, PATCH"))),
            )
            .service(
                web::resource("/{keyId}/rotate")
                    .route(web::post().to(routes::rotate_key))
                    .default_service(web::to(method_not_allowed("POST"))),
            )
            .service(
                web::resource("/{keyId}/revoke")
                    .route(web::post().to(routes::revoke_key))
                    .default_service(web::to(method_not_allowed("POST"))),
            )
            .service(
                web::resource("/{keyId}/unban")
                    .route(web::post().to(routes::unban_key))
                    .default_service(web::to(method_not_allowed("POST"))),
            ),
    );
}
