//! Request parsing that reports errors as the interface wants them: the strict JSON body
//! ([`JsonBody`]) and query-string pairs ([`query_pairs`]).

mod json;
mod query;

pub use json::{BodyTimeout, JsonBody, MAX_BODY_BYTES, parse};
pub use query::query_pairs;
