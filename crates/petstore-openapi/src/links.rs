//! The document's links: from an operation's success to the operations that take what it
//! answered (what a client, or a stateful test, does next).

use utoipa::openapi::RefOr;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::Operation;

/// One link: its name, the operation it leads to, and that operation's parameters.
type LinkTo = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The links from an operation's success to the operations that take what it answered (OpenAPI
/// links: what a client, or a stateful test, does next): operation, its status, and for each
/// link its name, the operation it leads to, and that operation's parameters as runtime
/// expressions.
#[rustfmt::skip]
const LINKS: [(&str, &str, &[LinkTo]); 4] = [
    ("createPet", "201", &[
        ("GetPet", "getPet", &[("petId", "$response.body#/id")]),
    ]),
    ("placeOrder", "201", &[
        ("GetOrder", "getOrder", &[("orderId", "$response.body#/id")]),
        ("CancelOrder", "cancelOrder", &[("orderId", "$response.body#/id")]),
        ("DeleteOrder", "deleteOrder", &[("orderId", "$response.body#/id")]),
    ]),
    ("createWebhookEndpoint", "201", &[
        ("GetWebhookEndpoint", "getWebhookEndpoint", &[("endpointId", "$response.body#/id")]),
        ("UpdateWebhookEndpoint", "updateWebhookEndpoint", &[("endpointId", "$response.body#/id")]),
        ("RotateWebhookSecret", "rotateWebhookSecret", &[("endpointId", "$response.body#/id")]),
        ("ListWebhookDeliveries", "listWebhookDeliveries", &[("endpointId", "$response.body#/id")]),
        ("DeleteWebhookEndpoint", "deleteWebhookEndpoint", &[("endpointId", "$response.body#/id")]),
    ]),
    ("listWebhookDeliveries", "200", &[
        ("GetWebhookDelivery", "getWebhookDelivery", &[
            ("endpointId", "$request.path.endpointId"),
            ("deliveryId", "$response.body#/0/id"),
        ]),
        ("RedeliverWebhook", "redeliverWebhook", &[
            ("endpointId", "$request.path.endpointId"),
            ("deliveryId", "$response.body#/0/id"),
        ]),
    ]),
];

/// Adds [`LINKS`] to `operation`'s success.
pub(super) fn add_links(operation: &mut Operation) {
    let Some(id) = operation.operation_id.as_deref() else {
        return;
    };
    for (from, status, links) in LINKS {
        if from != id {
            continue;
        }
        let Some(RefOr::T(response)) = operation.responses.responses.get_mut(status) else {
            continue;
        };
        for (name, to, parameters) in links {
            let link = parameters
                .iter()
                .fold(
                    LinkBuilder::new().operation_id(*to),
                    |link, (parameter, value)| link.parameter(*parameter, *value),
                )
                .build();
            response.links.insert((*name).to_owned(), RefOr::T(link));
        }
    }
}
