//! A storage backend written here, outside `petstore-store`, against the domain's interface
//! alone: the proof that the HTTP layer is written against that interface. Every scenario of
//! `api_tests!` runs on it too (`memory`), through the same `AppState::new` and `app()` as
//! production, so a handler or middleware that reached for the Diesel store would fail here.
//!
//! It keeps everything in a `Mutex`, with the semantics the traits document (ids from 1, pages
//! in id order, one ban at a time); nothing in it is durable.

mod catalogue;
mod keys;
mod webhooks;

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
