//! The API's descriptions of itself: the public and the admin API's OpenAPI 3.1 documents. Each
//! operation is described by an annotated function (`#[utoipa::path]`: `public.rs` for the public
//! API's, `admin/operations.rs` for the admin API's) over the domain's schemas and the HTTP
//! crate's wire types, but for the admin API's webhook operations, which the public API's
//! handlers serve: `admin/webhooks.rs` describes them from the public descriptions. The handlers
//! in `petstore-http` only transport. [`Conventions`] completes
//! the public document with what every operation shares (the bearer scheme, the rate-limit
//! headers, the errors any request can meet) and what a resource's marks add (deprecation,
//! stability), and [`admin`] the admin one with its token scheme. The program builds them once
//! ([`documents`]) and hands them to the application, which serves them at `{base}/openapi.json`
//! and `/admin/v1/openapi.json`; `petstore openapi` prints them; copies are kept in
//! `docs/openapi.json` and `docs/admin-openapi.json`.

use petstore_http::routes::openapi::Documents;
use utoipa::openapi::OpenApi as Document;

mod admin;
mod conventions;
mod links;
mod public;
mod responses;

#[cfg(doc)]
use conventions::Conventions;

/// The public API's document, without servers: the application names them as it serves it.
pub fn public() -> Document {
    public::document()
}

/// Both documents, as the application serves them.
pub fn documents() -> Documents {
    Documents::new(public(), admin::document())
}
