//! The admin API's own document, generated from the operations described in `operations.rs` and
//! `webhooks.rs`: served at `/admin/v1/openapi.json` on the admin listener (never on the public
//! one) and printed by `petstore openapi --admin`.

use petstore_domain::Plan;
use petstore_http::admin::ADMIN_BASE;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{OpenApi as Document, Server};
use utoipa::{IntoResponses, Modify, OpenApi};

use crate::conventions::{Bearer, declare, describe_methods, operations};
use crate::responses::AdminUnauthorized;
use webhooks::AdminWebhooks;

mod operations;
mod webhooks;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Animal Store Service: administration",
        version = "1.0.0",
        description = "Issue, inspect, change, rotate, revoke and unban API keys, and fulfil \
            orders (list every order, approve, deliver, cancel), and manage the webhook endpoints \
            that receive every event: what `petstore keys` and \
            `petstore orders` do, over HTTP, for an operator's own tooling. Served only on the admin \
            listener (`--admin-bind`). Every operation needs an admin token \
            (`Authorization: Bearer <ADMIN_TOKEN>`, issued with `petstore admin-tokens \
            create`); every error is the Error object; every change is written to the audit \
            log. The public API's rate limits do not apply.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    paths(
        operations::create_key,
        operations::list_keys,
        operations::get_key,
        operations::update_key,
        operations::rotate_key,
        operations::revoke_key,
        operations::unban_key,
        operations::list_orders,
        operations::get_order,
        operations::approve,
        operations::deliver,
        operations::cancel,
        operations::list_operator_webhook_deliveries
    ),
    // With the other webhook operations, described from the public API's ([`AdminWebhooks`]).
    // The schemas come with the operations' bodies and responses; `Plan`, which only a query
    // parameter names, is listed.
    components(schemas(Plan)),
    tags(
        (name = "keys", description = "API keys."),
        (name = "orders", description = "Every customer's orders, and their fulfilment."),
        (name = "webhooks", description = "Endpoints that receive every event of every key."),
    ),
    modifiers(&AdminWebhooks, &AdminToken),
)]
struct AdminDoc;

/// The document, with the admin base path as its server.
pub(crate) fn document() -> Document {
    let mut document = AdminDoc::openapi();
    document.servers = Some(vec![Server::new(ADMIN_BASE)]);
    document
}

/// The admin tokens' security scheme.
const ADMIN_TOKEN: Bearer = Bearer {
    name: "adminToken",
    format: "psa_ followed by 64 lowercase hex digits",
    description: "An admin token (not an API key). Missing, malformed, unknown and revoked \
        tokens all get `401 unauthorized`.",
};

/// Every operation needs an admin token, and answers `401` without one.
struct AdminToken;

impl Modify for AdminToken {
    fn modify(&self, document: &mut Document) {
        declare(document, &ADMIN_TOKEN);
        describe_methods(
            document,
            "a missing or invalid admin token's `401` comes first",
        );
        let required = SecurityRequirement::new(ADMIN_TOKEN.name, Vec::<String>::new());
        document.security = Some(vec![required]);
        for item in document.paths.paths.values_mut() {
            for operation in operations(item) {
                let responses = &mut operation.responses.responses;
                responses.extend(AdminUnauthorized::responses());
            }
        }
    }
}
