//! The storage interface: the traits a backend implements, and [`Storage`], which gathers them
//! into the one object the HTTP layer calls (`Arc<dyn Storage>`). A backend is a crate or module
//! that implements these for its own type; nothing above it changes (`docs/architecture.md`).
//!
//! Every method is asynchronous and returns a boxed `Send` future (`async_trait`), so that the
//! traits stay object safe and a caller on any async runtime can await them. How a call runs
//! (on the caller's thread, on threads of the backend's own, over a network connection driven by
//! the caller's runtime) is the backend's business: this crate names no runtime. A call does its
//! work when its future is polled, and a caller may drop the future (a deadline passed): the
//! backend must then leave nothing half-done and no connection it cannot trust. Every method
//! fails with [`StorageError`], which keeps the backend's own error as its source and says, in
//! [`StorageErrorKind`](crate::StorageErrorKind), the one thing a caller acts on: whether a
//! retry may help.

use std::time::Duration;

use async_trait::async_trait;

use crate::webhook::{
    Attempt, AttemptRecord, Backlog, Delivery, DeliveryClaim, DueDelivery, EndpointOwner,
    EndpointSpec, EndpointUpdate, EndpointWrite, SigningSecret, WebhookEndpoint,
};
use crate::{
    AdminToken, AdminTokenSecret, AdminTokenSpec, ApiKey, ApiKeySecret, Ban, ClaimOutcome,
    Completion, IdempotencyClaim, IdempotentRequest, Inventory, KeyHash, KeyListQuery, KeyMatch,
    KeySpec, KeyUpdate, Order, OrderAction, OrderError, OrderListQuery, Page, PageRequest, Pet,
    PetDraft, PetListQuery, PlaceOrder, Plan, RateLimits, Scope, StorageError, StoredResponse,
};

/// A pet to create, and the idempotency claim to complete with the response in the same
/// transaction when the request sent an `Idempotency-Key`.
#[derive(Debug, Clone)]
pub struct CreatePet {
    /// The validated pet.
    pub draft: PetDraft,
    /// With an `Idempotency-Key`: its claim, completed with the pet's response in the pet's own
    /// transaction.
    pub completion: Option<Completion>,
    /// The API key creating it, whose webhook endpoints get its `pet.created` event (`None`:
    /// only the operators' endpoints do).
    pub creator: Option<i64>,
}

impl CreatePet {
    /// A plain create, without an idempotency key, by no key.
    pub fn new(draft: PetDraft) -> Self {
        Self {
            draft,
            completion: None,
            creator: None,
        }
    }
}

/// Pets: create, read one, list a page.
#[async_trait]
pub trait PetRepository {
    /// Stores a validated pet and returns it with its new id. Returns only once the pet is
    /// durably stored. With a completion, its claim is completed in the same transaction, or
    /// nothing is stored (the claim was lost: `Unavailable`, so that the client retries).
    async fn create_pet(&self, pet: &CreatePet) -> Result<Pet, StorageError>;

    /// The pet with this id, if any.
    async fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError>;

    /// A page of pets in ascending id order, filtered by status when asked.
    async fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError>;
}

/// Store orders: each action applies [`lifecycle`](crate::order::lifecycle) to the order and its
/// pet in one transaction that holds both (so concurrent actions, on any instance, serialise).
#[async_trait]
pub trait OrderRepository {
    /// Places an order for `order.pet_id`: the pet must exist and be available; the order is
    /// created `placed` and the pet becomes `pending`, together. With a completion, its claim is
    /// completed in the same transaction.
    async fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError>;

    /// Applies `action` (approve, deliver or cancel) to order `id`, and to its pet. With an
    /// owner, only that key's order is found (others are `OrderNotFound`).
    async fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError>;

    /// Order `id`; with an owner, only if that key placed it.
    async fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError>;

    /// A page of orders in ascending id order (the query's owner's only, when it names one).
    async fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError>;

    /// How many pets have each status.
    async fn inventory(&self) -> Result<Inventory, StorageError>;
}

/// API keys. Only hashes are stored; the secret is returned once, by `create_key`.
#[async_trait]
pub trait ApiKeyRepository {
    /// Issues a new random key.
    async fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError>;

    /// The non-revoked key whose current secret has this hash, or whose previous secret has it
    /// (after a rotation, whether or not its grace period is over: the caller checks
    /// [`KeyMatch::is_valid_at`], so that a cached answer expires on time too).
    async fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError>;

    /// The key with this id, revoked or not.
    async fn find_key(&self, id: i64) -> Result<Option<ApiKey>, StorageError>;

    /// A page of keys in id order, filtered by plan and by state at the query's `now`.
    async fn list_keys_page(&self, query: &KeyListQuery) -> Result<Page<ApiKey>, StorageError>;

    /// Applies every part of `update` to a key in one step (all or nothing) and returns the
    /// key as it now is; `None` when no key has this id.
    async fn update_key(&self, id: i64, update: &KeyUpdate)
    -> Result<Option<ApiKey>, StorageError>;

    /// Revokes a key; `false` when no key has this id. Revoking twice keeps the first time.
    async fn revoke_key(&self, id: i64) -> Result<bool, StorageError>;

    /// Changes a key's plan and custom limits (validate them with `KeySpec` first); `false`
    /// when no key has this id.
    async fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError>;

    /// Bans a key unless a ban is already in force at `now` (so that instances noticing the same
    /// abuse together impose one ban, not several). Returns whether this call imposed it.
    async fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError>;

    /// Lifts a key's ban and forgets its history; `false` when no key has this id.
    async fn unban_key(&self, id: i64) -> Result<bool, StorageError>;

    /// Gives a non-revoked key a new secret, returned once; the current one keeps working
    /// until `grace_until` (Unix seconds; now or earlier: not at all). The key keeps its id,
    /// and with it its plan, limits, label, scope, expiry, counters and ban. `None` when no
    /// non-revoked key has this id. Rotations of one key at once take effect one after the
    /// other (each returned secret works; the later one is current), and none succeeds on a
    /// key revoked before it.
    async fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError>;

    /// Changes what a key may do; `false` when no key has this id.
    async fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError>;

    /// Records that the key was used at `now` (Unix seconds); never moves the time back.
    async fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError>;
}

/// Admin tokens. Only hashes are stored; the secret is returned once, by `create_admin_token`.
#[async_trait]
pub trait AdminTokenRepository {
    /// Issues a new random token.
    async fn create_admin_token(
        &self,
        spec: &AdminTokenSpec,
    ) -> Result<(AdminToken, AdminTokenSecret), StorageError>;

    /// The non-revoked token whose secret has this hash.
    async fn find_admin_token(&self, hash: &KeyHash) -> Result<Option<AdminToken>, StorageError>;

    /// Every token, revoked ones included, in id order.
    async fn list_admin_tokens(&self) -> Result<Vec<AdminToken>, StorageError>;

    /// Revokes a token; `false` when no token has this id. Revoking twice keeps the first time.
    async fn revoke_admin_token(&self, id: i64) -> Result<bool, StorageError>;
}

/// Idempotency records, shared by every instance. A claim applies the domain's rule
/// ([`decide_claim`](crate::idempotency::decide_claim)) to the record it finds, in one step that
/// only one of any number of concurrent claims can win.
#[async_trait]
pub trait IdempotencyRepository {
    /// Claims `request`'s key, or reports what holds it.
    async fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError>;

    /// Stores the response of a claimed request that wrote nothing (a client error).
    /// Does nothing if the claim was lost.
    async fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError>;

    /// Frees a claimed key without a response (the request failed on the server's side), so
    /// that a retry runs again.
    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError>;

    /// Deletes the records created before `before` (Unix seconds); returns how many.
    async fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError>;
}

/// Webhook endpoints, and the deliveries of the events written with the changes that produce
/// them: a pet created, an order placed or changed records, in the change's own transaction, one
/// delivery per enabled endpoint subscribed to the event (the key's own and the operators'), so
/// that an acknowledged change always has its deliveries and a rolled-back one never does.
/// Deliveries are claimed by one sender at a time (a lease), at least once.
#[async_trait]
pub trait WebhookRepository {
    /// Creates an endpoint with a new random secret, returned once; not when the owner has
    /// [`MAX_ENDPOINTS`](crate::webhook::MAX_ENDPOINTS) already, or one with the same URL.
    /// Creates at once, by any owner (the operators too), never pass either rule together.
    async fn create_webhook_endpoint(
        &self,
        owner: EndpointOwner,
        spec: &EndpointSpec,
    ) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>, StorageError>;

    /// The owner's endpoints, in id order.
    async fn list_webhook_endpoints(
        &self,
        owner: EndpointOwner,
    ) -> Result<Vec<WebhookEndpoint>, StorageError>;

    /// Endpoint `id`, if the owner's.
    async fn find_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<Option<WebhookEndpoint>, StorageError>;

    /// Applies `update` to endpoint `id` (the owner's) and returns it as it now is; not when
    /// it is not the owner's, or a new URL is another of the owner's endpoints'.
    async fn update_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
        update: &EndpointUpdate,
    ) -> Result<EndpointWrite<WebhookEndpoint>, StorageError>;

    /// Deletes endpoint `id` (the owner's) with its deliveries; `false` when there was none.
    async fn delete_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<bool, StorageError>;

    /// Gives endpoint `id` (the owner's) a new secret, returned once; the current one keeps
    /// signing (a second signature) until `grace_until` (Unix seconds).
    async fn rotate_webhook_secret(
        &self,
        id: i64,
        owner: EndpointOwner,
        grace_until: i64,
    ) -> Result<Option<(WebhookEndpoint, SigningSecret)>, StorageError>;

    /// A page of endpoint `id`'s deliveries (the owner's), newest first: `after` is a delivery
    /// id, and the page holds older ones. `None` when the endpoint is not the owner's.
    async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        owner: EndpointOwner,
        page: PageRequest,
    ) -> Result<Option<Page<Delivery>>, StorageError>;

    /// Delivery `delivery` of endpoint `endpoint` (the owner's), with its attempts in order.
    async fn find_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Result<Option<(Delivery, Vec<Attempt>)>, StorageError>;

    /// Sends delivery `delivery` of endpoint `endpoint` (the owner's) again: pending from `now`,
    /// its schedule from the start, whatever its state (the same event id).
    async fn redeliver_webhook(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
        now: i64,
    ) -> Result<Option<Delivery>, StorageError>;

    /// Claims up to `claim.limit` deliveries due at `claim.now` to enabled endpoints, oldest
    /// first, none held by another claim's unexpired lease; each is held until
    /// `claim.lease_until`.
    async fn claim_webhook_deliveries(
        &self,
        claim: &DeliveryClaim,
    ) -> Result<Vec<DueDelivery>, StorageError>;

    /// Records attempts of claimed deliveries and what becomes of each (and of its endpoint),
    /// each as if recorded alone, together where the backend can (a sender records the attempts
    /// that end while it writes in one call): for each, in order, whether it was recorded
    /// (`false`, recording nothing, when its claim no longer holds its delivery). After an error
    /// any of them may have been recorded or not: a delivery whose attempt was not is sent
    /// again once its lease runs out (at least once).
    async fn record_webhook_attempts(
        &self,
        records: &[AttemptRecord],
    ) -> Result<Vec<bool>, StorageError>;

    /// What is waiting to be sent.
    async fn webhook_backlog(&self) -> Result<Backlog, StorageError>;

    /// Deletes the deliveries (and their attempts) that ended (delivered or failed) before
    /// `before` (Unix seconds); returns how many.
    async fn prune_webhook_deliveries(&self, before: i64) -> Result<u64, StorageError>;
}

/// How many calls a backend serves at once, how long a call may wait for its turn, and how long
/// it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Most calls running at once (a pool's connections). At least 1.
    pub max_calls: u32,
    /// Longest a call waits for one of those before it fails as unavailable.
    pub wait: Duration,
    /// Longest a call may run before its caller stops waiting for it (drops its future) and
    /// answers "unavailable": the backend's own timeouts plus a margin, for a backend that stops
    /// answering altogether (a frozen network peer keeps connections open and acknowledges
    /// packets, so neither a statement timeout nor TCP notices). A write given up on may still
    /// complete later, once; never half.
    pub deadline: Duration,
    /// Most of those calls that run at once on the runtime's blocking threads (a synchronous
    /// library's), 0 for a backend that runs none there: a server sizes its blocking pools to
    /// it.
    pub blocking_calls: u32,
}

/// A complete storage backend: every repository, readiness, and its capacity. The HTTP layer
/// holds one as `Arc<dyn Storage>` and knows nothing else of the backend.
#[async_trait]
pub trait Storage:
    PetRepository
    + OrderRepository
    + ApiKeyRepository
    + AdminTokenRepository
    + IdempotencyRepository
    + WebhookRepository
    + Send
    + Sync
    + 'static
{
    /// Ready to serve: reachable, with the schema this version expects.
    async fn check_ready(&self) -> Result<(), StorageError>;

    /// How many calls may run at once; a caller bounds its concurrent calls by this.
    fn capacity(&self) -> Capacity;

    /// The database, as OpenTelemetry's `db.system.name` names it (`sqlite`, `postgresql`,
    /// `mysql`), for the storage calls' spans.
    fn system(&self) -> &'static str;
}
