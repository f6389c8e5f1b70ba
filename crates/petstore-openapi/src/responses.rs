//! The Error responses that several operations answer alike, described once for the OpenAPI
//! documents (utoipa's `IntoResponses`): an operation lists the set's name among its responses
//! (a set may be two others, [`Both`]); and the paging parameters the lists share
//! ([`PageParams`]). The types describe; no one builds them.
#![expect(
    dead_code,
    reason = "response sets exist for the OpenAPI documents: never built, never read"
)]

use std::collections::BTreeMap;
use std::marker::PhantomData;

use utoipa::openapi::{RefOr, Response};
use utoipa::{IntoParams, IntoResponses};

use petstore_http::error::ErrorObject;

/// The responses of `A` and of `B` (`B`'s where both describe a status).
pub struct Both<A, B>(PhantomData<(A, B)>);

impl<A: IntoResponses, B: IntoResponses> IntoResponses for Both<A, B> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = A::responses();
        responses.extend(B::responses());
        responses
    }
}

/// Declares the refusals of an operation on a thing named by its id in the path: `400`
/// (`$invalid`: the id is not one, and whatever else the operation's input refuses) and `404`
/// (`$not_found`: nothing, or nothing of the caller's, has it).
macro_rules! by_id {
    ($(#[$doc:meta])* $name:ident, $invalid:literal, $not_found:literal) => {
        $(#[$doc])*
        #[derive(IntoResponses)]
        pub enum $name {
            /// The id is not one.
            #[response(status = 400, description = $invalid)]
            Invalid(ErrorObject<'static>),
            /// Nothing has it.
            #[response(status = 404, description = $not_found)]
            NotFound(ErrorObject<'static>),
        }
    };
}

/// `403`, for an operation that writes.
#[derive(IntoResponses)]
#[response(
    status = 403,
    description = "`insufficient_scope`: the key is read-only (scopes are an addition to the \
        interface)."
)]
pub struct ReadOnlyKey(ErrorObject<'static>);

/// The refusals of any JSON body: too large, not JSON.
#[derive(IntoResponses)]
pub enum BodyRefused {
    /// The body was too large.
    #[response(status = 413, description = "`payload_too_large`: over 64 KiB.")]
    TooLarge(ErrorObject<'static>),
    /// The body was not JSON.
    #[response(
        status = 415,
        description = "`unsupported_media_type`: not `application/json`."
    )]
    NotJson(ErrorObject<'static>),
}

/// The refusals of a JSON body and its `Idempotency-Key`, for a create.
pub type JsonBodyErrors = Both<CreateRefused, BodyRefused>;

/// A create's refusals besides a body's: the body's timeout, the `Idempotency-Key`'s reuse.
#[derive(IntoResponses)]
pub enum CreateRefused {
    /// The body was too slow.
    #[response(
        status = 408,
        description = "`request_timeout`: the body did not arrive within the body timeout \
            (10 s by default); the connection is closed."
    )]
    Timeout(ErrorObject<'static>),
    /// The `Idempotency-Key` came with another request before.
    #[response(
        status = 422,
        description = "`idempotency_key_reused`: the `Idempotency-Key` was used with a \
            different request.",
        headers(("Link" = String, description = "`<{site}/docs/#/{tag}/{operationId}>; rel=\"describedby\"; type=\"text/html\"`: \
                where `Idempotency-Key` is documented (draft-ietf-httpapi-idempotency-key-header-07 \
                §2.7)."))
    )]
    KeyReused(ErrorObject<'static>),
}

/// `400`, for an operation that takes no query parameter.
#[derive(IntoResponses)]
#[response(
    status = 400,
    description = "`unknown_query_parameter`: the operation takes none."
)]
pub struct NoParameters(ErrorObject<'static>);

/// `404`, for an operation on a pet named by the request.
#[derive(IntoResponses)]
#[response(status = 404, description = "`pet_not_found`.")]
pub struct PetNotFound(ErrorObject<'static>);

by_id!(
    /// The refusals of an operation on one of the caller's orders, named by its id.
    OrderById,
    "`invalid_path_parameter`: `orderId` is not an int64.",
    "`order_not_found`: no order of this key has the id."
);

by_id!(
    /// The refusals of an admin operation on any order, named by its id (which takes nothing
    /// else).
    AnyOrderById,
    "`invalid_path_parameter`: `orderId` is not an int64; `unknown_query_parameter`: the \
        operation takes none.",
    "`order_not_found`."
);

/// `401`, which every operation of the admin API can answer.
#[derive(IntoResponses)]
#[response(status = 401, description = "`unauthorized`: no valid admin token.")]
pub struct AdminUnauthorized(ErrorObject<'static>);

/// `404`, for an admin operation on one key.
#[derive(IntoResponses)]
#[response(status = 404, description = "`key_not_found`.")]
pub struct KeyNotFound(ErrorObject<'static>);

by_id!(
    /// The refusals of an admin operation on one key that takes nothing but its id.
    KeyById,
    "`invalid_path_parameter`: `keyId` is not an int64; `unknown_query_parameter`: the \
        operation takes none.",
    "`key_not_found`."
);

/// The paging parameters of a list (`GET /pets`, `GET /store/orders`).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// How many at most: 1 to 100, default 20.
    limit: Option<u32>,
    /// Keyset cursor: only items whose id is greater. Taken from a `next` link.
    #[param(minimum = 0)]
    after: Option<i64>,
}

by_id!(
    /// The refusals of an operation on one of the caller's webhook endpoints, named by its id.
    EndpointById,
    "`invalid_path_parameter`: `endpointId` is not an int64.",
    "`webhook_endpoint_not_found`: no endpoint with the id is the caller's."
);

by_id!(
    /// The refusals of an operation on one delivery of one of the caller's webhook endpoints.
    DeliveryById,
    "`invalid_path_parameter`: `endpointId` or `deliveryId` is not an int64.",
    "`webhook_endpoint_not_found`, or `webhook_delivery_not_found`: the endpoint has no \
        delivery with the id."
);

/// `404`, for an operation on a webhook endpoint whose other refusals are described apart.
#[derive(IntoResponses)]
#[response(status = 404, description = "`webhook_endpoint_not_found`.")]
pub struct EndpointNotFound(ErrorObject<'static>);

/// The refusals of a page of one webhook endpoint's delivery log.
#[derive(IntoResponses)]
pub enum DeliveryLogErrors {
    /// The endpoint's id, or a query parameter, is not one.
    #[response(
        status = 400,
        description = "`invalid_path_parameter`, `invalid_query_parameter` or \
            `unknown_query_parameter`."
    )]
    Invalid(ErrorObject<'static>),
    /// No such endpoint of the caller's.
    #[response(status = 404, description = "`webhook_endpoint_not_found`.")]
    NotFound(ErrorObject<'static>),
}

/// The refusals of a change of one webhook endpoint: its body's, its id's, and `404`.
pub type EndpointChangeErrors = Both<Both<EndpointNotFound, EndpointBodyErrors>, ChangeInvalid>;

/// The `400` of a change of one webhook endpoint: its id's, and its body's.
#[derive(IntoResponses)]
#[response(
    status = 400,
    description = "`invalid_path_parameter`: `endpointId` is not an int64; `invalid_json`, \
        `unknown_field` or `invalid_field`, naming the field (a `url` that is not an absolute \
        URL, say); every field is optional."
)]
pub struct ChangeInvalid(ErrorObject<'static>);

/// The refusals of a rotation of one webhook endpoint's secret: its body's, and `404`.
pub type SecretRotationErrors = Both<EndpointNotFound, Both<RotationBodyRefused, BodyRefused>>;

/// A secret rotation's body's refusals besides any JSON body's (it names no URL).
#[derive(IntoResponses)]
pub enum RotationBodyRefused {
    /// The endpoint's id, or the body, was refused.
    #[response(
        status = 400,
        description = "`invalid_path_parameter`: `endpointId` is not an int64; `invalid_json`, \
            `unknown_field` or `invalid_field`, naming the field (`graceSeconds` over a week, \
            say)."
    )]
    Invalid(ErrorObject<'static>),
    /// The body was too slow.
    #[response(
        status = 408,
        description = "`request_timeout`: the body did not arrive within the body timeout."
    )]
    Timeout(ErrorObject<'static>),
}

/// The refusals of an endpoint's body: a JSON body's, and its URL's.
pub type EndpointBodyErrors = Both<EndpointBodyRefused, BodyRefused>;

/// An endpoint's body's refusals besides any JSON body's: the fields, the timeout, the URL.
#[derive(IntoResponses)]
pub enum EndpointBodyRefused {
    /// The body was refused.
    #[response(
        status = 400,
        description = "`invalid_json`, `missing_field`, `unknown_field` or `invalid_field`, \
            naming the field (a `url` that is not an absolute URL, say)."
    )]
    Invalid(ErrorObject<'static>),
    /// The body was too slow.
    #[response(
        status = 408,
        description = "`request_timeout`: the body did not arrive within the body timeout."
    )]
    Timeout(ErrorObject<'static>),
    /// The URL may not receive deliveries.
    #[response(
        status = 422,
        description = "`webhook_url_refused`: the `url` is not `https` (unless the service \
            allows `http`), holds credentials or a fragment, or names or resolves to an address \
            of a private, loopback, link-local or reserved network, or its host does not \
            resolve."
    )]
    Refused(ErrorObject<'static>),
}
