//! The storage interface: the traits a backend implements, and [`Storage`], which gathers them
//! into the one object the HTTP layer calls (`Arc<dyn Storage>`). A backend is a crate or module
//! that implements these for its own type; nothing above it changes (`docs/architecture.md`).
//!
//! The repository methods are synchronous: an async caller runs them where blocking is allowed,
//! except where the backend says it can do better ([`Storage::nonblocking`],
//! [`Storage::queue_create_pet`]). Every method fails with [`StorageError`], which keeps the
//! backend's own error as its source and says, in [`StorageErrorKind`], the one thing a caller
//! acts on: whether a retry may help.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::{
    ApiKey, ApiKeySecret, Ban, Completion, IdempotencyRepository, Inventory, KeyHash, KeyMatch,
    KeySpec, Order, OrderAction, OrderError, OrderListQuery, Page, Pet, PetDraft, PetListQuery,
    PlaceOrder, Plan, RateLimits, Scope,
};

/// What a failed storage call means to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageErrorKind {
    /// The backend cannot answer now (unreachable, lost connection, timed out, busy): a retry
    /// later may succeed.
    Unavailable,
    /// The backend has no room left for writes (a full disk): reads still work, and writes will
    /// again once space is freed.
    Full,
    /// The call was made on a [`Storage::nonblocking`] view and would have had to wait; nothing
    /// was done. Run it again on the storage itself, where waiting is allowed.
    WouldBlock,
    /// Anything else: a fault that a retry will not fix (a rejected statement, a corrupt row).
    Failed,
}

impl fmt::Display for StorageErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unavailable => "storage unavailable",
            Self::Full => "storage full",
            Self::WouldBlock => "storage call would block",
            Self::Failed => "storage failed",
        })
    }
}

/// A failed storage call: its [`StorageErrorKind`] and the backend's own error as the source.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct StorageError {
    kind: StorageErrorKind,
    #[source]
    source: Box<dyn Error + Send + Sync>,
}

impl StorageError {
    /// A failure of `kind` caused by `source` (the backend's error).
    pub fn new(kind: StorageErrorKind, source: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self {
            kind,
            source: source.into(),
        }
    }

    /// What the failure means to the caller.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// The backend's error, for a caller that knows the backend (its tests, say).
    pub fn backend_error(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.source
    }
}

/// A pet to create, and the idempotency claim to complete with the response in the same
/// transaction when the request sent an `Idempotency-Key`.
#[derive(Debug, Clone)]
pub struct CreatePet {
    /// The validated pet.
    pub draft: PetDraft,
    /// Completed with the pet's response in the pet's own transaction.
    pub completion: Option<Completion<Pet>>,
}

impl CreatePet {
    /// A plain create, without an idempotency key.
    pub fn new(draft: PetDraft) -> Self {
        Self {
            draft,
            completion: None,
        }
    }
}

/// Pets: create, read one, list a page.
pub trait PetRepository {
    /// Stores a validated pet and returns it with its new id. Returns only once the pet is
    /// durably stored. With a completion, its claim is completed in the same transaction, or
    /// nothing is stored (the claim was lost: `Unavailable`, so that the client retries).
    fn create_pet(&self, pet: &CreatePet) -> Result<Pet, StorageError>;

    /// The pet with this id, if any.
    fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError>;

    /// A page of pets in ascending id order, filtered by status when asked.
    fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError>;
}

/// Store orders: each action applies [`lifecycle`](crate::order::lifecycle) to the order and its
/// pet in one transaction that holds both (so concurrent actions, on any instance, serialise).
pub trait OrderRepository {
    /// Places an order for `order.pet_id`: the pet must exist and be available; the order is
    /// created `placed` and the pet becomes `pending`, together. With a completion, its claim is
    /// completed in the same transaction.
    fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError>;

    /// Applies `action` (approve, deliver or cancel) to order `id`, and to its pet. With an
    /// owner, only that key's order is found (others are `OrderNotFound`).
    fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError>;

    /// Order `id`; with an owner, only if that key placed it.
    fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError>;

    /// A page of orders in ascending id order (the query's owner's only, when it names one).
    fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError>;

    /// How many pets have each status.
    fn inventory(&self) -> Result<Inventory, StorageError>;
}

/// API keys. Only hashes are stored; the secret is returned once, by `create_key`.
pub trait ApiKeyRepository {
    /// Issues a new random key.
    fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError>;

    /// The non-revoked key whose current secret has this hash, or whose previous secret has it
    /// (after a rotation, whether or not its grace period is over: the caller checks
    /// [`KeyMatch::is_valid_at`], so that a cached answer expires on time too).
    fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError>;

    /// Every key, revoked ones included, in id order.
    fn list_keys(&self) -> Result<Vec<ApiKey>, StorageError>;

    /// Revokes a key; `false` when no key has this id. Revoking twice keeps the first time.
    fn revoke_key(&self, id: i64) -> Result<bool, StorageError>;

    /// Changes a key's plan and custom limits (validate them with `KeySpec` first); `false`
    /// when no key has this id.
    fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError>;

    /// Bans a key unless a ban is already in force at `now` (so that instances noticing the same
    /// abuse together impose one ban, not several). Returns whether this call imposed it.
    fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError>;

    /// Lifts a key's ban and forgets its history; `false` when no key has this id.
    fn unban_key(&self, id: i64) -> Result<bool, StorageError>;

    /// Gives a non-revoked key a new secret, returned once; the current one keeps working
    /// until `grace_until` (Unix seconds; now or earlier: not at all). The key keeps its id,
    /// and with it its plan, limits, label, scope, expiry, counters and ban. `None` when no
    /// non-revoked key has this id.
    fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError>;

    /// Changes what a key may do; `false` when no key has this id.
    fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError>;

    /// Records that the key was used at `now` (Unix seconds); never moves the time back.
    fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError>;
}

/// How many calls a backend serves at once, how long a call may wait for its turn, and how long
/// it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Most calls running at once (a pool's connections). At least 1.
    pub max_calls: u32,
    /// Longest a call waits for one of those before it fails as unavailable.
    pub wait: Duration,
    /// Longest a call may run before its caller stops waiting for it and answers "unavailable":
    /// the backend's own timeouts plus a margin, for a backend that stops answering altogether
    /// (a frozen network peer keeps connections open and acknowledges packets, so neither a
    /// statement timeout nor TCP notices). A call given up on may still complete later.
    pub deadline: Duration,
}

/// Receives the outcome of [`Storage::queue_create_pet`].
pub type PetReply = Box<dyn FnOnce(Result<Pet, StorageError>) + Send>;

/// A create [`Storage::queue_create_pet`] did not queue, given back with its reply.
pub type Unqueued = (CreatePet, PetReply);

/// A complete storage backend: every repository, readiness, and how its calls are best run.
/// The HTTP layer holds one as `Arc<dyn Storage>` and knows nothing else of the backend.
pub trait Storage:
    PetRepository + OrderRepository + ApiKeyRepository + IdempotencyRepository + Send + Sync + 'static
{
    /// Ready to serve: reachable, with the schema this version expects.
    fn check_ready(&self) -> Result<(), StorageError>;

    /// How many calls may run at once; a caller bounds its concurrent calls by this.
    fn capacity(&self) -> Capacity;

    /// A view of this storage whose calls never wait: each one runs at once, or fails with
    /// [`StorageErrorKind::WouldBlock`] without doing anything. For a backend whose reads are
    /// local and short (an embedded database with a free connection), an async caller answers
    /// reads on its own thread through it, and falls back to a blocking thread on `WouldBlock`.
    /// `None` (the default) for a backend where every call may wait (a network round trip).
    fn nonblocking(&self) -> Option<&dyn Storage> {
        None
    }

    /// Starts creating `pet` and returns at once, if the backend queues writes: `done` then
    /// receives the outcome, on a thread of the backend's, once the pet is durable (as
    /// [`PetRepository::create_pet`] would have returned it). Gives both back unused when the
    /// backend does not queue (the default): the caller then calls `create_pet` where blocking
    /// is allowed.
    fn queue_create_pet(&self, pet: CreatePet, done: PetReply) -> Result<(), Unqueued> {
        Err((pet, done))
    }
}
