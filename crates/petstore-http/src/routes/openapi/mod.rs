//! The API's description of itself: an OpenAPI 3.1 document generated from the handlers'
//! `#[utoipa::path]` annotations and the domain's schemas, completed by [`Conventions`] with
//! what every operation shares (the bearer scheme, the rate-limit headers, the errors any
//! request can meet) and what a resource's marks add (deprecation, stability). Served at
//! `{base}/openapi.json` and printed by `petstore openapi`; a copy is kept in `docs/openapi.json`.

use actix_web::{HttpRequest, HttpResponse, web};
use utoipa::OpenApi;
use utoipa::openapi::{OpenApi as Document, Server};

use super::respond::tagged_bytes;
use super::{index, orders, pets, rate_limit, webhooks};
use crate::conditional::Caching;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Animal Store Service",
        version = "1.0.0",
        description = "A catalogue of animals offered by a store, and a store-orders area. Every \
            operation needs an API key (`Authorization: Bearer <API_KEY>`). Every response carries \
            the rate-limit headers; every error the Error object. Operations marked \
            `x-stability: experimental` may change without a new version.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    paths(
        pets::list_pets,
        pets::create_pet,
        pets::get_pet,
        orders::list_orders,
        orders::place_order,
        orders::get_order,
        orders::cancel_order,
        orders::delete_order,
        orders::get_inventory,
        webhooks::list_endpoints,
        webhooks::create_endpoint,
        webhooks::get_endpoint,
        webhooks::update_endpoint,
        webhooks::delete_endpoint,
        webhooks::rotate_secret,
        webhooks::list_deliveries,
        webhooks::get_delivery,
        webhooks::redeliver,
        rate_limit::get_rate_limit,
        index::get_index
    ),
    // The schemas come with the operations' bodies, parameters and responses.
    tags(
        (name = "pets", description = "The catalogue of animals."),
        (name = "store", description = "The store-orders area (experimental)."),
        (name = "webhooks", description = "Events pushed to your endpoints, signed (Standard \
            Webhooks v1): `order.placed`, `order.approved`, `order.delivered`, \
            `order.cancelled`, `pet.created` (experimental)."),
        (name = "rate limits", description = "Your standing against your plan's limits."),
        (name = "index", description = "Where things are: the base address itself."),
    ),
    modifiers(&Conventions),
)]
struct ApiDoc;

/// The document, with `server` (the API's base address, e.g. `https://api.example.com/v1`, or
/// just the base path) as its one server.
pub fn document(server: &str) -> Document {
    let mut document = ApiDoc::openapi();
    document.servers = Some(vec![Server::new(server)]);
    document
}

/// The document listing the servers an operator named (`Production`, `Staging`, ...), each
/// with its description; its own base address alone when none was named.
pub fn document_for(servers: &[(String, String)], own: &str) -> Document {
    if servers.is_empty() {
        return document(own);
    }
    let mut document = ApiDoc::openapi();
    document.servers = Some(
        servers
            .iter()
            .map(|(name, url)| {
                let mut server = Server::new(url);
                server.description = Some(name.clone());
                server
            })
            .collect(),
    );
    document
}

/// `GET {base}/openapi.json`: the document, naming the servers the operator named, or the
/// public base address as `Link` does.
pub async fn openapi_json(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let servers = state.links.settings().servers();
    answer(
        &req,
        &document_for(servers, &state.links.public_base(&req)),
        Caching::Public,
    )
}

/// `document` as the answer to a `GET` of it (the public one, the admin one), tagged by its
/// bytes.
pub(crate) fn answer(
    req: &HttpRequest,
    document: &Document,
    caching: Caching,
) -> Result<HttpResponse, ApiError> {
    let body = document.to_pretty_json().map_err(ApiError::internal)?;
    Ok(tagged_bytes(
        req,
        HttpResponse::Ok(),
        body.into_bytes(),
        caching,
    ))
}

mod conventions;
mod links;

use conventions::Conventions;
pub(crate) use conventions::{Bearer, declare, describe_methods, operations};
