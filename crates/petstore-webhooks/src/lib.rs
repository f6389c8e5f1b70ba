//! The Animal Store Service's webhook sender. Events are recorded by the storage in the
//! transaction of the change that produces them (one delivery per subscribed endpoint); this
//! crate sends them: [`Sender::run`] claims due deliveries under a lease (so that one instance
//! at a time sends each), signs each as the Standard Webhooks specification (v1) says
//! ([`sign`]), posts it with a timeout, never following a redirect and never to an address of
//! the service's own networks ([`resolve`]), and records what happened, as the domain's
//! `petstore_domain::webhook::decide` reads the answer: delivered, retried later on the
//! schedule of `retry_delay` (or after the receiver's `Retry-After`), given up on, or the
//! endpoint gone (`410`).
//!
//! Each attempt is a client span of its own when traces are exported ([`trace`]: linked to the
//! request that recorded the change, its `traceparent` sent to the receiver).
//!
//! While the API has requests under way (and for a tenth of a second after), the sender keeps its
//! storage calls to a share of the time ([`Sender::giving_way_to`]).
//!
//! Modules depend one way: `sign`, `metric`, `resolve`, `trace`, `config`, `passing_over` and
//! `giving_way`, then `sender`.
#![deny(missing_docs)]

mod config;
mod giving_way;
pub mod metric;
mod passing_over;
pub mod resolve;
pub mod sender;
pub mod sign;
mod trace;

pub use config::MIN_SHARE;
pub use giving_way::Busy;
pub use sender::{Sender, SenderConfig};
