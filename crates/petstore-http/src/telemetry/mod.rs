//! What the service tells its operators: logs ([`logging`]), request ids ([`request_id`]) and
//! Prometheus metrics ([`metric`]). A leaf: the middleware and the modules that record metrics
//! use it, and it uses none of them.

pub mod logging;
pub mod metric;
pub mod request_id;

pub use logging::{ACCESS_LOG, LogFormat};
pub use request_id::RequestId;
