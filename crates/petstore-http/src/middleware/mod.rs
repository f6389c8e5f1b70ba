//! The middleware: [`observe`] (outermost: the request id, its log span, the access log, the
//! request metrics and the JSON-error safety net) and [`admission`] (per resource, as the
//! resource's [`Access`] declares: who is calling, within their limits, `401` without a key
//! where one is needed, the rate-limit headers and the resource's [`Marks`]); [`tag_files`]
//! (the docs page's files, for conditional requests). Each layer costs
//! a boxed future per request, so each concern is a function and the layers are few.

mod access;
mod admission;
mod files;
mod json_errors;
mod observe;

pub use access::{Access, Counting, Marks};
pub use admission::admission;
pub use files::tag_files;
pub use observe::{AdminListener, observe};
