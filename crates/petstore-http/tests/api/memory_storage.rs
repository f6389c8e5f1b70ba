//! A storage backend written here, outside `petstore-store`, against the domain's interface
//! alone: the proof that the HTTP layer is written against that interface. Every scenario of
//! `api_tests!` runs on it too (`memory`), through the same `AppState::new` and `app()` as
//! production, so a handler or middleware that reached for the Diesel store would fail here.
//!
//! It keeps everything in a `Mutex`, with the semantics the traits document (ids from 1, pages
//! in id order, one ban at a time); nothing in it is durable.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use petstore_domain::webhook::{
    Attempt, AttemptRecord, AttemptResult, Backlog, Delivery, DeliveryClaim, DeliveryState,
    DueDelivery, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointWrite, MAX_ENDPOINTS,
    NewEvent, SigningSecret, WebhookEndpoint, same_receiver, take_in_turn,
};
use petstore_domain::{
    AdminToken, AdminTokenRepository, AdminTokenSecret, AdminTokenSpec, ApiKey, ApiKeyRepository,
    ApiKeySecret, Ban, Capacity, ClaimDecision, ClaimOutcome, CreatePet, IdempotencyClaim,
    IdempotencyRecord, IdempotencyRepository, IdempotentRequest, Inventory, KeyHash, KeyListQuery,
    KeyMatch, KeySpec, KeyUpdate, Order, OrderAction, OrderError, OrderListQuery, OrderRepository,
    Page, PageRequest, Pet, PetListQuery, PetRepository, PetStatus, PlaceOrder, Plan, RateLimits,
    RecordState, Scope, Storage, StorageError, StorageErrorKind, StoredResponse, WebhookRepository,
    async_trait, decide_claim, lifecycle,
};

#[derive(Default)]
pub struct MemoryStorage {
    data: Mutex<Data>,
    seed: RandomState,
    /// While set, creating a pet fails as unavailable (a database gone away).
    failing_creates: AtomicBool,
    /// What `capacity` reports, when not the default (8 calls, 5 s of wait).
    capacity: Option<(u32, Duration)>,
    /// How many times a key has been looked up.
    key_lookups: std::sync::atomic::AtomicU64,
    /// How many times readiness has been checked.
    ready_checks: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Data {
    pets: BTreeMap<i64, Pet>,
    orders: BTreeMap<i64, Order>,
    keys: BTreeMap<i64, StoredKey>,
    idempotency: BTreeMap<(i64, String), Record>,
    tokens: i64,
    admin_tokens: BTreeMap<i64, (KeyHash, AdminToken)>,
    webhook_endpoints: BTreeMap<i64, StoredEndpoint>,
    deliveries: BTreeMap<i64, StoredDelivery>,
    /// The last endpoint and delivery ids given (never reused, as `AUTOINCREMENT`).
    endpoint_ids: i64,
    delivery_ids: i64,
}

struct StoredKey {
    hash: KeyHash,
    previous: Option<KeyHash>,
    key: ApiKey,
}

/// An idempotency record, and the token of the claim that holds it.
struct Record {
    held: IdempotencyRecord,
    token: i64,
}

/// A webhook endpoint (its `previous_secret_expires_at` unused: see [`Self::view`]), its
/// secrets, and when a delivery to it last succeeded.
struct StoredEndpoint {
    endpoint: WebhookEndpoint,
    secret: SigningSecret,
    /// The secret rotated out last, and until when it signs too.
    previous: Option<(SigningSecret, i64)>,
    last_success_at: Option<i64>,
}

impl StoredEndpoint {
    /// The endpoint as the API shows it: the previous secret's expiry while it is ahead.
    fn view(&self) -> WebhookEndpoint {
        WebhookEndpoint {
            previous_secret_expires_at: self
                .previous
                .as_ref()
                .map(|(_, until)| *until)
                .filter(|until| *until > now()),
            ..self.endpoint.clone()
        }
    }

    /// The secrets that sign at `now`: the current one, and the previous while its grace lasts.
    fn secrets(&self, now: i64) -> Vec<SigningSecret> {
        let previous = self.previous.as_ref().filter(|(_, until)| *until > now);
        std::iter::once(&self.secret)
            .chain(previous.map(|(secret, _)| secret))
            .cloned()
            .collect()
    }
}

/// A delivery (its `next_attempt_at` set exactly while it is pending), with what the API does
/// not show: its place in the schedule, its lease, when it ended, and its attempts (deleted
/// with it).
struct StoredDelivery {
    delivery: Delivery,
    tries: u32,
    lease: i64,
    lease_until: i64,
    ended_at: Option<i64>,
    attempts: Vec<Attempt>,
}

/// The most attempts a delivery's record shows (the latest), as the SQL store.
const MAX_ATTEMPTS_SHOWN: usize = 100;

impl MemoryStorage {
    fn data(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A storage that lets `max_calls` calls run at once, each waiting `wait` for its turn.
    pub fn with_capacity(max_calls: u32, wait: Duration) -> Self {
        Self {
            capacity: Some((max_calls, wait)),
            ..Self::default()
        }
    }

    /// 32 bytes from a hasher keyed at random per storage: unique per `what`, unguessable
    /// enough for a test backend.
    fn random_bytes(&self, what: (&str, i64)) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&self.seed.hash_one((what, i)).to_le_bytes());
        }
        bytes
    }

    /// [`Self::random_bytes`] never given before: the counter makes each input unique.
    fn fresh_bytes(&self, data: &mut Data, what: &str) -> [u8; 32] {
        data.tokens += 1;
        self.random_bytes((what, data.tokens))
    }

    /// Records `event` as the SQL outbox does: one pending delivery for each enabled endpoint
    /// subscribed to its type that is its key's or the operators', all with one new event id.
    fn record_event(&self, data: &mut Data, event: &NewEvent) {
        let bytes = self.fresh_bytes(data, "event");
        let mut event_id = String::from("msg_");
        for byte in &bytes[..16] {
            event_id.push_str(&format!("{byte:02x}"));
        }
        let now = now();
        let endpoints: Vec<i64> = data
            .webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .filter(|endpoint| data.sendable(endpoint, now) && endpoint.events.contains(event.kind))
            .filter(|endpoint| {
                endpoint
                    .owner
                    .key()
                    .is_none_or(|key| event.owner == Some(key))
            })
            .map(|endpoint| endpoint.id)
            .collect();
        for endpoint_id in endpoints {
            data.delivery_ids += 1;
            let id = data.delivery_ids;
            let delivery = Delivery {
                id,
                event_id: event_id.clone(),
                event_type: event.kind,
                endpoint_id,
                state: DeliveryState::Pending,
                attempts: 0,
                next_attempt_at: Some(now),
                last_status: None,
                last_latency_ms: None,
                last_error: None,
                created_at: now,
                body: event.body.clone(),
            };
            data.deliveries.insert(
                id,
                StoredDelivery {
                    delivery,
                    tries: 0,
                    lease: 0,
                    lease_until: 0,
                    ended_at: None,
                    attempts: Vec::new(),
                },
            );
        }
    }

    /// How many times a key has been looked up (`find_active_key`) so far.
    pub fn key_lookups(&self) -> u64 {
        self.key_lookups.load(Ordering::SeqCst)
    }

    /// How many times readiness has been checked (`check_ready`) so far.
    pub fn ready_checks(&self) -> u64 {
        self.ready_checks.load(Ordering::SeqCst)
    }

    /// Makes pet creation fail as unavailable, or work again.
    pub fn fail_creates(&self, fail: bool) {
        self.failing_creates.store(fail, Ordering::SeqCst);
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn next_id<T>(map: &BTreeMap<i64, T>) -> i64 {
    map.keys().next_back().map_or(1, |last| last + 1)
}

#[async_trait]
impl PetRepository for MemoryStorage {
    async fn create_pet(&self, create: &CreatePet) -> Result<Pet, StorageError> {
        if self.failing_creates.load(Ordering::SeqCst) {
            return Err(StorageError::new(
                StorageErrorKind::Unavailable,
                "creates are failing (test switch)",
            ));
        }
        let mut data = self.data();
        let id = next_id(&data.pets);
        let draft = &create.draft;
        let pet = Pet {
            id,
            name: draft.name().to_owned(),
            category_id: draft.category_id(),
            status: draft.status(),
        };
        // Both or neither, under the one lock.
        if let Some(completion) = &create.completion
            && !complete(
                &mut data,
                &completion.claim,
                StoredResponse::created(&pet, &completion.base),
            )
        {
            return Err(StorageError::new(
                StorageErrorKind::Unavailable,
                "the idempotency claim was taken over",
            ));
        }
        data.pets.insert(id, pet.clone());
        let event = NewEvent::pet_created(SystemTime::now(), &pet, create.creator);
        self.record_event(&mut data, &event);
        Ok(pet)
    }

    async fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError> {
        Ok(self.data().pets.get(&id).cloned())
    }

    async fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError> {
        let data = self.data();
        let after = query.page.after.unwrap_or(i64::MIN);
        let rows: Vec<Pet> = data
            .pets
            .range(after.saturating_add(1)..)
            .map(|(_, pet)| pet)
            .filter(|pet| query.status.is_none_or(|status| pet.status == status))
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(rows, query.page.limit, |pet| pet.id))
    }
}

#[async_trait]
impl OrderRepository for MemoryStorage {
    async fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError> {
        // One lock for the pet, the order and the idempotency record: the transaction.
        let mut data = self.data();
        let pet = data
            .pets
            .get(&order.pet_id)
            .map(|pet| pet.status)
            .ok_or(OrderError::PetNotFound(order.pet_id))?;
        let (status, pet_after) = lifecycle(None, pet, OrderAction::Place)?;
        let id = next_id(&data.orders);
        let placed = Order {
            id,
            pet_id: order.pet_id,
            quantity: 1,
            status,
            created_at: now(),
            owner: order.owner,
        };
        if let Some(completion) = &order.completion
            && !complete(
                &mut data,
                &completion.claim,
                StoredResponse::created(&placed, &completion.base),
            )
        {
            return Err(OrderError::Storage(StorageError::new(
                StorageErrorKind::Unavailable,
                "the idempotency claim was taken over",
            )));
        }
        if let Some(pet) = data.pets.get_mut(&order.pet_id) {
            pet.status = pet_after;
        }
        data.orders.insert(id, placed.clone());
        let event = NewEvent::order_changed(SystemTime::now(), OrderAction::Place, &placed);
        self.record_event(&mut data, &event);
        Ok(placed)
    }

    async fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError> {
        let mut data = self.data();
        let order = data
            .orders
            .get(&id)
            .filter(|order| owner.is_none() || order.owner == owner)
            .cloned()
            .ok_or(OrderError::OrderNotFound(id))?;
        let pet = data
            .pets
            .get(&order.pet_id)
            .map(|pet| pet.status)
            .ok_or_else(|| {
                OrderError::Storage(StorageError::new(StorageErrorKind::Failed, "no such pet"))
            })?;
        let (status, pet_after) = lifecycle(Some(order.status), pet, action)?;
        if let Some(pet) = data.pets.get_mut(&order.pet_id) {
            pet.status = pet_after;
        }
        let changed = Order { status, ..order };
        data.orders.insert(id, changed.clone());
        self.record_event(
            &mut data,
            &NewEvent::order_changed(SystemTime::now(), action, &changed),
        );
        Ok(changed)
    }

    async fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError> {
        Ok(self
            .data()
            .orders
            .get(&id)
            .filter(|order| owner.is_none() || order.owner == owner)
            .cloned())
    }

    async fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        let data = self.data();
        let after = query.page.after.unwrap_or(i64::MIN);
        let rows: Vec<Order> = data
            .orders
            .range(after.saturating_add(1)..)
            .map(|(_, order)| order)
            .filter(|order| query.owner.is_none() || order.owner == query.owner)
            .filter(|order| query.status.is_none_or(|status| order.status == status))
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(rows, query.page.limit, |order| {
            order.id
        }))
    }

    async fn inventory(&self) -> Result<Inventory, StorageError> {
        let mut inventory = Inventory::default();
        for pet in self.data().pets.values() {
            match pet.status {
                PetStatus::Available => inventory.available += 1,
                PetStatus::Pending => inventory.pending += 1,
                PetStatus::Sold => inventory.sold += 1,
            }
        }
        Ok(inventory)
    }
}

#[async_trait]
impl ApiKeyRepository for MemoryStorage {
    async fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError> {
        let mut data = self.data();
        let id = next_id(&data.keys);
        let secret = ApiKeySecret::from_random_bytes(self.random_bytes(("key", id)));
        let key = ApiKey {
            id,
            display_prefix: secret.display_prefix().to_owned(),
            plan: spec.plan(),
            label: spec.label().to_owned(),
            custom_limits: spec.custom_limits(),
            created_at: now(),
            revoked_at: None,
            ban: None,
            scope: spec.scope(),
            expires_at: spec.expires_at(),
            last_used_at: None,
            previous_secret_until: None,
        };
        data.keys.insert(
            id,
            StoredKey {
                hash: secret.hash(),
                previous: None,
                key: key.clone(),
            },
        );
        Ok((key, secret))
    }

    async fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError> {
        self.key_lookups.fetch_add(1, Ordering::SeqCst);
        let data = self.data();
        let found = data.keys.values().find(|stored| {
            stored.key.revoked_at.is_none()
                && (stored.hash == *hash || stored.previous.as_ref() == Some(hash))
        });
        Ok(found.map(|stored| {
            if stored.hash == *hash {
                KeyMatch::current(stored.key.clone())
            } else {
                let until = stored.key.previous_secret_until.unwrap_or(0);
                KeyMatch::previous(stored.key.clone(), until)
            }
        }))
    }

    async fn find_key(&self, id: i64) -> Result<Option<ApiKey>, StorageError> {
        Ok(self.data().keys.get(&id).map(|stored| stored.key.clone()))
    }

    async fn list_keys_page(&self, query: &KeyListQuery) -> Result<Page<ApiKey>, StorageError> {
        let data = self.data();
        let keys = data
            .keys
            .range(query.page.after.unwrap_or(0).saturating_add(1)..)
            .map(|(_, stored)| &stored.key)
            .filter(|key| query.plan.is_none_or(|plan| key.plan == plan))
            .filter(|key| {
                query
                    .state
                    .is_none_or(|state| key.state(query.now) == state)
            })
            .take(query.page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Page::from_overfetch(keys, query.page.limit, |key| key.id))
    }

    async fn update_key(
        &self,
        id: i64,
        update: &KeyUpdate,
    ) -> Result<Option<ApiKey>, StorageError> {
        let mut data = self.data();
        let Some(stored) = data.keys.get_mut(&id) else {
            return Ok(None);
        };
        let key = &mut stored.key;
        if let Some((plan, limits)) = update.plan {
            key.plan = plan;
            key.custom_limits = limits;
        }
        if let Some(scope) = update.scope {
            key.scope = scope;
        }
        if let Some(label) = &update.label {
            key.label = label.clone();
        }
        Ok(Some(key.clone()))
    }

    async fn revoke_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.revoked_at.get_or_insert_with(now);
        }))
    }

    async fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| {
            key.plan = plan;
            key.custom_limits = custom_limits;
        }))
    }

    async fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError> {
        let mut imposed = false;
        self.with_key(id, |key| {
            if key.ban_at(now).is_none() {
                key.ban = Some(ban);
                imposed = true;
            }
        });
        Ok(imposed)
    }

    async fn unban_key(&self, id: i64) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| key.ban = None))
    }

    async fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError> {
        let mut data = self.data();
        // A fresh secret per rotation: the counter makes each input unique.
        data.tokens += 1;
        let rotation = data.tokens;
        let mut bytes = [0u8; 32];
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(
                &self
                    .seed
                    .hash_one((id, i, "rotated", rotation))
                    .to_le_bytes(),
            );
        }
        let secret = ApiKeySecret::from_random_bytes(bytes);
        let Some(stored) = data
            .keys
            .get_mut(&id)
            .filter(|stored| stored.key.revoked_at.is_none())
        else {
            return Ok(None);
        };
        stored.previous = Some(std::mem::replace(&mut stored.hash, secret.hash()));
        stored.key.previous_secret_until = Some(grace_until);
        stored.key.display_prefix = secret.display_prefix().to_owned();
        Ok(Some((stored.key.clone(), secret)))
    }

    async fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError> {
        Ok(self.with_key(id, |key| key.scope = scope))
    }

    async fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError> {
        self.with_key(id, |key| {
            key.last_used_at = Some(key.last_used_at.map_or(now, |last| last.max(now)));
        });
        Ok(())
    }
}

/// Completes `claim` with `response`; `false` when the claim is no longer held.
fn complete(data: &mut Data, claim: &IdempotencyClaim, response: StoredResponse) -> bool {
    match data
        .idempotency
        .get_mut(&(claim.owner, claim.key.as_str().to_owned()))
    {
        Some(record)
            if record.token == claim.token
                && matches!(record.held.state, RecordState::InFlight { .. }) =>
        {
            record.held.state = RecordState::Completed(response);
            true
        }
        _ => false,
    }
}

#[async_trait]
impl AdminTokenRepository for MemoryStorage {
    async fn create_admin_token(
        &self,
        spec: &AdminTokenSpec,
    ) -> Result<(AdminToken, AdminTokenSecret), StorageError> {
        let mut data = self.data();
        let id = next_id(&data.admin_tokens);
        let secret = AdminTokenSecret::from_random_bytes(self.random_bytes(("token", id)));
        let token = AdminToken {
            id,
            label: spec.label().to_owned(),
            display_prefix: secret.display_prefix().to_owned(),
            created_at: now(),
            revoked_at: None,
        };
        data.admin_tokens.insert(id, (secret.hash(), token.clone()));
        Ok((token, secret))
    }

    async fn find_admin_token(&self, hash: &KeyHash) -> Result<Option<AdminToken>, StorageError> {
        Ok(self
            .data()
            .admin_tokens
            .values()
            .find(|(stored, token)| stored == hash && token.revoked_at.is_none())
            .map(|(_, token)| token.clone()))
    }

    async fn list_admin_tokens(&self) -> Result<Vec<AdminToken>, StorageError> {
        Ok(self
            .data()
            .admin_tokens
            .values()
            .map(|(_, token)| token.clone())
            .collect())
    }

    async fn revoke_admin_token(&self, id: i64) -> Result<bool, StorageError> {
        let mut data = self.data();
        let Some((_, token)) = data.admin_tokens.get_mut(&id) else {
            return Ok(false);
        };
        token.revoked_at.get_or_insert_with(now);
        Ok(true)
    }
}

#[async_trait]
impl IdempotencyRepository for MemoryStorage {
    async fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError> {
        let mut data = self.data();
        let slot = (request.owner, request.key.as_str().to_owned());
        // The domain's rule, under the one lock: the claim and the write are one step.
        let held = data.idempotency.get(&slot).map(|record| &record.held);
        Ok(match decide_claim(held, request) {
            ClaimDecision::Claim { created_at } => {
                data.tokens += 1;
                let token = data.tokens;
                let held = IdempotencyRecord {
                    fingerprint: request.fingerprint.clone(),
                    created_at,
                    state: RecordState::InFlight {
                        claimed_at: request.now as i64,
                    },
                };
                data.idempotency.insert(slot, Record { held, token });
                ClaimOutcome::Claimed(IdempotencyClaim {
                    owner: request.owner,
                    key: request.key.clone(),
                    token,
                })
            }
            ClaimDecision::Replay(response) => ClaimOutcome::Completed(response),
            ClaimDecision::InFlight => ClaimOutcome::InFlight,
            ClaimDecision::Mismatch => ClaimOutcome::Mismatch,
        })
    }

    async fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError> {
        complete(&mut self.data(), claim, response.clone());
        Ok(())
    }

    async fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError> {
        let mut data = self.data();
        let slot = (claim.owner, claim.key.as_str().to_owned());
        if data.idempotency.get(&slot).is_some_and(|record| {
            record.token == claim.token && matches!(record.held.state, RecordState::InFlight { .. })
        }) {
            data.idempotency.remove(&slot);
        }
        Ok(())
    }

    async fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError> {
        let mut data = self.data();
        let count = data.idempotency.len();
        data.idempotency
            .retain(|_, record| record.held.created_at >= before as i64);
        Ok((count - data.idempotency.len()) as u64)
    }
}

impl MemoryStorage {
    /// Applies `change` to key `id`; `false` when there is none.
    fn with_key(&self, id: i64, change: impl FnOnce(&mut ApiKey)) -> bool {
        match self.data().keys.get_mut(&id) {
            Some(stored) => {
                change(&mut stored.key);
                true
            }
            None => false,
        }
    }
}

impl Data {
    /// Whether `endpoint` may be sent to at `now`: on, and the operators' or its key's while the
    /// key works (neither revoked nor expired).
    fn sendable(&self, endpoint: &WebhookEndpoint, now: i64) -> bool {
        endpoint.enabled
            && endpoint.owner.key().is_none_or(|key| {
                self.keys.get(&key).is_some_and(|stored| {
                    stored.key.revoked_at.is_none()
                        && stored.key.expires_at.is_none_or(|at| at > now)
                })
            })
    }

    /// Another of `owner`'s endpoints (not `except`) at `url`.
    fn endpoint_at(&self, owner: EndpointOwner, url: &str, except: i64) -> Option<i64> {
        self.webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .find(|endpoint| {
                endpoint.owner == owner
                    && endpoint.id != except
                    && same_receiver(&endpoint.url, url)
            })
            .map(|endpoint| endpoint.id)
    }

    /// Endpoint `id`, if `owner`'s.
    fn endpoint(&self, id: i64, owner: EndpointOwner) -> Option<&StoredEndpoint> {
        self.webhook_endpoints
            .get(&id)
            .filter(|stored| stored.endpoint.owner == owner)
    }

    fn endpoint_mut(&mut self, id: i64, owner: EndpointOwner) -> Option<&mut StoredEndpoint> {
        self.webhook_endpoints
            .get_mut(&id)
            .filter(|stored| stored.endpoint.owner == owner)
    }

    /// Delivery `delivery` of endpoint `endpoint`, if the endpoint is `owner`'s.
    fn delivery_mut(
        &mut self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Option<&mut StoredDelivery> {
        let owned = self.endpoint(endpoint, owner).is_some();
        self.deliveries
            .get_mut(&delivery)
            .filter(|stored| owned && stored.delivery.endpoint_id == endpoint)
    }

    /// Ends endpoint `id`'s pending deliveries as failed, with `why`.
    fn fail_pending(&mut self, id: i64, why: &str) {
        let now = now();
        for stored in self.deliveries.values_mut().filter(|stored| {
            stored.delivery.endpoint_id == id && stored.delivery.state == DeliveryState::Pending
        }) {
            stored.delivery.state = DeliveryState::Failed;
            stored.delivery.next_attempt_at = None;
            stored.delivery.last_error = Some(why.to_owned());
            stored.lease_until = 0;
            stored.ended_at = Some(now);
        }
    }

    /// Turns endpoint `id` off, with `why`, and fails its pending deliveries.
    fn disable(&mut self, id: i64, why: &str) {
        if let Some(stored) = self.webhook_endpoints.get_mut(&id) {
            stored.endpoint.enabled = false;
            stored.endpoint.disabled_reason = Some(why.to_owned());
        }
        self.fail_pending(id, &format!("the endpoint was turned off: {why}"));
    }
}

#[async_trait]
impl WebhookRepository for MemoryStorage {
    async fn create_webhook_endpoint(
        &self,
        owner: EndpointOwner,
        spec: &EndpointSpec,
    ) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let mut data = self.data();
        let existing = data
            .webhook_endpoints
            .values()
            .filter(|stored| stored.endpoint.owner == owner)
            .count();
        if existing >= MAX_ENDPOINTS {
            return Ok(EndpointWrite::LimitReached);
        }
        if let Some(taken) = data.endpoint_at(owner, spec.url.as_str(), 0) {
            return Ok(EndpointWrite::UrlTaken(taken));
        }
        let secret = SigningSecret::from_random_bytes(self.fresh_bytes(&mut data, "webhook"));
        data.endpoint_ids += 1;
        let id = data.endpoint_ids;
        let endpoint = WebhookEndpoint {
            id,
            url: spec.url.as_str().to_owned(),
            events: spec.events,
            description: spec.description.clone(),
            enabled: true,
            disabled_reason: None,
            previous_secret_expires_at: None,
            created_at: now(),
            owner,
        };
        let stored = StoredEndpoint {
            endpoint: endpoint.clone(),
            secret: secret.clone(),
            previous: None,
            last_success_at: None,
        };
        data.webhook_endpoints.insert(id, stored);
        Ok(EndpointWrite::Done((endpoint, secret)))
    }

    async fn list_webhook_endpoints(
        &self,
        owner: EndpointOwner,
    ) -> Result<Vec<WebhookEndpoint>, StorageError> {
        Ok(self
            .data()
            .webhook_endpoints
            .values()
            .filter(|stored| stored.endpoint.owner == owner)
            .map(StoredEndpoint::view)
            .collect())
    }

    async fn find_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<Option<WebhookEndpoint>, StorageError> {
        Ok(self.data().endpoint(id, owner).map(StoredEndpoint::view))
    }

    async fn update_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
        update: &EndpointUpdate,
    ) -> Result<EndpointWrite<WebhookEndpoint>, StorageError> {
        let mut data = self.data();
        if data.endpoint(id, owner).is_none() {
            return Ok(EndpointWrite::NotFound);
        }
        if let Some(url) = &update.url
            && let Some(taken) = data.endpoint_at(owner, url.as_str(), id)
        {
            return Ok(EndpointWrite::UrlTaken(taken));
        }
        let Some(stored) = data.endpoint_mut(id, owner) else {
            return Ok(EndpointWrite::NotFound);
        };
        let endpoint = &mut stored.endpoint;
        if let Some(url) = &update.url {
            endpoint.url = url.as_str().to_owned();
        }
        if let Some(events) = update.events {
            endpoint.events = events;
        }
        if let Some(description) = &update.description {
            endpoint.description.clone_from(description);
        }
        let turned_off = match update.enabled {
            Some(true) if !endpoint.enabled => {
                endpoint.enabled = true;
                endpoint.disabled_reason = None;
                false
            }
            Some(false) if endpoint.enabled => {
                endpoint.enabled = false;
                endpoint.disabled_reason = Some("turned off by its owner".to_owned());
                true
            }
            _ => false,
        };
        let updated = stored.view();
        if turned_off {
            data.fail_pending(id, "the endpoint was turned off");
        }
        Ok(EndpointWrite::Done(updated))
    }

    async fn delete_webhook_endpoint(
        &self,
        id: i64,
        owner: EndpointOwner,
    ) -> Result<bool, StorageError> {
        let mut data = self.data();
        if data.endpoint(id, owner).is_none() {
            return Ok(false);
        }
        data.webhook_endpoints.remove(&id);
        data.deliveries
            .retain(|_, stored| stored.delivery.endpoint_id != id);
        Ok(true)
    }

    async fn rotate_webhook_secret(
        &self,
        id: i64,
        owner: EndpointOwner,
        grace_until: i64,
    ) -> Result<Option<(WebhookEndpoint, SigningSecret)>, StorageError> {
        let mut data = self.data();
        let secret = SigningSecret::from_random_bytes(self.fresh_bytes(&mut data, "webhook"));
        let Some(stored) = data.endpoint_mut(id, owner) else {
            return Ok(None);
        };
        let previous = std::mem::replace(&mut stored.secret, secret.clone());
        stored.previous = Some((previous, grace_until));
        Ok(Some((stored.view(), secret)))
    }

    async fn list_webhook_deliveries(
        &self,
        endpoint: i64,
        owner: EndpointOwner,
        page: PageRequest,
    ) -> Result<Option<Page<Delivery>>, StorageError> {
        let data = self.data();
        if data.endpoint(endpoint, owner).is_none() {
            return Ok(None);
        }
        // Newest first: `after` is the oldest id of the page before.
        let rows: Vec<Delivery> = data
            .deliveries
            .range(..page.after.unwrap_or(i64::MAX))
            .rev()
            .map(|(_, stored)| &stored.delivery)
            .filter(|delivery| delivery.endpoint_id == endpoint)
            .take(page.limit.get() as usize + 1)
            .cloned()
            .collect();
        Ok(Some(Page::from_overfetch(rows, page.limit, |delivery| {
            delivery.id
        })))
    }

    async fn find_webhook_delivery(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
    ) -> Result<Option<(Delivery, Vec<Attempt>)>, StorageError> {
        let data = self.data();
        if data.endpoint(endpoint, owner).is_none() {
            return Ok(None);
        }
        Ok(data
            .deliveries
            .get(&delivery)
            .filter(|stored| stored.delivery.endpoint_id == endpoint)
            .map(|stored| {
                let shown = stored.attempts.len().saturating_sub(MAX_ATTEMPTS_SHOWN);
                (stored.delivery.clone(), stored.attempts[shown..].to_vec())
            }))
    }

    async fn redeliver_webhook(
        &self,
        endpoint: i64,
        delivery: i64,
        owner: EndpointOwner,
        now: i64,
    ) -> Result<Option<Delivery>, StorageError> {
        let mut data = self.data();
        let Some(stored) = data.delivery_mut(endpoint, delivery, owner) else {
            return Ok(None);
        };
        stored.delivery.state = DeliveryState::Pending;
        stored.delivery.next_attempt_at = Some(now);
        stored.tries = 0;
        stored.lease = 0;
        stored.lease_until = 0;
        stored.ended_at = None;
        Ok(Some(stored.delivery.clone()))
    }

    async fn claim_webhook_deliveries(
        &self,
        claim: &DeliveryClaim,
    ) -> Result<Vec<DueDelivery>, StorageError> {
        let mut data = self.data();
        let sendable: HashMap<i64, EndpointOwner> = data
            .webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .filter(|endpoint| data.sendable(endpoint, claim.now))
            .filter(|endpoint| claim.room(endpoint.owner) > 0)
            .map(|endpoint| (endpoint.id, endpoint.owner))
            .collect();
        // Due, oldest first (ties in id order), then owners in turn as the rule says.
        let mut candidates: Vec<(Option<i64>, i64, EndpointOwner)> = data
            .deliveries
            .values()
            .filter(|stored| {
                stored.delivery.state == DeliveryState::Pending
                    && stored
                        .delivery
                        .next_attempt_at
                        .is_some_and(|at| at <= claim.now)
                    && stored.lease_until <= claim.now
                    && !claim.skip_endpoints.contains(&stored.delivery.endpoint_id)
            })
            .filter_map(|stored| {
                let owner = sendable.get(&stored.delivery.endpoint_id)?;
                Some((stored.delivery.next_attempt_at, stored.delivery.id, *owner))
            })
            .collect();
        candidates.sort_by_key(|(at, id, _)| (*at, *id));
        let candidates: Vec<(i64, EndpointOwner)> = candidates
            .into_iter()
            .map(|(_, id, owner)| (id, owner))
            .collect();
        let mut taken = take_in_turn(&candidates, claim);
        taken.sort_by_key(|id| {
            let at = data
                .deliveries
                .get(id)
                .and_then(|stored| stored.delivery.next_attempt_at);
            (at, *id)
        });
        let Data {
            webhook_endpoints,
            deliveries,
            ..
        } = &mut *data;
        Ok(taken
            .into_iter()
            .filter_map(|id| {
                let stored = deliveries.get_mut(&id)?;
                let endpoint = webhook_endpoints.get(&stored.delivery.endpoint_id)?;
                stored.lease = claim.token;
                stored.lease_until = claim.lease_until;
                let delivery = &stored.delivery;
                Some(DueDelivery {
                    id: delivery.id,
                    event_id: delivery.event_id.clone(),
                    event_type: delivery.event_type,
                    body: delivery.body.clone(),
                    endpoint_id: delivery.endpoint_id,
                    owner: endpoint.endpoint.owner,
                    url: endpoint.endpoint.url.clone(),
                    secrets: endpoint.secrets(claim.now),
                    tries: stored.tries,
                    lease: claim.token,
                    // This storage keeps no trace context (the store's outbox does).
                    trace: None,
                })
            })
            .collect())
    }

    async fn record_webhook_attempt(&self, record: &AttemptRecord) -> Result<bool, StorageError> {
        let mut data = self.data();
        let Some(stored) = data
            .deliveries
            .get_mut(&record.delivery)
            .filter(|stored| stored.lease != 0 && stored.lease == record.lease)
        else {
            return Ok(false);
        };
        let attempt = Attempt {
            attempted_at: record.attempted_at,
            status: record.status,
            latency_ms: record.latency_ms,
            error: record.error.clone(),
        };
        if stored.delivery.state != DeliveryState::Pending {
            // Ended while the attempt was under way (its endpoint turned off): the attempt is
            // recorded, the delivery stays as it ended.
            stored.delivery.attempts += 1;
            stored.delivery.last_status = record.status;
            stored.delivery.last_latency_ms = Some(record.latency_ms);
            stored.lease = 0;
            stored.attempts.push(attempt);
            return Ok(true);
        }
        let (state, next_attempt_at, ended_at) = match record.result {
            AttemptResult::Delivered => (DeliveryState::Delivered, None, Some(record.attempted_at)),
            AttemptResult::RetryAt(at) => (DeliveryState::Pending, Some(at), None),
            AttemptResult::GaveUp | AttemptResult::Gone => {
                (DeliveryState::Failed, None, Some(record.attempted_at))
            }
        };
        let delivery = &mut stored.delivery;
        delivery.state = state;
        delivery.attempts += 1;
        delivery.next_attempt_at = next_attempt_at;
        delivery.last_status = record.status;
        delivery.last_latency_ms = Some(record.latency_ms);
        delivery.last_error.clone_from(&record.error);
        let (endpoint, created_at) = (delivery.endpoint_id, delivery.created_at);
        stored.tries += 1;
        stored.lease = 0;
        stored.lease_until = 0;
        stored.ended_at = ended_at;
        stored.attempts.push(attempt);
        match record.result {
            AttemptResult::Delivered => {
                if let Some(stored) = data.webhook_endpoints.get_mut(&endpoint) {
                    stored.last_success_at = Some(record.attempted_at);
                }
            }
            AttemptResult::Gone => data.disable(endpoint, "it answered 410 Gone"),
            AttemptResult::GaveUp => {
                // Failing throughout: nothing delivered to it since this delivery's event.
                let failing = data
                    .webhook_endpoints
                    .get(&endpoint)
                    .is_some_and(|stored| stored.last_success_at.is_none_or(|at| at < created_at));
                if failing {
                    let last = match (&record.error, record.status) {
                        (Some(error), _) => error.clone(),
                        (None, Some(status)) => format!("HTTP {status}"),
                        (None, None) => "no answer".to_owned(),
                    };
                    let why = format!(
                        "every delivery failed for the whole retry schedule (the last: {last})"
                    );
                    data.disable(endpoint, &why);
                }
            }
            AttemptResult::RetryAt(_) => {}
        }
        Ok(true)
    }

    async fn webhook_backlog(&self) -> Result<Backlog, StorageError> {
        let data = self.data();
        let now = now();
        let pending: Vec<i64> = data
            .deliveries
            .values()
            .map(|stored| &stored.delivery)
            .filter(|delivery| delivery.state == DeliveryState::Pending)
            .filter(|delivery| {
                data.webhook_endpoints
                    .get(&delivery.endpoint_id)
                    .is_some_and(|stored| data.sendable(&stored.endpoint, now))
            })
            .map(|delivery| delivery.created_at)
            .collect();
        Ok(Backlog {
            pending: pending.len() as u64,
            oldest_created_at: pending.iter().min().copied(),
        })
    }

    async fn prune_webhook_deliveries(&self, before: i64) -> Result<u64, StorageError> {
        let mut data = self.data();
        // A revoked or expired key's pending deliveries end, failed: they are never sent.
        let now = now();
        let stranded: Vec<i64> = data
            .webhook_endpoints
            .values()
            .map(|stored| &stored.endpoint)
            .filter(|endpoint| endpoint.owner.key().is_some())
            .filter(|endpoint| {
                let enabled = WebhookEndpoint {
                    enabled: true,
                    ..(*endpoint).clone()
                };
                !data.sendable(&enabled, now)
            })
            .map(|endpoint| endpoint.id)
            .collect();
        let mut ended = 0;
        for stored in data.deliveries.values_mut().filter(|stored| {
            stranded.contains(&stored.delivery.endpoint_id)
                && stored.delivery.state == DeliveryState::Pending
        }) {
            stored.delivery.state = DeliveryState::Failed;
            stored.delivery.next_attempt_at = None;
            stored.delivery.last_error = Some(
                "not sent: the API key that owns the endpoint was revoked or has expired"
                    .to_owned(),
            );
            stored.lease_until = 0;
            stored.ended_at = Some(now);
            ended += 1;
        }
        let count = data.deliveries.len();
        data.deliveries
            .retain(|_, stored| stored.ended_at.is_none_or(|at| at >= before));
        Ok(ended + (count - data.deliveries.len()) as u64)
    }
}

#[async_trait]
impl Storage for MemoryStorage {
    async fn check_ready(&self) -> Result<(), StorageError> {
        self.ready_checks.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn capacity(&self) -> Capacity {
        let (max_calls, wait) = self.capacity.unwrap_or((8, Duration::from_secs(5)));
        Capacity {
            max_calls,
            wait,
            deadline: Duration::from_secs(5),
            blocking_calls: 0,
        }
    }

    fn system(&self) -> &'static str {
        "other_sql"
    }
}

/// The storage scenarios every backend must pass (`petstore-conformance`), on this one.
mod conformance {
    use std::sync::Arc;

    use petstore_conformance::{Fresh, conformance_tests};

    async fn fresh() -> Option<Fresh> {
        Some(Fresh::new(Arc::new(super::MemoryStorage::default())))
    }

    conformance_tests!(fresh);
}
