//! Request parsing that reports errors as the interface wants them: the strict JSON body
//! ([`JsonBody`], or [`JsonBytes`] unparsed), query-string pairs ([`query_pairs`]) and the
//! `Idempotency-Key` header ([`IdempotencyHeader`]).

mod header;
mod json;
mod query;

pub use header::{IDEMPOTENCY_KEY, IdempotencyHeader};
pub use json::{BodyTimeout, JsonBody, JsonBytes, MAX_BODY_BYTES, parse};
pub use query::{no_query_parameters, query_pairs};
