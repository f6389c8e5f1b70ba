//! The HTTP face of the Animal Store Service: a library that turns the domain's storage
//! interface and the rate limiter (`petstore-ratelimit`) into an actix-web application
//! ([`app`]) over an [`AppState`]. The `petstore` program (its own crate) parses the command
//! line, opens the backend and serves this application.
//!
//! The crate talks to storage only through the domain's interface, `Arc<dyn Storage>`, wrapped
//! in [`db::Database`]; it never names a backend. Modules depend one way, from the bottom up:
//!
//! - [`conditional`] (entity tags), [`connection`], [`encode`], [`sunset`]: leaves; then [`telemetry`]
//!   (logging, request ids, metric names and the Prometheus recorder).
//! - [`ratelimit`]: the limiter's headers and the client address behind proxies; knows no keys
//!   and no storage.
//! - [`config`] (typed settings), then [`links`] (addresses written into responses).
//! - [`error`]: [`ApiError`], the [`ErrorCode`] catalogue, the one writer of the Error object.
//! - [`db`] (storage calls from async code), then [`auth`] (bearer keys, looked up through it).
//! - [`extract`]: strict request parsing.
//! - [`state`]: [`AppState`], built by one constructor; then [`idempotency`] (safe retries of
//!   writes, for the handlers).
//! - [`middleware`] (admission composes auth and rate limits), [`routes`] (thin handlers),
//!   [`admin`] (key administration and order fulfilment, shared by the CLI and the admin
//!   API), then [`app`].
//!
//! Start reading at [`app`], which production and every test build alike.

pub mod admin;
pub mod app;
pub mod auth;
pub mod conditional;
pub mod config;
pub mod connection;
pub mod db;
pub mod encode;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod links;
mod middleware;
pub mod ratelimit;
pub mod routes;
pub mod state;
pub mod sunset;
pub mod telemetry;

pub use app::{admin_app, app, metrics_app};
pub use config::{Config, HttpSettings, RateLimitConfig};
pub use error::{ApiError, ErrorCode};
pub use state::AppState;
