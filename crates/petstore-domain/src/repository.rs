//! The storage traits a backend implements. They are synchronous: callers in an async runtime
//! run them on a blocking thread pool. Each backend brings its own error type.

use crate::{
    ApiKey, ApiKeySecret, Ban, KeyHash, KeySpec, NewOrder, Order, OrderListQuery, Page, Pet,
    PetDraft, PetListQuery, Plan, RateLimits,
};

/// Pets: create, read one, list a page.
pub trait PetRepository {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Stores a validated pet and returns it with its new id. Returns only once the pet is
    /// durably stored.
    fn create_pet(&self, pet: &PetDraft) -> Result<Pet, Self::Error>;

    /// The pet with this id, if any.
    fn find_pet(&self, id: i64) -> Result<Option<Pet>, Self::Error>;

    /// A page of pets in ascending id order, filtered by status when asked.
    fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, Self::Error>;
}

/// Store orders.
pub trait OrderRepository {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Stores an order placed now.
    fn create_order(&self, order: &NewOrder) -> Result<Order, Self::Error>;

    /// A page of orders in ascending id order.
    fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, Self::Error>;
}

/// API keys. Only hashes are stored; the secret is returned once, by `create_key`.
pub trait ApiKeyRepository {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Issues a new random key.
    fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), Self::Error>;

    /// The non-revoked key with this hash, if any.
    fn find_active_key(&self, hash: &KeyHash) -> Result<Option<ApiKey>, Self::Error>;

    /// Every key, revoked ones included, in id order.
    fn list_keys(&self) -> Result<Vec<ApiKey>, Self::Error>;

    /// Revokes a key; `false` when no key has this id. Revoking twice keeps the first time.
    fn revoke_key(&self, id: i64) -> Result<bool, Self::Error>;

    /// Changes a key's plan and custom limits (validate them with `KeySpec` first); `false`
    /// when no key has this id.
    fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, Self::Error>;

    /// Bans a key unless a ban is already in force at `now` (so that instances noticing the same
    /// abuse together impose one ban, not several). Returns whether this call imposed it.
    fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, Self::Error>;

    /// Lifts a key's ban and forgets its history; `false` when no key has this id.
    fn unban_key(&self, id: i64) -> Result<bool, Self::Error>;
}
