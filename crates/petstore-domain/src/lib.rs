//! The domain of the Animal Store Service: what a pet, an order, an API key and a plan *are*,
//! which inputs are valid, and the storage traits a backend implements.
//!
//! This crate does no I/O and knows no web framework or database: another Rust service can
//! depend on it alone to speak the same language (JSON shapes included, through `serde`).
//! Start with [`pet`] (the `Pet`/`NewPet` wire types and their validation), then [`query`]
//! (list parameters and keyset paging) and [`repository`] (the asynchronous traits a storage
//! backend implements, and [`Storage`], the one interface the HTTP layer calls). The rules every
//! backend must agree on are pure functions here: [`order::lifecycle`],
//! [`idempotency::decide_claim`], and the webhooks' (which event a change emits,
//! [`webhook::NewEvent::order_changed`]; what an attempt's answer means, [`webhook::decide`];
//! when an endpoint is turned off, [`webhook::turns_endpoint_off`]). What operators do to API
//! keys, over the storage interface, is [`key_admin`] (the `petstore keys` commands and the
//! admin API share it), and what they do to orders [`order_admin`] (`petstore orders` and the
//! admin API). The one clock every crate reads is [`clock`]'s. No module imports one that
//! imports it back: `clock`, `error`, `rfc3339` and `trace`, then `rate_limit`, `pet`, `secret`, `key`, `admin`,
//! `idempotency`, `order`, `query`, `webhook`, `repository`, and `key_admin` and `order_admin` on top.
#![deny(missing_docs)]

#[macro_use]
mod string_enum;

pub mod admin;
pub mod clock;
pub mod error;
pub mod error_code;
pub mod idempotency;
pub mod key;
pub mod key_admin;
pub mod order;
pub mod order_admin;
pub mod pet;
pub mod query;
pub mod rate_limit;
pub mod redact;
pub mod repository;
mod rfc3339;
pub mod secret;
pub mod trace;
pub mod webhook;

pub use admin::{ADMIN_TOKEN_PREFIX, AdminToken, AdminTokenKind, AdminTokenSecret, AdminTokenSpec};
/// The attribute the storage traits are declared with, for backends implementing them
/// (`#[petstore_domain::async_trait]`): the same crate, so that the futures match.
pub use async_trait::async_trait;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StorageError, StorageErrorKind, ValidationError};
pub use error_code::ErrorCode;
pub use idempotency::{
    ClaimDecision, ClaimOutcome, Completion, Created, Fingerprint, IdempotencyClaim,
    IdempotencyKey, IdempotencyRecord, IdempotentRequest, RecordState, StoredResponse,
    decide_claim,
};
pub use key::{ApiKey, ApiKeyKind, ApiKeySecret, KeyMatch, KeySpec, KeyState, KeyUpdate, Scope};
pub use order::{
    Inventory, LifecycleError, NewOrder, Order, OrderAction, OrderError, OrderStatus, PlaceOrder,
    lifecycle,
};
pub use pet::{NewPet, Pet, PetDraft, PetStatus};
pub use query::{KeyListQuery, Limit, OrderListQuery, Page, PageRequest, PetListQuery};
pub use rate_limit::{
    Ban, BanPolicy, Counts, Plan, RateDecision, RateLimitStatus, RateLimits, Window, WindowStatus,
    WindowUsage,
};
pub use redact::{redact_keys, redacted_url};
pub use repository::{
    AdminTokenRepository, ApiKeyRepository, Capacity, CreatePet, IdempotencyRepository,
    OrderRepository, PetRepository, Storage, WebhookRepository,
};
pub use secret::{KeyHash, Secret, SecretKind};
pub use trace::{TRACE_ROOTS, TRACES, TraceParent};

/// The README's examples, run as documentation tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
