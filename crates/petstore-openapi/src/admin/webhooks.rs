//! The admin API's webhook operations, described from the public API's
//! ([`WebhookOperations`]): the same handlers (`petstore_http::routes::webhooks`) serve a key's
//! own endpoints there and, here, the operators' (which receive every key's events) and any
//! key's. Each admin operation is its public one, its parameters, body and responses, with what
//! differs said here: its id, summary and description; no read-write key's `403` and no
//! experimental mark (an admin token has no scope, and these are not experimental for operators);
//! and for a key's endpoints, the key in the path. The operators' delivery log answers a page
//! with its cursor rather than a `Link`, from a handler of its own: it has an annotation of its
//! own (`operations.rs`).

use petstore_http::extract::KeyId;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::{OpenApi as Document, RefOr};
use utoipa::{IntoParams, IntoResponses, Modify, OpenApi};

use crate::public::WebhookOperations;
use crate::responses::KeyNotFound;

/// An admin front-end of public operations: for each, the public operation's id, then the admin
/// operation's id, summary and description (`None`: it has none). A public operation not listed
/// is not served there.
type Front = [(
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
)];

/// The operators' endpoints, at the public paths under the admin base.
#[rustfmt::skip]
const OPERATORS: &Front = &[
    ("listWebhookEndpoints", "listOperatorWebhookEndpoints",
        "List the operators' webhook endpoints",
        Some("They receive every event of every key (at most 20 endpoints).")),
    ("createWebhookEndpoint", "createOperatorWebhookEndpoint",
        "Register an endpoint that receives every event",
        Some("As a key's own endpoint, but it receives the events of every key. The secret is \
            in this answer only.")),
    ("getWebhookEndpoint", "getOperatorWebhookEndpoint",
        "Get one of the operators' webhook endpoints", None),
    ("updateWebhookEndpoint", "updateOperatorWebhookEndpoint",
        "Change one of the operators' webhook endpoints", None),
    ("deleteWebhookEndpoint", "deleteOperatorWebhookEndpoint",
        "Delete one of the operators' webhook endpoints", None),
    ("rotateWebhookSecret", "rotateOperatorWebhookSecret",
        "Give one of the operators' webhook endpoints a new secret",
        Some("Both secrets sign deliveries until the grace period ends.")),
    ("getWebhookDelivery", "getOperatorWebhookDelivery",
        "One delivery of one of the operators' webhook endpoints, with its attempts", None),
    ("redeliverWebhook", "redeliverOperatorWebhook",
        "Send a delivery of one of the operators' webhook endpoints again", None),
];

/// A key's endpoints, under `/keys/{keyId}`: read, changed and deleted as the key itself may.
#[rustfmt::skip]
const KEYS: &Front = &[
    ("listWebhookEndpoints", "listKeyWebhookEndpoints",
        "List an API key's webhook endpoints",
        Some("In id order, never with their secrets; a revoked or expired key's too (they \
            receive nothing).")),
    ("getWebhookEndpoint", "getKeyWebhookEndpoint",
        "Get one of an API key's webhook endpoints", None),
    ("updateWebhookEndpoint", "updateKeyWebhookEndpoint",
        "Change one of an API key's webhook endpoints",
        Some("As the key itself may: `enabled: false` turns it off (its waiting deliveries \
            fail, no event is recorded for it), and so on.")),
    ("deleteWebhookEndpoint", "deleteKeyWebhookEndpoint",
        "Delete one of an API key's webhook endpoints", None),
];

/// Adds the webhook operations of both front-ends, and the schemas they name.
pub(crate) struct AdminWebhooks;

impl Modify for AdminWebhooks {
    fn modify(&self, document: &mut Document) {
        let public = WebhookOperations::openapi();
        let paths = &mut document.paths.paths;
        for (path, item) in &public.paths.paths {
            if let Some(item) = described(item, OPERATORS, |_| {}) {
                paths.insert(path.clone(), item);
            }
            if let Some(item) = described(item, KEYS, under_a_key) {
                paths.insert(format!("/keys/{{keyId}}{path}"), item);
            }
        }
        let components = document.components.get_or_insert_with(Default::default);
        if let Some(public) = public.components {
            components.schemas.extend(public.schemas);
        }
    }
}

/// The operations of `item` that `front` serves, as it describes them, each then given to
/// `adapt`; `None` when it serves none of them.
fn described(item: &PathItem, front: &Front, adapt: fn(&mut Operation)) -> Option<PathItem> {
    let mut item = item.clone();
    let mut served = false;
    let methods = [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.patch,
        &mut item.delete,
    ];
    for method in methods {
        let public_id = method.as_ref().and_then(|op| op.operation_id.clone());
        let row = front.iter().find(|row| public_id.as_deref() == Some(row.0));
        match (method.as_mut(), row) {
            (Some(operation), Some(&(_, id, summary, description))) => {
                operation.operation_id = Some(id.into());
                operation.summary = Some(summary.into());
                operation.description = description.map(Into::into);
                operation.extensions = None;
                operation.responses.responses.remove("403");
                adapt(operation);
                served = true;
            }
            _ => *method = None,
        }
    }
    served.then_some(item)
}

/// An operation on a key's endpoints: `keyId` first among the parameters, and refused when it is
/// not an int64 or no key has it.
fn under_a_key(operation: &mut Operation) {
    let key = KeyId::into_params(|| Some(ParameterIn::Path));
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.splice(0..0, key.into_iter().map(RefOr::T));
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(invalid)) = responses.get_mut("400") {
        invalid
            .description
            .push_str(" Also `invalid_path_parameter` when `keyId` is not an int64.");
    }
    match responses.get_mut("404") {
        Some(RefOr::T(not_found)) => {
            not_found.description = "`key_not_found`, or `webhook_endpoint_not_found`: the key \
                has no endpoint with the id."
                .into();
        }
        _ => responses.extend(KeyNotFound::responses()),
    }
}
