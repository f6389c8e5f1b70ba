//! Request headers the handlers take: `Idempotency-Key`.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::http::header::HeaderName;
use actix_web::{FromRequest, HttpRequest};
use petstore_domain::IdempotencyKey;

use crate::error::ApiError;

/// `Idempotency-Key`.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The request's `Idempotency-Key`, if it sent one: `400 invalid_header` when malformed,
/// `400 bad_request` when sent twice.
#[derive(Debug)]
pub struct IdempotencyHeader(pub Option<IdempotencyKey>);

impl FromRequest for IdempotencyHeader {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let mut sent = req.headers().get_all(IDEMPOTENCY_KEY);
        ready(match (sent.next(), sent.next()) {
            (None, _) => Ok(Self(None)),
            (Some(_), Some(_)) => Err(ApiError::RepeatedHeader("Idempotency-Key")),
            (Some(value), None) => IdempotencyKey::parse(value.as_bytes())
                .map(|key| Self(Some(key)))
                .map_err(ApiError::InvalidHeader),
        })
    }
}
