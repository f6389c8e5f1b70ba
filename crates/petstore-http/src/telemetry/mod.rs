//! What the service tells its operators: the access log's target ([`ACCESS_LOG`]), request ids
//! ([`request_id`]), Prometheus metrics ([`metric`]) and the request's server span ([`trace`]). A leaf: the middleware and the modules
//! that record metrics use it, and it uses none of them. Where log lines go (the subscriber, its
//! format, the redaction of secrets) is the program's to set up.

pub mod metric;
pub mod request_id;
pub mod trace;

pub use request_id::RequestId;

/// The target of the access log: `RUST_LOG=info,petstore::access=off` silences it.
pub const ACCESS_LOG: &str = "petstore::access";
