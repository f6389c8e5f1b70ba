//! A storage backend written here, outside `petstore-store`, against the domain's interface
//! alone: the proof that the HTTP layer is written against that interface. Every scenario of
//! `api_tests!` runs on it too (`memory`), through the same `AppState::new` and `app()` as
//! production, so a handler or middleware that reached for the Diesel store would fail here.
//!
//! It keeps everything in a `Mutex`, with the semantics the traits document (ids from 1, pages
//! in id order, one ban at a time); nothing in it is durable.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use petstore_domain::{
    AdminToken, AdminTokenRepository, AdminTokenSecret, AdminTokenSpec, ApiKey, ApiKeyRepository,
    ApiKeySecret, Ban, Capacity, ClaimDecision, ClaimOutcome, CreatePet, IdempotencyClaim,
    IdempotencyRecord, IdempotencyRepository, IdempotentRequest, Inventory, KeyHash, KeyListQuery,
    KeyMatch, KeySpec, KeyUpdate, Order, OrderAction, OrderError, OrderListQuery, OrderRepository,
    Page, Pet, PetListQuery, PetRepository, PetStatus, PlaceOrder, Plan, RateLimits, RecordState,
    Scope, Storage, StorageError, StorageErrorKind, StoredResponse, async_trait, decide_claim,
    lifecycle,
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
