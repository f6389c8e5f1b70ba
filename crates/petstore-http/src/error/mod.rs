//! The one place where errors become HTTP: [`ApiError`], the http crate's error type (every
//! failure a request can meet, with its cause kept as the `source`), the closed [`ErrorCode`]
//! catalogue, and [`error_response`], the one writer of the Error object.

mod body;
mod code;

use std::error::Error;
use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{ConnectionType, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use petstore_domain::key_admin::KeyAdminError;
use petstore_domain::webhook::EndpointError;
use petstore_domain::{
    OrderAction, OrderStatus, PetStatus, RateLimits, StorageError, StorageErrorKind,
    ValidationError,
};

pub use body::{ErrorObject, default_retry_after, error_response};
pub use code::{ErrorCode, status_of};

pub use petstore_domain::error::Chain;
use petstore_ratelimit::LimitError;

type BoxError = Box<dyn Error + Send + Sync>;

/// Everything a request can fail with. The `Display` text is the Error object's `message`: it
/// never includes a cause; causes are kept as sources and logged.
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
    /// Missing, malformed, unknown, revoked or expired key: deliberately one answer for all, but
    /// for its challenge (RFC 6750 §3): a bearer token `presented` is `invalid_token`, which
    /// says nothing of why.
    #[error("a valid API key is required: send `Authorization: Bearer <API_KEY>`")]
    Unauthorized {
        /// Whether the request carried a bearer token.
        presented: bool,
    },
    /// The admin API's caller has no valid admin token: one answer whatever is wrong with it,
    /// but for its challenge, as [`Self::Unauthorized`]'s.
    #[error("a valid admin token is required: send `Authorization: Bearer <ADMIN_TOKEN>`")]
    AdminUnauthorized {
        /// Whether the request carried a bearer token.
        presented: bool,
    },
    /// No API key has this id (the admin API).
    #[error("no key has id {0}")]
    KeyNotFound(i64),
    /// The API key is revoked and cannot be rotated (the admin API).
    #[error("key {0} is revoked: a revoked key cannot be rotated")]
    KeyRevoked(i64),
    /// No such pet.
    #[error("no pet has id {0}")]
    PetNotFound(i64),
    /// No such order (or none the caller placed: ids of others' orders do not leak).
    #[error("no order has id {0}")]
    OrderNotFound(i64),
    /// The pet is pending or sold.
    #[error("pet {pet} cannot be ordered: it is {status}")]
    PetNotAvailable {
        /// The pet.
        pet: i64,
        /// Its status.
        status: PetStatus,
    },
    /// The order is past the point where it can be cancelled.
    #[error("order {order} cannot be cancelled: it is {status}")]
    OrderNotCancellable {
        /// The order.
        order: i64,
        /// Its status.
        status: OrderStatus,
    },
    /// The order is not where the action applies (approving a delivered order, say): the
    /// admin API.
    #[error("order {order} is {status}: it cannot be {action}")]
    OrderTransitionRefused {
        /// The order.
        order: i64,
        /// Its status.
        status: OrderStatus,
        /// What was asked.
        action: OrderAction,
    },
    /// No such webhook endpoint (or none of the caller's).
    #[error("no webhook endpoint has id {0}")]
    WebhookEndpointNotFound(i64),
    /// The webhook endpoint has no such delivery.
    #[error("webhook endpoint {endpoint} has no delivery with id {delivery}")]
    WebhookDeliveryNotFound {
        /// The endpoint.
        endpoint: i64,
        /// The delivery asked for.
        delivery: i64,
    },
    /// The caller has as many endpoints as it may.
    #[error("you have {0} webhook endpoints, the most allowed: delete one before creating another")]
    WebhookEndpointLimitReached(usize),
    /// A webhook endpoint's host could not be looked up in time.
    #[error("{UNAVAILABLE}")]
    ResolverUnavailable(Duration),
    /// The endpoint's URL may not receive deliveries, with why.
    #[error("`url` is refused: {0}")]
    WebhookUrlRefused(String),
    /// The endpoint is off: nothing is sent to it.
    #[error("webhook endpoint {0} is turned off: turn it on (`enabled: true`) before redelivering")]
    WebhookEndpointDisabled(i64),
    /// The caller has an endpoint at this URL already: its id.
    #[error(
        "your webhook endpoint {0} has this URL already: change that one (events, description) \
         rather than registering the URL twice"
    )]
    WebhookEndpointUrlTaken(i64),
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
    /// The body stopped arriving: it was not complete within the body timeout.
    #[error("the request body did not arrive within {} s", .0.as_secs_f64())]
    RequestTimeout(Duration),
    /// The body is not JSON.
    #[error("the request body must be sent as `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// The body is declared in a charset other than UTF-8.
    #[error("the request body must be UTF-8 JSON; `charset={0}` is not accepted")]
    UnsupportedCharset(String),
    /// A header that must appear at most once appears more often.
    #[error("the header `{0}` must be sent at most once")]
    RepeatedHeader(&'static str),
    /// A request header is malformed; the message names it.
    #[error("header {0}")]
    InvalidHeader(#[source] ValidationError),
    /// A read-only key tried to write.
    #[error("this API key is read-only: it cannot create or change anything")]
    InsufficientScope,
    /// The `Idempotency-Key` was used before with another request.
    #[error(
        "this Idempotency-Key was already used with a different request; send a new key for a new request"
    )]
    IdempotencyKeyReused,
    /// A request with this `Idempotency-Key` is still running.
    #[error(
        "a request with this Idempotency-Key is still being processed; retry after {IN_PROGRESS_RETRY_AFTER} s"
    )]
    IdempotencyRequestInProgress,
    /// Over the caller's per-minute or per-day limit.
    #[error(
        "rate limit exceeded ({} requests per minute, {} per day); retry after {retry_after} s",
        limits.per_minute,
        limits.per_day
    )]
    RateLimited {
        /// The caller's limits.
        limits: RateLimits,
        /// Seconds until a request can succeed.
        retry_after: u64,
    },
    /// Banned for sending on after `429`s.
    #[error(
        "temporarily banned for continuing to send requests after being rate limited; retry after {retry_after} s"
    )]
    TemporarilyBanned {
        /// Seconds until the ban ends.
        retry_after: u64,
    },
    /// A storage call failed; its kind decides between `503` and `500`.
    #[error("{}", storage_message(.0))]
    Storage(#[from] StorageError),
    /// Every storage call slot stayed taken for as long as a call may wait for one.
    #[error("{UNAVAILABLE}")]
    NoStorageSlot(Duration),
    /// A storage call did not finish within its deadline: the storage has gone silent.
    #[error("{UNAVAILABLE}")]
    StorageDeadline(Duration),
    /// The rate limiter could not decide (its shared store is down and the service fails
    /// closed, or a ban could not be recorded).
    #[error("{UNAVAILABLE}")]
    RateLimiting(#[from] LimitError),
    /// The server is shutting down (draining: still answering, no longer ready).
    #[error("{UNAVAILABLE}")]
    ShuttingDown,
    /// `/readyz`: the service cannot serve requests now, for this reason.
    #[error("{UNAVAILABLE}")]
    NotReady(#[source] std::sync::Arc<ApiError>),
    /// Anything else. The cause is logged, never sent.
    #[error("{INTERNAL}")]
    Internal(#[source] BoxError),
}

/// Seconds a client waits before retrying a request whose `Idempotency-Key` is in flight.
pub const IN_PROGRESS_RETRY_AFTER: u64 = 1;

const UNAVAILABLE: &str = "the service is temporarily unavailable; retry later";
const INTERNAL: &str = "an internal error occurred";

fn storage_message(error: &StorageError) -> &'static str {
    match error.kind() {
        StorageErrorKind::Unavailable => UNAVAILABLE,
        StorageErrorKind::Full => {
            "the service cannot store anything now (its storage is full); reads still work"
        }
        StorageErrorKind::Failed => INTERNAL,
    }
}

/// A key operation's failure (admin API): a validation or storage failure like anywhere else,
/// the key's own with their codes.
impl From<KeyAdminError> for ApiError {
    fn from(error: KeyAdminError) -> Self {
        match error {
            KeyAdminError::NotFound(id) => Self::KeyNotFound(id),
            KeyAdminError::Revoked(id) => Self::KeyRevoked(id),
            KeyAdminError::Invalid(invalid) => Self::Validation(invalid),
            KeyAdminError::Storage(storage) => Self::Storage(storage),
        }
    }
}

/// An endpoint's fields refused: a field not of its form (`400`), or a URL that may not
/// receive deliveries (`422`).
impl From<EndpointError> for ApiError {
    fn from(error: EndpointError) -> Self {
        match error {
            EndpointError::Invalid(invalid) => Self::Validation(invalid),
            EndpointError::Refused(why) => Self::WebhookUrlRefused(why),
        }
    }
}

impl ApiError {
    /// Wraps an unexpected failure.
    pub fn internal(cause: impl Into<BoxError>) -> Self {
        Self::Internal(cause.into())
    }

    /// Whole seconds after which the request may succeed, for `Retry-After`: the wait a refusal
    /// carries (over a limit, banned, a ban that could not be recorded), a second for an
    /// `Idempotency-Key` in flight, else the code's own ([`default_retry_after`]).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::TemporarilyBanned { retry_after } => {
                Some(*retry_after)
            }
            Self::RateLimiting(LimitError::BanNotRecorded { retry_after, .. }) => {
                Some(*retry_after)
            }
            Self::IdempotencyRequestInProgress => Some(IN_PROGRESS_RETRY_AFTER),
            _ => default_retry_after(self.code()),
        }
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
            Self::Unauthorized { .. } | Self::AdminUnauthorized { .. } => ErrorCode::Unauthorized,
            Self::KeyNotFound(_) => ErrorCode::KeyNotFound,
            Self::KeyRevoked(_) => ErrorCode::KeyRevoked,
            Self::PetNotFound(_) => ErrorCode::PetNotFound,
            Self::OrderNotFound(_) => ErrorCode::OrderNotFound,
            Self::PetNotAvailable { .. } => ErrorCode::PetNotAvailable,
            Self::OrderNotCancellable { .. } => ErrorCode::OrderNotCancellable,
            Self::OrderTransitionRefused { .. } => ErrorCode::OrderTransitionRefused,
            Self::WebhookEndpointNotFound(_) => ErrorCode::WebhookEndpointNotFound,
            Self::WebhookDeliveryNotFound { .. } => ErrorCode::WebhookDeliveryNotFound,
            Self::WebhookEndpointLimitReached(_) => ErrorCode::WebhookEndpointLimitReached,
            Self::WebhookEndpointDisabled(_) => ErrorCode::WebhookEndpointDisabled,
            Self::WebhookEndpointUrlTaken(_) => ErrorCode::WebhookEndpointUrlTaken,
            Self::WebhookUrlRefused(_) => ErrorCode::WebhookUrlRefused,
            Self::RouteNotFound(_) => ErrorCode::RouteNotFound,
            Self::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            Self::EndpointRemoved { .. } => ErrorCode::EndpointRemoved,
            Self::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            Self::RequestTimeout(_) => ErrorCode::RequestTimeout,
            Self::UnsupportedMediaType | Self::UnsupportedCharset(_) => {
                ErrorCode::UnsupportedMediaType
            }
            Self::RepeatedHeader(_) => ErrorCode::BadRequest,
            Self::InvalidHeader(_) => ErrorCode::InvalidHeader,
            Self::InsufficientScope => ErrorCode::InsufficientScope,
            Self::IdempotencyKeyReused => ErrorCode::IdempotencyKeyReused,
            Self::IdempotencyRequestInProgress => ErrorCode::IdempotencyRequestInProgress,
            Self::RateLimited { .. } => ErrorCode::RateLimited,
            Self::TemporarilyBanned { .. } => ErrorCode::TemporarilyBanned,
            Self::Storage(error) => match error.kind() {
                StorageErrorKind::Unavailable => ErrorCode::ServiceUnavailable,
                StorageErrorKind::Full => ErrorCode::StorageFull,
                StorageErrorKind::Failed => ErrorCode::InternalError,
            },
            Self::NoStorageSlot(_)
            | Self::StorageDeadline(_)
            | Self::RateLimiting(_)
            | Self::ShuttingDown
            | Self::NotReady(_)
            | Self::ResolverUnavailable(_) => ErrorCode::ServiceUnavailable,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// Logs a failure of the service (not of the client's request) with its whole chain of
    /// causes: `5xx` at `error` (internal) or `warn` (a dependency unavailable).
    fn log(&self) {
        let code = self.code();
        match code {
            ErrorCode::InternalError => log::error!("{}: {}", code.as_str(), Chain(self)),
            ErrorCode::ServiceUnavailable => log::warn!("{}: {}", code.as_str(), Chain(self)),
            // Said once by the store when the disk fills, not once per request.
            ErrorCode::StorageFull => log::debug!("{}: {}", code.as_str(), Chain(self)),
            _ => {}
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        status_of(self.code())
    }

    fn error_response(&self) -> HttpResponse {
        self.log();
        let code = self.code();
        let mut response =
            error_response(status_of(code), code, &self.to_string(), self.retry_after());
        if let Self::RequestTimeout(_) = self {
            // What is left of the body may still come, or never: the connection is done.
            response
                .head_mut()
                .set_connection_type(ConnectionType::Close);
        }
        if let Self::MethodNotAllowed { allow, .. } = self {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if let Self::Unauthorized { presented: true }
        | Self::AdminUnauthorized { presented: true } = self
        {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(body::INVALID_TOKEN),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_shows_every_cause_and_the_message_none() {
        let storage = StorageError::new(
            StorageErrorKind::Unavailable,
            std::io::Error::other("connection refused"),
        );
        let error = ApiError::from(storage);
        assert_eq!(error.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(error.to_string(), UNAVAILABLE, "the client sees no cause");
        assert_eq!(
            Chain(&error).to_string(),
            format!("{UNAVAILABLE}: storage unavailable: connection refused")
        );
        let failed = ApiError::from(StorageError::new(StorageErrorKind::Failed, "bad row"));
        assert_eq!(failed.code(), ErrorCode::InternalError);
        assert_eq!(failed.to_string(), INTERNAL);
    }
}
