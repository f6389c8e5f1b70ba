//! What the webhook scenarios share: keys and their endpoints made, changed and read back, an
//! endpoint's deliveries, orders that record events, claims and the attempts recorded for them.
//!
//! Times: deliveries are created at the storage's now (this machine's clock), so claims use the
//! current Unix time and later, never a fixed one.

use petstore_domain::webhook::{
    Attempt, AttemptRecord, AttemptResult, Backlog, Delivery, DeliveryClaim, DueDelivery,
    EndpointOwner, EndpointSpec, EndpointUpdate, EndpointUrl, EndpointWrite, EventSet, EventType,
    SigningSecret, UrlPolicy, WebhookEndpoint,
};
use petstore_domain::{
    Clock, Limit, Order, OrderError, PageRequest, Pet, PetStatus, PlaceOrder, Storage, SystemClock,
};
use serde_json::Value;

use super::support::{add, free_key};

/// How long the scenarios' claims hold what they claim, in seconds.
pub(super) const LEASE: i64 = 60;

/// Now, in Unix seconds: the domain's clock, as the storage reads it.
pub(super) fn unix_now() -> i64 {
    SystemClock.unix_now()
}

/// `text` as an endpoint's URL.
pub(super) fn url(text: &str) -> EndpointUrl {
    EndpointUrl::parse(text, UrlPolicy::default()).expect("a valid URL")
}

/// An endpoint at `text`, subscribed to `events`, of no description.
pub(super) fn spec(text: &str, events: EventSet) -> EndpointSpec {
    EndpointSpec {
        url: url(text),
        events,
        description: String::new(),
    }
}

/// The set of `kinds`.
pub(super) fn only(kinds: &[EventType]) -> EventSet {
    EventSet::new(kinds.iter().copied()).expect("event types")
}

/// A new API key, as the owner of endpoints.
pub(super) async fn new_key(storage: &dyn Storage, label: &str) -> EndpointOwner {
    EndpointOwner::Key(free_key(storage, label).await.0.id)
}

/// An endpoint of `owner`'s, made with its secret (shown this once).
pub(super) async fn created(
    storage: &dyn Storage,
    owner: EndpointOwner,
    spec: &EndpointSpec,
) -> (WebhookEndpoint, SigningSecret) {
    storage
        .create_webhook_endpoint(owner, spec)
        .await
        .expect("create an endpoint")
        .done()
        .expect("under the limit")
}

/// An endpoint of `owner`'s at `text`, subscribed to `events`.
pub(super) async fn endpoint(
    storage: &dyn Storage,
    owner: EndpointOwner,
    text: &str,
    events: EventSet,
) -> WebhookEndpoint {
    created(storage, owner, &spec(text, events)).await.0
}

/// An endpoint of `owner`'s at `text`, subscribed to every event.
pub(super) async fn catch_all(
    storage: &dyn Storage,
    owner: EndpointOwner,
    text: &str,
) -> WebhookEndpoint {
    endpoint(storage, owner, text, EventSet::ALL).await
}

/// An operators' endpoint at `text` subscribed to `pet.created`, then `count` new pets: as many
/// deliveries waiting for it.
pub(super) async fn pets_created(
    storage: &dyn Storage,
    text: &str,
    count: usize,
) -> WebhookEndpoint {
    let events = only(&[EventType::PetCreated]);
    let hook = endpoint(storage, EndpointOwner::Operator, text, events).await;
    for n in 0..count {
        add(storage, &format!("pet {n}"), PetStatus::Available).await;
    }
    hook
}

/// What `owner`'s `update` of endpoint `id` did.
pub(super) async fn changed(
    storage: &dyn Storage,
    id: i64,
    owner: EndpointOwner,
    update: &EndpointUpdate,
) -> EndpointWrite<WebhookEndpoint> {
    storage
        .update_webhook_endpoint(id, owner, update)
        .await
        .expect("update an endpoint")
}

/// `endpoint` turned on or off by its owner, as it is then.
pub(super) async fn set_enabled(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    enabled: bool,
) -> WebhookEndpoint {
    let update = EndpointUpdate {
        enabled: Some(enabled),
        ..EndpointUpdate::default()
    };
    changed(storage, endpoint.id, endpoint.owner, &update)
        .await
        .done()
        .expect("the owner's endpoint")
}

/// Whether `owner` deleted endpoint `id`.
pub(super) async fn deleted(storage: &dyn Storage, id: i64, owner: EndpointOwner) -> bool {
    storage
        .delete_webhook_endpoint(id, owner)
        .await
        .expect("delete an endpoint")
}

/// Endpoint `id` given a new secret by `owner`, the old one kept until `grace`: the endpoint
/// and its new secret, if it is `owner`'s.
pub(super) async fn rotated(
    storage: &dyn Storage,
    id: i64,
    owner: EndpointOwner,
    grace: i64,
) -> Option<(WebhookEndpoint, SigningSecret)> {
    storage
        .rotate_webhook_secret(id, owner, grace)
        .await
        .expect("rotate a secret")
}

/// The endpoints of `owner`, in id order.
pub(super) async fn listed(storage: &dyn Storage, owner: EndpointOwner) -> Vec<WebhookEndpoint> {
    storage
        .list_webhook_endpoints(owner)
        .await
        .expect("list endpoints")
}

/// Endpoint `id`, if it is `owner`'s.
pub(super) async fn found(
    storage: &dyn Storage,
    id: i64,
    owner: EndpointOwner,
) -> Option<WebhookEndpoint> {
    storage
        .find_webhook_endpoint(id, owner)
        .await
        .expect("find an endpoint")
}

/// `endpoint` as it is now.
pub(super) async fn refreshed(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
) -> WebhookEndpoint {
    found(storage, endpoint.id, endpoint.owner)
        .await
        .expect("the endpoint")
}

/// Every delivery of `endpoint`, newest first, following the pages of `limit`.
pub(super) async fn deliveries_paged(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    limit: u32,
) -> Vec<Delivery> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = storage
            .list_webhook_deliveries(
                endpoint.id,
                endpoint.owner,
                PageRequest {
                    limit: Limit::new(limit).expect("limit"),
                    after,
                },
            )
            .await
            .expect("list deliveries")
            .expect("the owner's endpoint");
        assert!(page.items.len() <= limit as usize, "a page over its limit");
        let next = page.next_after;
        all.extend(page.items);
        match next {
            Some(next) => after = Some(next),
            None => return all,
        }
    }
}

/// Every delivery of `endpoint`, newest first.
pub(super) async fn deliveries(storage: &dyn Storage, endpoint: &WebhookEndpoint) -> Vec<Delivery> {
    deliveries_paged(storage, endpoint, 100).await
}

/// The ids of every delivery of `endpoint`, newest first.
pub(super) async fn delivery_ids(storage: &dyn Storage, endpoint: &WebhookEndpoint) -> Vec<i64> {
    deliveries(storage, endpoint)
        .await
        .iter()
        .map(|sent| sent.id)
        .collect()
}

/// Every delivery of `endpoint`, oldest first.
pub(super) async fn oldest_first(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
) -> Vec<Delivery> {
    let mut all = deliveries(storage, endpoint).await;
    all.reverse();
    all
}

/// Delivery `id` of `endpoint`, with its attempts, if it is `owner`'s delivery of that
/// endpoint.
pub(super) async fn delivery_of(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    id: i64,
    owner: EndpointOwner,
) -> Option<(Delivery, Vec<Attempt>)> {
    storage
        .find_webhook_delivery(endpoint.id, id, owner)
        .await
        .expect("find a delivery")
}

/// Delivery `id` of `endpoint`, with its attempts.
pub(super) async fn delivery(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    id: i64,
) -> (Delivery, Vec<Attempt>) {
    delivery_of(storage, endpoint, id, endpoint.owner)
        .await
        .expect("the delivery")
}

/// Delivery `id` of `endpoint` made pending again by `owner` from `at`, if it is `owner`'s
/// delivery of that endpoint.
pub(super) async fn redelivered(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    id: i64,
    owner: EndpointOwner,
    at: i64,
) -> Option<Delivery> {
    storage
        .redeliver_webhook(endpoint.id, id, owner, at)
        .await
        .expect("redeliver")
}

/// An order of a new available pet, placed by `owner`'s key (none for the operators). The
/// pet's own `pet.created` event has no key: only the operators' endpoints get it.
pub(super) async fn order_for(storage: &dyn Storage, owner: EndpointOwner) -> Order {
    let pet = add(storage, "for sale", PetStatus::Available).await;
    order_of(storage, &pet, owner).await
}

/// An order of `pet`, placed by `owner`'s key (none for the operators).
pub(super) async fn order_of(storage: &dyn Storage, pet: &Pet, owner: EndpointOwner) -> Order {
    place(storage, pet, owner).await.expect("place an order")
}

/// What placing an order of `pet` by `owner`'s key (none for the operators) gives.
pub(super) async fn place(
    storage: &dyn Storage,
    pet: &Pet,
    owner: EndpointOwner,
) -> Result<Order, OrderError> {
    storage
        .place_order(&PlaceOrder {
            pet_id: pet.id,
            owner: owner.key(),
            completion: None,
        })
        .await
}

/// A new order of `endpoint`'s owner: the id of its delivery to `endpoint`, and now (Unix
/// seconds) once it is recorded.
pub(super) async fn new_delivery(storage: &dyn Storage, endpoint: &WebhookEndpoint) -> (i64, i64) {
    order_for(storage, endpoint.owner).await;
    let id = deliveries(storage, endpoint).await[0].id;
    (id, unix_now())
}

/// A [`new_delivery`], claimed alone a second later under `token`.
pub(super) async fn claimed_delivery(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    token: i64,
) -> (i64, i64) {
    let (id, now) = new_delivery(storage, endpoint).await;
    assert_eq!(claimed_ids(storage, now + 1, token).await, vec![id]);
    (id, now)
}

/// A claim at `now` of at most `limit` deliveries, under `token`, leased for `LEASE`.
pub(super) fn claim_at(now: i64, limit: u32, token: i64) -> DeliveryClaim {
    DeliveryClaim {
        now,
        lease_until: now + LEASE,
        limit,
        token,
        skip_endpoints: Vec::new(),
        per_owner: limit,
        owner_room: Vec::new(),
    }
}

/// What `claim` takes.
pub(super) async fn claim(storage: &dyn Storage, claim: DeliveryClaim) -> Vec<DueDelivery> {
    storage
        .claim_webhook_deliveries(&claim)
        .await
        .expect("claim deliveries")
}

/// The ids of what a claim at `now` of at most ten, under `token`, takes, in ascending order.
pub(super) async fn claimed_ids(storage: &dyn Storage, now: i64, token: i64) -> Vec<i64> {
    ids(&claim(storage, claim_at(now, 10, token)).await)
}

/// The ids of `claimed`, in ascending order.
pub(super) fn ids(claimed: &[DueDelivery]) -> Vec<i64> {
    let mut ids: Vec<i64> = claimed.iter().map(|due| due.id).collect();
    ids.sort_unstable();
    ids
}

/// The body of `delivery`, parsed.
pub(super) fn body(delivery: &Delivery) -> Value {
    serde_json::from_str(&delivery.body).expect("a JSON body")
}

/// An attempt at `delivery` under `lease`, of 25 ms.
pub(super) fn attempt(
    delivery: i64,
    lease: i64,
    attempted_at: i64,
    status: Option<u16>,
    result: AttemptResult,
) -> AttemptRecord {
    AttemptRecord {
        delivery,
        lease,
        attempted_at,
        status,
        latency_ms: 25,
        error: None,
        result,
    }
}

/// Whether `record` was recorded (the claim it names still held its delivery), alone.
pub(super) async fn recorded(storage: &dyn Storage, record: &AttemptRecord) -> bool {
    let recorded = recorded_together(storage, std::slice::from_ref(record)).await;
    assert_eq!(recorded.len(), 1, "one answer for one attempt");
    recorded[0]
}

/// Whether each of `records`, recorded in one call, was recorded.
pub(super) async fn recorded_together(
    storage: &dyn Storage,
    records: &[AttemptRecord],
) -> Vec<bool> {
    storage
        .record_webhook_attempts(records)
        .await
        .expect("record attempts")
}

/// Records each of `records`, each of which must be recorded.
pub(super) async fn record_all(storage: &dyn Storage, records: &[AttemptRecord]) {
    for record in records {
        assert!(recorded(storage, record).await, "{record:?}");
    }
}

/// The deliveries waiting.
pub(super) async fn backlog(storage: &dyn Storage) -> Backlog {
    storage.webhook_backlog().await.expect("the backlog")
}
