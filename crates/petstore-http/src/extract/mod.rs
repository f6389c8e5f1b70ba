//! Request parsing that reports errors as the interface wants them, one extractor per kind of
//! input, used alike by the public and the admin API: the strict JSON body ([`JsonBody`], or
//! [`JsonBytes`] unparsed), path ids ([`PetId`], [`OrderId`], [`KeyId`]), query parameters
//! ([`Query`] of a [`FromQuery`] type, or [`NoQuery`]) and the `Idempotency-Key` header
//! ([`IdempotencyHeader`]).

mod header;
mod json;
mod path;
mod query;

pub use header::{IDEMPOTENCY_KEY, IdempotencyHeader};
pub use json::{BodyTimeout, JsonBody, JsonBytes, MAX_BODY_BYTES, parse};
pub use path::{KeyId, OrderId, PetId};
pub use query::{FromQuery, NoQuery, Query, as_strs};
