//! The deprecation schedule of the interface's operations: `GET /pets/{petId}` is deprecated
//! and removed on 5 December 2030. Its handler answers `410` from then on; its resource's
//! middleware announces both dates on every response before that.

/// RFC 9745 date (as a structured-field date) on which `GET /pets/{petId}` was deprecated:
/// 2026-01-01T00:00:00Z, the publication of interface 1.0.0 with the deprecation notice.
pub const DEPRECATED_AT: &str = "@1767225600";
/// RFC 8594 sunset of `GET /pets/{petId}`.
pub const SUNSET: &str = "Thu, 05 Dec 2030 00:00:00 GMT";
/// The sunset instant in Unix seconds.
pub const SUNSET_UNIX: u64 = 1_922_659_200;
