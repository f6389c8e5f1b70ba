//! The API's descriptions of itself: the public and the admin API's OpenAPI 3.1 documents,
//! generated from the handlers' `#[utoipa::path]` annotations (in `petstore-http`) and the
//! domain's schemas, completed by [`Conventions`] with what every operation shares (the bearer
//! scheme, the rate-limit headers, the errors any request can meet) and what a resource's marks
//! add (deprecation, stability), and by [`admin`]'s token scheme. The program builds them once
//! ([`documents`]) and hands them to the application, which serves them at `{base}/openapi.json`
//! and `/admin/v1/openapi.json`; `petstore openapi` prints them; copies are kept in
//! `docs/openapi.json` and `docs/admin-openapi.json`.

use petstore_http::routes::openapi::Documents;
use petstore_http::routes::{index, orders, pets, rate_limit, webhooks};
use utoipa::OpenApi;
use utoipa::openapi::OpenApi as Document;

mod admin;
mod admin_webhooks;
mod conventions;
mod links;

use conventions::Conventions;

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

/// The public API's document, without servers: the application names them as it serves it.
pub fn public() -> Document {
    ApiDoc::openapi()
}

/// Both documents, as the application serves them.
pub fn documents() -> Documents {
    Documents::new(public(), admin::document())
}
