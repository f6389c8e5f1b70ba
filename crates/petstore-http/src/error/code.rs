//! The closed catalogue of `code` values (documented in `docs/errors.md`) and the status each
//! is sent with.

use actix_web::http::StatusCode;

/// Every `code` the service sends. The strings are a stable contract with clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 400: the body is not syntactically valid JSON, or is not a JSON object.
    InvalidJson,
    /// 400: a required body field is absent.
    MissingField,
    /// 400: the body has a field the schema does not (or that clients may not set).
    UnknownField,
    /// 400: a body field has the wrong type or a value that breaks a rule.
    InvalidField,
    /// 400: a query parameter is malformed, out of range or repeated.
    InvalidQueryParameter,
    /// 400: the operation takes no query parameter of that name.
    UnknownQueryParameter,
    /// 400: a path parameter is malformed (e.g. `petId` not an int64).
    InvalidPathParameter,
    /// 400: a request header is malformed (e.g. `Idempotency-Key`).
    InvalidHeader,
    /// 400: the request is malformed in a way no other code describes.
    BadRequest,
    /// 401: the API key is missing, malformed, unknown or revoked.
    Unauthorized,
    /// 403: the API key is read-only and the operation writes.
    InsufficientScope,
    /// 404: no pet has the requested id.
    PetNotFound,
    /// 404: no order has the requested id (or none the caller placed).
    OrderNotFound,
    /// 404: no endpoint has this path.
    RouteNotFound,
    /// 405: the endpoint exists but not for this method (see `Allow`).
    MethodNotAllowed,
    /// 408: the request body stopped arriving; the connection is closed.
    RequestTimeout,
    /// 409: a request with the same `Idempotency-Key` is still being processed; retry after
    /// `Retry-After`.
    IdempotencyRequestInProgress,
    /// 409: the pet cannot be ordered: it is pending or sold.
    PetNotAvailable,
    /// 409: the order cannot be cancelled: it is approved, delivered or cancelled already.
    OrderNotCancellable,
    /// 410: the endpoint was removed at its sunset date.
    EndpointRemoved,
    /// 413: the body is larger than the service accepts.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 422: the `Idempotency-Key` was used before with a different request.
    IdempotencyKeyReused,
    /// 429: over the plan's per-minute or per-day limit; retry after `Retry-After`.
    RateLimited,
    /// 429: banned for a while for sending on after 429s; retry after `Retry-After`.
    TemporarilyBanned,
    /// 500: an unexpected failure; details are logged, never sent.
    InternalError,
    /// 503: a dependency (the database) is unavailable; retry after `Retry-After`.
    ServiceUnavailable,
    /// 503: the database's disk is full: reads work, writes do not until space is freed.
    StorageFull,
}

impl ErrorCode {
    /// Every code, for documentation checks.
    pub const ALL: [ErrorCode; 28] = [
        Self::InvalidJson,
        Self::MissingField,
        Self::UnknownField,
        Self::InvalidField,
        Self::InvalidQueryParameter,
        Self::UnknownQueryParameter,
        Self::InvalidPathParameter,
        Self::InvalidHeader,
        Self::BadRequest,
        Self::Unauthorized,
        Self::InsufficientScope,
        Self::PetNotFound,
        Self::OrderNotFound,
        Self::RouteNotFound,
        Self::MethodNotAllowed,
        Self::RequestTimeout,
        Self::IdempotencyRequestInProgress,
        Self::PetNotAvailable,
        Self::OrderNotCancellable,
        Self::EndpointRemoved,
        Self::PayloadTooLarge,
        Self::UnsupportedMediaType,
        Self::IdempotencyKeyReused,
        Self::RateLimited,
        Self::TemporarilyBanned,
        Self::InternalError,
        Self::ServiceUnavailable,
        Self::StorageFull,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::InvalidField => "invalid_field",
            Self::InvalidQueryParameter => "invalid_query_parameter",
            Self::UnknownQueryParameter => "unknown_query_parameter",
            Self::InvalidPathParameter => "invalid_path_parameter",
            Self::InvalidHeader => "invalid_header",
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::InsufficientScope => "insufficient_scope",
            Self::PetNotFound => "pet_not_found",
            Self::OrderNotFound => "order_not_found",
            Self::RouteNotFound => "route_not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::RequestTimeout => "request_timeout",
            Self::IdempotencyRequestInProgress => "idempotency_request_in_progress",
            Self::PetNotAvailable => "pet_not_available",
            Self::OrderNotCancellable => "order_not_cancellable",
            Self::EndpointRemoved => "endpoint_removed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::RateLimited => "rate_limited",
            Self::TemporarilyBanned => "temporarily_banned",
            Self::InternalError => "internal_error",
            Self::ServiceUnavailable => "service_unavailable",
            Self::StorageFull => "storage_full",
        }
    }

    /// The HTTP status the code is sent with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::InvalidJson
            | Self::MissingField
            | Self::UnknownField
            | Self::InvalidField
            | Self::InvalidQueryParameter
            | Self::UnknownQueryParameter
            | Self::InvalidPathParameter
            | Self::InvalidHeader
            | Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::InsufficientScope => StatusCode::FORBIDDEN,
            Self::PetNotFound | Self::OrderNotFound | Self::RouteNotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::IdempotencyRequestInProgress
            | Self::PetNotAvailable
            | Self::OrderNotCancellable => StatusCode::CONFLICT,
            Self::EndpointRemoved => StatusCode::GONE,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited | Self::TemporarilyBanned => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::ServiceUnavailable | Self::StorageFull => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The code for an error response produced outside [`ApiError`] (the safety net).
    pub fn for_status(status: StatusCode) -> Self {
        match status {
            StatusCode::UNAUTHORIZED => Self::Unauthorized,
            StatusCode::NOT_FOUND => Self::RouteNotFound,
            StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge,
            StatusCode::REQUEST_TIMEOUT => Self::RequestTimeout,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType,
            StatusCode::SERVICE_UNAVAILABLE => Self::ServiceUnavailable,
            StatusCode::TOO_MANY_REQUESTS => Self::RateLimited,
            s if s.is_client_error() => Self::BadRequest,
            _ => Self::InternalError,
        }
    }
}
