//! The admin API's own document, generated from its handlers' annotations: served at
//! `/admin/v1/openapi.json` on the admin listener (never on the public one) and printed by
//! `petstore openapi --admin`.

use petstore_domain::Plan;
use petstore_http::admin::ADMIN_BASE;
use petstore_http::admin::{orders, routes};
use petstore_http::error::responses::AdminUnauthorized;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{OpenApi as Document, Server};
use utoipa::{IntoResponses, Modify, OpenApi};

use crate::admin_webhooks as webhooks;
use crate::conventions::{Bearer, declare, describe_methods, operations};

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
        routes::create_key,
        routes::list_keys,
        routes::get_key,
        routes::update_key,
        routes::rotate_key,
        routes::revoke_key,
        routes::unban_key,
        orders::list_orders,
        orders::get_order,
        orders::approve,
        orders::deliver,
        orders::cancel,
        webhooks::list_operator_webhook_endpoints,
        webhooks::create_operator_webhook_endpoint,
        webhooks::get_operator_webhook_endpoint,
        webhooks::update_operator_webhook_endpoint,
        webhooks::delete_operator_webhook_endpoint,
        webhooks::rotate_operator_webhook_secret,
        webhooks::list_operator_webhook_deliveries,
        webhooks::get_operator_webhook_delivery,
        webhooks::redeliver_operator_webhook,
        webhooks::list_key_webhook_endpoints,
        webhooks::get_key_webhook_endpoint,
        webhooks::update_key_webhook_endpoint,
        webhooks::delete_key_webhook_endpoint
    ),
    // The schemas come with the operations' bodies and responses; `Plan`, which only a query
    // parameter names, is listed.
    components(schemas(Plan)),
    tags(
        (name = "keys", description = "API keys."),
        (name = "orders", description = "Every customer's orders, and their fulfilment."),
        (name = "webhooks", description = "Endpoints that receive every event of every key."),
    ),
    modifiers(&AdminToken),
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
