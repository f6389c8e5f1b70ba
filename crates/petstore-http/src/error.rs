//! The one place where errors become HTTP: [`ApiError`] (the http crate's error type), the
//! closed [`ErrorCode`] catalogue (documented in `docs/errors.md`) and the Error object body.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use petstore_domain::ValidationError;
use petstore_store::StoreError;
use serde::Serialize;

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
    /// 400: the request is malformed in a way no other code describes.
    BadRequest,
    /// 401: the API key is missing, malformed, unknown or revoked.
    Unauthorized,
    /// 404: no pet has the requested id.
    PetNotFound,
    /// 404: no endpoint has this path.
    RouteNotFound,
    /// 405: the endpoint exists but not for this method (see `Allow`).
    MethodNotAllowed,
    /// 410: the endpoint was removed at its sunset date.
    EndpointRemoved,
    /// 413: the body is larger than the service accepts.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 429: over the plan's per-minute or per-day limit; retry after `Retry-After`.
    RateLimited,
    /// 429: banned for a while for sending on after 429s; retry after `Retry-After`.
    TemporarilyBanned,
    /// 500: an unexpected failure; details are logged, never sent.
    InternalError,
    /// 503: a dependency (the database) is unavailable; retry after `Retry-After`.
    ServiceUnavailable,
}

impl ErrorCode {
    /// Every code, for documentation checks.
    pub const ALL: [ErrorCode; 19] = [
        Self::InvalidJson,
        Self::MissingField,
        Self::UnknownField,
        Self::InvalidField,
        Self::InvalidQueryParameter,
        Self::UnknownQueryParameter,
        Self::InvalidPathParameter,
        Self::BadRequest,
        Self::Unauthorized,
        Self::PetNotFound,
        Self::RouteNotFound,
        Self::MethodNotAllowed,
        Self::EndpointRemoved,
        Self::PayloadTooLarge,
        Self::UnsupportedMediaType,
        Self::RateLimited,
        Self::TemporarilyBanned,
        Self::InternalError,
        Self::ServiceUnavailable,
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
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::PetNotFound => "pet_not_found",
            Self::RouteNotFound => "route_not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::EndpointRemoved => "endpoint_removed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::RateLimited => "rate_limited",
            Self::TemporarilyBanned => "temporarily_banned",
            Self::InternalError => "internal_error",
            Self::ServiceUnavailable => "service_unavailable",
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
            | Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::PetNotFound | Self::RouteNotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::EndpointRemoved => StatusCode::GONE,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RateLimited | Self::TemporarilyBanned => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The code for an error response produced outside [`ApiError`] (the safety net).
    pub fn for_status(status: StatusCode) -> Self {
        match status {
            StatusCode::UNAUTHORIZED => Self::Unauthorized,
            StatusCode::NOT_FOUND => Self::RouteNotFound,
            StatusCode::METHOD_NOT_ALLOWED => Self::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType,
            StatusCode::SERVICE_UNAVAILABLE => Self::ServiceUnavailable,
            StatusCode::TOO_MANY_REQUESTS => Self::RateLimited,
            s if s.is_client_error() => Self::BadRequest,
            _ => Self::InternalError,
        }
    }
}

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// An input broke a domain rule; the message names the field or parameter.
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// The body is not a JSON object.
    #[error("the request body is not valid JSON: {0}")]
    InvalidJson(String),
    /// A path parameter is malformed.
    #[error("path parameter `{name}` {reason}")]
    InvalidPath {
        /// The parameter.
        name: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Missing, malformed, unknown or revoked key: deliberately one answer for all four.
    #[error("a valid API key is required: send `Authorization: Bearer <API_KEY>`")]
    Unauthorized,
    /// No such pet.
    #[error("no pet has id {0}")]
    PetNotFound(i64),
    /// No such endpoint.
    #[error("no endpoint at {0}")]
    RouteNotFound(String),
    /// Wrong method; `allow` lists the right ones.
    #[error("method {method} is not allowed here; allowed: {allow}")]
    MethodNotAllowed {
        /// The method the client used.
        method: String,
        /// The `Allow` header value.
        allow: &'static str,
    },
    /// The endpoint is past its sunset.
    #[error("this endpoint was removed on {sunset}; use {replacement}")]
    EndpointRemoved {
        /// The sunset date (HTTP date).
        sunset: &'static str,
        /// What to call instead.
        replacement: &'static str,
    },
    /// The body is too large.
    #[error("the request body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    /// The body is not JSON.
    #[error("the request body must be sent as `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// A dependency is down; retrying later may work.
    #[error("the service is temporarily unavailable; retry later")]
    Unavailable(String),
    /// Anything else. The cause is logged, never sent.
    #[error("an internal error occurred")]
    Internal(String),
}

impl ApiError {
    /// Wraps an unexpected failure.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self::Internal(cause.to_string())
    }

    /// The catalogue code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Validation(error) => match error {
                ValidationError::MissingField(_) => ErrorCode::MissingField,
                ValidationError::UnknownField { .. } => ErrorCode::UnknownField,
                ValidationError::InvalidField { .. } => ErrorCode::InvalidField,
                ValidationError::UnknownParameter(_) => ErrorCode::UnknownQueryParameter,
                ValidationError::InvalidParameter { .. } => ErrorCode::InvalidQueryParameter,
            },
            Self::InvalidJson(_) => ErrorCode::InvalidJson,
            Self::InvalidPath { .. } => ErrorCode::InvalidPathParameter,
            Self::Unauthorized => ErrorCode::Unauthorized,
            Self::PetNotFound(_) => ErrorCode::PetNotFound,
            Self::RouteNotFound(_) => ErrorCode::RouteNotFound,
            Self::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            Self::EndpointRemoved { .. } => ErrorCode::EndpointRemoved,
            Self::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            Self::UnsupportedMediaType => ErrorCode::UnsupportedMediaType,
            Self::Unavailable(_) => ErrorCode::ServiceUnavailable,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) => Self::Unavailable(cause),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// The Error object of the interface.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    /// Catalogue code.
    pub code: &'a str,
    /// Human-readable description.
    pub message: &'a str,
    /// The HTTP status, repeated.
    pub status: u16,
}

/// An Error object response for `code` with `message`.
pub fn error_response(code: ErrorCode, message: &str) -> HttpResponse {
    let status = code.status();
    let mut response = HttpResponse::build(status);
    match code {
        ErrorCode::Unauthorized => {
            response.insert_header((
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"petstore\""),
            ));
        }
        ErrorCode::ServiceUnavailable => {
            response.insert_header((header::RETRY_AFTER, HeaderValue::from_static("1")));
        }
        _ => {}
    }
    response.json(ErrorBody {
        code: code.as_str(),
        message,
        status: status.as_u16(),
    })
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code().status()
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            Self::Internal(cause) => log::error!("internal error: {cause}"),
            Self::Unavailable(cause) => log::warn!("dependency unavailable: {cause}"),
            _ => {}
        }
        let mut response = error_response(self.code(), &self.to_string());
        if let Self::MethodNotAllowed { allow, .. } = self {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        response
    }
}
