//! The storage traits a backend implements. They are synchronous: callers in an async runtime
//! run them on a blocking thread pool. Each backend brings its own error type.

use crate::{
    ApiKey, ApiKeySecret, KeyHash, KeySpec, NewOrder, Order, OrderListQuery, Page, Pet, PetDraft,
    PetListQuery,
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
}
