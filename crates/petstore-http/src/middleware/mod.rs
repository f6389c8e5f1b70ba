//! The middleware: [`observe`] (outermost: the request id, its log span, the access log and
//! the request metrics), [`admission`] (application-wide: who is calling, within their limits, the
//! rate-limit headers, inside the JSON-error safety net) and [`require_key_and_mark`] (per
//! resource: `401` without a valid key, and the resource's [`Marks`]). Each layer costs a boxed
//! future per request, so each concern is a function and the layers are few.

mod admission;
mod json_errors;
mod marks;
mod observe;

pub use admission::admission;
pub use json_errors::error_objects;
pub use marks::{Marks, require_key_and_mark};
pub use observe::observe;
