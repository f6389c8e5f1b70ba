//! The closed catalogue of the Error object's `code`: the stable strings clients branch on
//! (`docs/errors.md`), and the HTTP status each is sent with. Shared by the service, which
//! writes them, and by clients (`petstore-client`), which read them.

use serde::{Deserialize, Serialize};

string_enum! {
    /// Every `code` the service sends. The strings are a stable contract with clients. New codes
    /// may be added in a minor version (`docs/errors.md`), so a `match` needs a wildcard arm.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[non_exhaustive]
    #[serde(rename_all = "snake_case")]
    pub enum ErrorCode in "code" {
        /// 400: the body is not syntactically valid JSON, or is not a JSON object.
        InvalidJson = "invalid_json",
        /// 400: a required body field is absent.
        MissingField = "missing_field",
        /// 400: the body has a field the schema does not (or that clients may not set).
        UnknownField = "unknown_field",
        /// 400: a body field has the wrong type or a value that breaks a rule.
        InvalidField = "invalid_field",
        /// 400: a query parameter is malformed, out of range or repeated.
        InvalidQueryParameter = "invalid_query_parameter",
        /// 400: the operation takes no query parameter of that name.
        UnknownQueryParameter = "unknown_query_parameter",
        /// 400: a path parameter is malformed (e.g. `petId` not an int64).
        InvalidPathParameter = "invalid_path_parameter",
        /// 400: a request header is malformed (e.g. `Idempotency-Key`).
        InvalidHeader = "invalid_header",
        /// 400: the request is malformed in a way no other code describes.
        BadRequest = "bad_request",
        /// 401: the API key is missing, malformed, unknown or revoked.
        Unauthorized = "unauthorized",
        /// 403: the API key is read-only and the operation writes.
        InsufficientScope = "insufficient_scope",
        /// 404: no pet has the requested id.
        PetNotFound = "pet_not_found",
        /// 404: no order has the requested id (or none the caller placed).
        OrderNotFound = "order_not_found",
        /// 404: no API key has the requested id (the admin API).
        KeyNotFound = "key_not_found",
        /// 404: no endpoint has this path.
        RouteNotFound = "route_not_found",
        /// 404: no webhook endpoint has the requested id (or none of the caller's).
        WebhookEndpointNotFound = "webhook_endpoint_not_found",
        /// 404: the webhook endpoint has no delivery with the requested id.
        WebhookDeliveryNotFound = "webhook_delivery_not_found",
        /// 405: the endpoint exists but not for this method (see `Allow`).
        MethodNotAllowed = "method_not_allowed",
        /// 408: the request body stopped arriving; the connection is closed.
        RequestTimeout = "request_timeout",
        /// 409: a request with the same `Idempotency-Key` is still being processed; retry after
        /// `Retry-After`.
        IdempotencyRequestInProgress = "idempotency_request_in_progress",
        /// 409: the pet cannot be ordered: it is pending or sold.
        PetNotAvailable = "pet_not_available",
        /// 409: the order cannot be cancelled: it is approved, delivered or cancelled already.
        OrderNotCancellable = "order_not_cancellable",
        /// 409: the API key is revoked: it cannot be rotated (the admin API).
        KeyRevoked = "key_revoked",
        /// 409: the order is not in a state the action applies to: approving an order that is
        /// not placed, delivering one that is not approved (the admin API).
        OrderTransitionRefused = "order_transition_refused",
        /// 409: the caller has as many webhook endpoints as it may (20): delete one first.
        WebhookEndpointLimitReached = "webhook_endpoint_limit_reached",
        /// 409: the webhook endpoint is turned off: turn it on before redelivering.
        WebhookEndpointDisabled = "webhook_endpoint_disabled",
        /// 409: the caller has a webhook endpoint with this URL already (one per URL).
        WebhookEndpointUrlTaken = "webhook_endpoint_url_taken",
        /// 410: the endpoint was removed at its sunset date.
        EndpointRemoved = "endpoint_removed",
        /// 413: the body is larger than the service accepts.
        PayloadTooLarge = "payload_too_large",
        /// 415: the body is not `application/json`.
        UnsupportedMediaType = "unsupported_media_type",
        /// 422: the `Idempotency-Key` was used before with a different request.
        IdempotencyKeyReused = "idempotency_key_reused",
        /// 422: the webhook endpoint's URL is a URL, but may not receive deliveries: not
        /// `https`, with credentials or a fragment, or naming or resolving to an address of a
        /// private, loopback, link-local or reserved network (or not resolving at all).
        WebhookUrlRefused = "webhook_url_refused",
        /// 429: over the plan's per-minute or per-day limit; retry after `Retry-After`.
        RateLimited = "rate_limited",
        /// 429: banned for a while for sending on after 429s; retry after `Retry-After`.
        TemporarilyBanned = "temporarily_banned",
        /// 500: an unexpected failure; details are logged, never sent.
        InternalError = "internal_error",
        /// 503: a dependency (the database) is unavailable; retry after `Retry-After`.
        ServiceUnavailable = "service_unavailable",
        /// 503: the database's disk is full: reads work, writes do not until space is freed.
        StorageFull = "storage_full",
    }
}

impl ErrorCode {
    /// The HTTP status the code is sent with.
    pub fn status(self) -> u16 {
        match self {
            Self::InvalidJson
            | Self::MissingField
            | Self::UnknownField
            | Self::InvalidField
            | Self::InvalidQueryParameter
            | Self::UnknownQueryParameter
            | Self::InvalidPathParameter
            | Self::InvalidHeader
            | Self::BadRequest => 400,
            Self::Unauthorized => 401,
            Self::InsufficientScope => 403,
            Self::PetNotFound
            | Self::OrderNotFound
            | Self::KeyNotFound
            | Self::RouteNotFound
            | Self::WebhookEndpointNotFound
            | Self::WebhookDeliveryNotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::RequestTimeout => 408,
            Self::IdempotencyRequestInProgress
            | Self::PetNotAvailable
            | Self::OrderNotCancellable
            | Self::KeyRevoked
            | Self::OrderTransitionRefused
            | Self::WebhookEndpointLimitReached
            | Self::WebhookEndpointDisabled
            | Self::WebhookEndpointUrlTaken => 409,
            Self::EndpointRemoved => 410,
            Self::PayloadTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::IdempotencyKeyReused | Self::WebhookUrlRefused => 422,
            Self::RateLimited | Self::TemporarilyBanned => 429,
            Self::InternalError => 500,
            Self::ServiceUnavailable | Self::StorageFull => 503,
        }
    }

    /// The code for an error response of `status` that carries no code of its own (one
    /// produced by the HTTP framework itself).
    pub fn for_status(status: u16) -> Self {
        match status {
            401 => Self::Unauthorized,
            404 => Self::RouteNotFound,
            405 => Self::MethodNotAllowed,
            408 => Self::RequestTimeout,
            413 => Self::PayloadTooLarge,
            415 => Self::UnsupportedMediaType,
            429 => Self::RateLimited,
            503 => Self::ServiceUnavailable,
            400..=499 => Self::BadRequest,
            _ => Self::InternalError,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_travels_as_its_string_and_back() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).expect("serialises");
            assert_eq!(json, serde_json::Value::from(code.as_str()));
            assert_eq!(
                serde_json::from_value::<ErrorCode>(json).expect("parses"),
                code
            );
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
            assert!((400..600).contains(&code.status()), "{code}");
        }
        assert!("no_such_code".parse::<ErrorCode>().is_err());
        assert_eq!(ErrorCode::for_status(418), ErrorCode::BadRequest);
        assert_eq!(ErrorCode::for_status(502), ErrorCode::InternalError);
    }
}
