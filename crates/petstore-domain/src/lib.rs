//! The domain of the Animal Store Service: what a pet, an order, an API key and a plan *are*,
//! which inputs are valid, and the storage traits a backend implements.
//!
//! This crate does no I/O and knows no web framework or database: another Rust service can
//! depend on it alone to speak the same language (JSON shapes included, through `serde`).
//! Start with [`pet`] (the `Pet`/`NewPet` wire types and their validation), then [`query`]
//! (list parameters and keyset paging) and [`repository`] (the traits a storage backend implements,
//! and [`Storage`], the one interface the HTTP layer calls).
#![warn(missing_docs)]

#[macro_use]
mod string_enum;

pub mod error;
pub mod error_code;
pub mod idempotency;
pub mod key;
pub mod order;
pub mod pet;
pub mod query;
pub mod rate_limit;
pub mod repository;

pub use error::ValidationError;
pub use error_code::ErrorCode;
pub use idempotency::{
    ClaimOutcome, Completion, Fingerprint, IdempotencyClaim, IdempotencyKey, IdempotencyRepository,
    IdempotentRequest, StoredResponse,
};
pub use key::{ApiKey, ApiKeySecret, KeyHash, KeyMatch, KeySpec, Plan, RateLimits, Scope};
pub use order::{
    Inventory, LifecycleError, NewOrder, Order, OrderAction, OrderError, OrderStatus, PlaceOrder,
    lifecycle,
};
pub use pet::{NewPet, Pet, PetDraft, PetStatus};
pub use query::{Limit, OrderListQuery, Page, PageRequest, PetListQuery};
pub use rate_limit::{
    Ban, BanPolicy, Counts, RateDecision, RateLimitStatus, Window, WindowStatus, WindowUsage,
};
pub use repository::{
    ApiKeyRepository, Capacity, CreatePet, OrderRepository, PetReply, PetRepository, Storage,
    StorageError, StorageErrorKind, Unqueued,
};
