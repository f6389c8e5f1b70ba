//! The admin API, over what operators do to API keys (`petstore_domain::key_admin`, which the
//! `petstore keys` commands run too), served on a listener of its own (`--admin-bind`), never
//! on the public one: its routes ([`configure`]), its
//! admin-token authentication ([`token`]), its audit log and its OpenAPI document
//! ([`openapi`]).

pub mod openapi;
mod routes;
pub mod token;

use actix_web::middleware::from_fn;
use actix_web::web;

pub use routes::AUDIT_LOG;

use crate::routes::resource;

/// The admin API's base path.
pub const ADMIN_BASE: &str = "/admin/v1";

/// Registers the admin API's route table (the same [`resource`] entries as the public API's):
/// the keys, behind an admin token, and the document, which needs none.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        &format!("{ADMIN_BASE}/openapi.json"),
        "adminOpenapi",
        "GET, HEAD",
        [
            web::get().to(openapi::openapi_json),
            web::head().to(openapi::openapi_json),
        ],
    ))
    .service(
        web::scope(&format!("{ADMIN_BASE}/keys"))
            .wrap(from_fn(token::require_admin))
            .service(resource(
                "",
                "listKeys",
                "GET, HEAD, POST",
                [
                    web::get().to(routes::list_keys),
                    web::head().to(routes::list_keys),
                    web::post().to(routes::create_key),
                ],
            ))
            .service(resource(
                "/{keyId}",
                "getKey",
                "GET, HEAD, PATCH",
                [
                    web::get().to(routes::get_key),
                    web::head().to(routes::get_key),
                    web::patch().to(routes::update_key),
                ],
            ))
            .service(resource(
                "/{keyId}/rotate",
                "rotateKey",
                "POST",
                [web::post().to(routes::rotate_key)],
            ))
            .service(resource(
                "/{keyId}/revoke",
                "revokeKey",
                "POST",
                [web::post().to(routes::revoke_key)],
            ))
            .service(resource(
                "/{keyId}/unban",
                "unbanKey",
                "POST",
                [web::post().to(routes::unban_key)],
            )),
    );
}
