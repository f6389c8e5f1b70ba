//! The closed catalogue of the Error object's `code`: the stable strings clients branch on
//! (`docs/errors.md`), and the HTTP status each is sent with. Shared by the service, which
//! writes them, and by clients (`petstore-client`), which read them.

string_enum! {
    /// Every `code` the service sends, each with the HTTP status it is sent with
    /// ([`ErrorCode::status`]). The strings are a stable contract with clients. New codes may be
    /// added in a minor version (`docs/errors.md`), so a `match` needs a wildcard arm.
    #[non_exhaustive]
    pub enum ErrorCode in "code", with
        /// The HTTP status the code is sent with.
        status: u16 {
        /// The body is not syntactically valid JSON, or is not a JSON object.
        InvalidJson = "invalid_json" => 400,
        /// A required body field is absent.
        MissingField = "missing_field" => 400,
        /// The body has a field the schema does not (or that clients may not set).
        UnknownField = "unknown_field" => 400,
        /// A body field has the wrong type or a value that breaks a rule.
        InvalidField = "invalid_field" => 400,
        /// A query parameter is malformed, out of range or repeated.
        InvalidQueryParameter = "invalid_query_parameter" => 400,
        /// The operation takes no query parameter of that name.
        UnknownQueryParameter = "unknown_query_parameter" => 400,
        /// A path parameter is malformed (e.g. `petId` not an int64).
        InvalidPathParameter = "invalid_path_parameter" => 400,
        /// A request header is malformed (e.g. `Idempotency-Key`).
        InvalidHeader = "invalid_header" => 400,
        /// The request is malformed in a way no other code describes.
        BadRequest = "bad_request" => 400,
        /// The API key is missing, malformed, unknown or revoked.
        Unauthorized = "unauthorized" => 401,
        /// The API key is read-only and the operation writes.
        InsufficientScope = "insufficient_scope" => 403,
        /// No pet has the requested id.
        PetNotFound = "pet_not_found" => 404,
        /// No order has the requested id (or none the caller placed).
        OrderNotFound = "order_not_found" => 404,
        /// No API key has the requested id (the admin API).
        KeyNotFound = "key_not_found" => 404,
        /// No endpoint has this path.
        RouteNotFound = "route_not_found" => 404,
        /// No webhook endpoint has the requested id (or none of the caller's).
        WebhookEndpointNotFound = "webhook_endpoint_not_found" => 404,
        /// The webhook endpoint has no delivery with the requested id.
        WebhookDeliveryNotFound = "webhook_delivery_not_found" => 404,
        /// The endpoint exists but not for this method (see `Allow`).
        MethodNotAllowed = "method_not_allowed" => 405,
        /// The request body stopped arriving; the connection is closed.
        RequestTimeout = "request_timeout" => 408,
        /// A request with the same `Idempotency-Key` is still being processed; retry after
        /// `Retry-After`.
        IdempotencyRequestInProgress = "idempotency_request_in_progress" => 409,
        /// The pet cannot be ordered: it is pending or sold.
        PetNotAvailable = "pet_not_available" => 409,
        /// The order cannot be cancelled: it is approved, delivered or cancelled already.
        OrderNotCancellable = "order_not_cancellable" => 409,
        /// The API key is revoked: it cannot be rotated (the admin API).
        KeyRevoked = "key_revoked" => 409,
        /// The order is not in a state the action applies to: approving an order that is
        /// not placed, delivering one that is not approved (the admin API).
        OrderTransitionRefused = "order_transition_refused" => 409,
        /// The caller has as many webhook endpoints as it may (20): delete one first.
        WebhookEndpointLimitReached = "webhook_endpoint_limit_reached" => 409,
        /// The webhook endpoint is turned off: turn it on before redelivering.
        WebhookEndpointDisabled = "webhook_endpoint_disabled" => 409,
        /// The caller has a webhook endpoint with this URL already (one per URL).
        WebhookEndpointUrlTaken = "webhook_endpoint_url_taken" => 409,
        /// The endpoint was removed at its sunset date.
        EndpointRemoved = "endpoint_removed" => 410,
        /// The body is larger than the service accepts.
        PayloadTooLarge = "payload_too_large" => 413,
        /// The body is not `application/json`.
        UnsupportedMediaType = "unsupported_media_type" => 415,
        /// The `Idempotency-Key` was used before with a different request.
        IdempotencyKeyReused = "idempotency_key_reused" => 422,
        /// The webhook endpoint's URL is a URL, but may not receive deliveries: not
        /// `https`, with credentials or a fragment, or naming or resolving to an address of a
        /// private, loopback, link-local or reserved network (or not resolving at all).
        WebhookUrlRefused = "webhook_url_refused" => 422,
        /// Over the plan's per-minute or per-day limit; retry after `Retry-After`.
        RateLimited = "rate_limited" => 429,
        /// Banned for a while for sending on after 429s; retry after `Retry-After`.
        TemporarilyBanned = "temporarily_banned" => 429,
        /// An unexpected failure; details are logged, never sent.
        InternalError = "internal_error" => 500,
        /// A dependency (the database) is unavailable; retry after `Retry-After`.
        ServiceUnavailable = "service_unavailable" => 503,
        /// The database's disk is full: reads work, writes do not until space is freed.
        StorageFull = "storage_full" => 503,
    }
}

impl ErrorCode {
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
