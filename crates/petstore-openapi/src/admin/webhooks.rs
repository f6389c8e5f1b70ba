//! The admin API's webhook operations, described from the public API's
//! ([`WebhookOperations`]): the same handlers (`petstore_http::routes::webhooks`) serve a key's
//! own endpoints there and, here, the operators' (which receive every key's events) and any
//! key's. Each admin operation is its public one, its parameters, body and responses, with what
//! differs said here: its id, summary and description; no read-write key's `403` and no
//! experimental mark (an admin token has no scope, and these are not experimental for operators);
//! conditional reads without the public limits' say; and for a key's endpoints, the key in the
//! path. The operators' delivery log answers a page
//! with its cursor rather than a `Link`, from a handler of its own: it has an annotation of its
//! own (`operations.rs`).

use petstore_http::extract::KeyId;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::{OpenApi as Document, RefOr};
use utoipa::{IntoParams, Modify, OpenApi};

use crate::conventions::{
    Revalidation, declare_revalidation, error_doc, is_conditional, make_conditional,
};
use crate::public::WebhookOperations;

/// Conditional reads as the admin API answers them (the public handlers tag what they answer
/// here too): no rate limits to take a `304` back from; an admin token.
const REVALIDATION: Revalidation = Revalidation {
    if_none_match: "Entity tags of representations the client holds (RFC 9110 §13.1.2): one, a \
        comma-separated list, or `*`, compared weakly. When one is the current representation's, \
        the answer is `304 Not Modified` with no body. It still needs a valid admin token.",
    not_modified: "Not modified: `If-None-Match` names the current representation's tag. No \
        body; the headers the `200` would carry.",
};

/// An admin operation described from a public one.
struct Described {
    /// The public operation's id.
    public: &'static str,
    /// The admin operation's id.
    id: &'static str,
    summary: &'static str,
    /// `None`: it has none (the public one's speaks to a key's owner).
    description: Option<&'static str>,
}

/// An admin front-end of the public webhook operations: those it serves, as it describes them
/// (a public operation not listed is not served there).
type Front = [Described];

const fn op(
    public: &'static str,
    id: &'static str,
    summary: &'static str,
    description: Option<&'static str>,
) -> Described {
    Described {
        public,
        id,
        summary,
        description,
    }
}

/// The operators' endpoints, at the public paths under the admin base.
#[rustfmt::skip]
const OPERATORS: &Front = &[
    op("listWebhookEndpoints", "listOperatorWebhookEndpoints",
        "List the operators' webhook endpoints",
        Some("They receive every event of every key (at most 20 endpoints).")),
    op("createWebhookEndpoint", "createOperatorWebhookEndpoint",
        "Register an endpoint that receives every event",
        Some("As a key's own endpoint, but it receives the events of every key. The secret is \
            in this answer only.")),
    op("getWebhookEndpoint", "getOperatorWebhookEndpoint",
        "Get one of the operators' webhook endpoints", None),
    op("updateWebhookEndpoint", "updateOperatorWebhookEndpoint",
        "Change one of the operators' webhook endpoints", None),
    op("deleteWebhookEndpoint", "deleteOperatorWebhookEndpoint",
        "Delete one of the operators' webhook endpoints", None),
    op("rotateWebhookSecret", "rotateOperatorWebhookSecret",
        "Give one of the operators' webhook endpoints a new secret",
        Some("Both secrets sign deliveries until the grace period ends.")),
    op("getWebhookDelivery", "getOperatorWebhookDelivery",
        "One delivery of one of the operators' webhook endpoints, with its attempts", None),
    op("redeliverWebhook", "redeliverOperatorWebhook",
        "Send a delivery of one of the operators' webhook endpoints again", None),
];

/// A key's endpoints, under `/keys/{keyId}`: read, changed and deleted as the key itself may.
#[rustfmt::skip]
const KEYS: &Front = &[
    op("listWebhookEndpoints", "listKeyWebhookEndpoints",
        "List an API key's webhook endpoints",
        Some("In id order, never with their secrets; a revoked or expired key's too (they \
            receive nothing).")),
    op("getWebhookEndpoint", "getKeyWebhookEndpoint",
        "Get one of an API key's webhook endpoints", None),
    op("updateWebhookEndpoint", "updateKeyWebhookEndpoint",
        "Change one of an API key's webhook endpoints",
        Some("As the key itself may: `enabled: false` turns it off (its waiting deliveries \
            fail, no event is recorded for it), and so on.")),
    op("deleteWebhookEndpoint", "deleteKeyWebhookEndpoint",
        "Delete one of an API key's webhook endpoints", None),
];

/// Adds the webhook operations of both front-ends, and the schemas they name.
pub(crate) struct AdminWebhooks;

impl Modify for AdminWebhooks {
    fn modify(&self, document: &mut Document) {
        let public = WebhookOperations::openapi();
        let paths = &mut document.paths.paths;
        let mut add = |path: String, item: PathItem| {
            let described_twice = paths.insert(path, item).is_some();
            assert!(!described_twice, "BUG: an admin path annotated and derived");
        };
        for (path, item) in &public.paths.paths {
            if let Some(item) = described(item, OPERATORS, |_| {}) {
                add(path.clone(), item);
            }
            if let Some(item) = described(item, KEYS, under_a_key) {
                add(format!("/keys/{{keyId}}{path}"), item);
            }
        }
        // The operators' delivery log, annotated (`operations.rs`), is tagged like the rest.
        let log = Some("listOperatorWebhookDeliveries");
        for item in document.paths.paths.values_mut() {
            if let Some(operation) = item
                .get
                .as_mut()
                .filter(|op| op.operation_id.as_deref() == log)
            {
                make_conditional(operation, &REVALIDATION);
            }
        }
        declare_revalidation(document, &REVALIDATION);
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
        let row = front
            .iter()
            .find(|row| public_id.as_deref() == Some(row.public));
        match (method.as_mut(), row) {
            (Some(operation), Some(row)) => {
                operation.operation_id = Some(row.id.into());
                operation.summary = Some(row.summary.into());
                operation.description = row.description.map(Into::into);
                if let Some(extensions) = &mut operation.extensions {
                    extensions.remove("x-stability");
                }
                // An admin token has no scope: no read-write key's `403`.
                operation.responses.responses.remove("403");
                if is_conditional(row.public) {
                    make_conditional(operation, &REVALIDATION);
                }
                adapt(operation);
                served = true;
            }
            _ => *method = None,
        }
    }
    served.then_some(item)
}

/// An operation on a key's endpoints: `keyId` first among the parameters, refused when it is not
/// an int64 (`400`) or no key has it (`404`).
fn under_a_key(operation: &mut Operation) {
    let key = KeyId::into_params(|| Some(ParameterIn::Path));
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.splice(0..0, key.into_iter().map(RefOr::T));
    let responses = &mut operation.responses.responses;
    let invalid = match responses.get("400") {
        Some(RefOr::T(public)) if public.description.contains("`endpointId`") => public
            .description
            .replace("`endpointId`", "`keyId` or `endpointId`"),
        Some(RefOr::T(public)) => format!(
            "`invalid_path_parameter`: `keyId` is not an int64; {}",
            public.description
        ),
        _ => "`invalid_path_parameter`: `keyId` is not an int64.".to_owned(),
    };
    let not_found = if responses.contains_key("404") {
        "`key_not_found`, or `webhook_endpoint_not_found`: the key has no endpoint with the id."
    } else {
        "`key_not_found`."
    };
    responses.insert("400".into(), RefOr::T(error_doc(&invalid)));
    responses.insert("404".into(), RefOr::T(error_doc(not_found)));
}
