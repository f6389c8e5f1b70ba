//! The client's one error type.

use std::time::Duration;

use petstore_domain::ErrorCode;
use serde::Deserialize;

/// What a call can fail with. New kinds of failure may be added in a minor version: a `match`
/// needs a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The service answered with an Error object (after any retries the policy allows).
    #[error("{status} {code_text}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The Error object's `code`, when it is one this client knows (a newer service may send
        /// codes added since: see `code_text`).
        code: Option<ErrorCode>,
        /// The `code` as sent.
        code_text: String,
        /// The `message`, for people.
        message: String,
        /// `Retry-After`, when the answer had one.
        retry_after: Option<Duration>,
    },
    /// `410 endpoint_removed`: the operation is past its sunset (`get_pet` after 2030-12-05).
    #[error("the endpoint was removed: {message}")]
    EndpointRemoved {
        /// The service's message (what to call instead).
        message: String,
    },
    /// The next request would have to wait longer than the client's `max_wait` (a day window
    /// used up, a long ban): nothing was sent.
    #[error("the rate limit leaves no room for {0:?}")]
    RateLimitWait(Duration),
    /// The request did not get an answer (connection refused or lost, timed out), after any
    /// retries the policy allows.
    #[error("transport: {0}")]
    Transport(#[source] reqwest::Error),
    /// The answer was not what the interface says (not JSON, say).
    #[error("unexpected response: {0}")]
    InvalidResponse(String),
    /// The client was built or called with something unusable.
    #[error("configuration: {0}")]
    Config(String),
}

impl Error {
    /// The Error object's code, for an [`Error::Api`] with a known one (and
    /// [`ErrorCode::EndpointRemoved`] for [`Error::EndpointRemoved`]).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Api { code, .. } => *code,
            Self::EndpointRemoved { .. } => Some(ErrorCode::EndpointRemoved),
            _ => None,
        }
    }

    /// The HTTP status, for an answer from the service.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } => Some(*status),
            Self::EndpointRemoved { .. } => Some(410),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct ErrorObject {
    code: String,
    message: String,
}

/// The error an unsuccessful response carries.
pub(crate) async fn from_response(
    response: reqwest::Response,
    retry_after: Option<Duration>,
) -> Error {
    let status = response.status().as_u16();
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(error) => return Error::Transport(error),
    };
    let Ok(object) = serde_json::from_slice::<ErrorObject>(&body) else {
        let text = String::from_utf8_lossy(&body);
        return Error::InvalidResponse(format!(
            "{status} without an Error object: {}",
            text.chars().take(200).collect::<String>()
        ));
    };
    let code = object.code.parse::<ErrorCode>().ok();
    if code == Some(ErrorCode::EndpointRemoved) {
        return Error::EndpointRemoved {
            message: object.message,
        };
    }
    Error::Api {
        status,
        code,
        code_text: object.code,
        message: object.message,
        retry_after,
    }
}
