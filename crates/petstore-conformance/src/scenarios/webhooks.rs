//! Webhooks: endpoints per owner and their limit, the outbox of deliveries recorded with each
//! change, claims under a lease and their races, attempts and what they make of a delivery and
//! its endpoint, redelivery, secret rotation, the backlog and pruning.
//!
//! Times: deliveries are created at the storage's now (this machine's clock), so claims use the
//! current Unix time and later, never a fixed one.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::join_all;
use petstore_domain::webhook::{
    Attempt, AttemptRecord, AttemptResult, Backlog, Delivery, DeliveryClaim, DeliveryState,
    DueDelivery, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointUrl, EndpointWrite, EventSet,
    EventType, MAX_ENDPOINTS, SigningSecret, UrlPolicy, WebhookEndpoint,
};
use petstore_domain::{
    CreatePet, KeySpec, LifecycleError, Limit, Order, OrderAction, OrderError, PageRequest, Pet,
    PetStatus, PlaceOrder, Plan, Storage,
};
use serde_json::Value;

use super::support::{add, draft};

/// How long the scenarios' claims hold what they claim, in seconds.
pub(super) const LEASE: i64 = 60;

/// Now, in Unix seconds.
pub(super) fn unix_now() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970");
    i64::try_from(since.as_secs()).expect("seconds in range")
}

pub(super) fn url(text: &str) -> EndpointUrl {
    EndpointUrl::parse(text, UrlPolicy::default()).expect("a valid URL")
}

pub(super) fn spec(text: &str, events: EventSet) -> EndpointSpec {
    EndpointSpec {
        url: url(text),
        events,
        description: String::new(),
    }
}

pub(super) fn only(kinds: &[EventType]) -> EventSet {
    EventSet::new(kinds.iter().copied()).expect("event types")
}

/// A new API key, as the owner of endpoints.
pub(super) async fn new_key(storage: &dyn Storage, label: &str) -> EndpointOwner {
    let (key, _) = storage
        .create_key(&KeySpec::new(Plan::Free, label, None).expect("spec"))
        .await
        .expect("create a key");
    EndpointOwner::Key(key.id)
}

pub(super) async fn endpoint(
    storage: &dyn Storage,
    owner: EndpointOwner,
    text: &str,
    events: EventSet,
) -> WebhookEndpoint {
    storage
        .create_webhook_endpoint(owner, &spec(text, events))
        .await
        .expect("create an endpoint")
        .done()
        .expect("under the limit")
        .0
}

pub(super) async fn listed(storage: &dyn Storage, owner: EndpointOwner) -> Vec<WebhookEndpoint> {
    storage
        .list_webhook_endpoints(owner)
        .await
        .expect("list endpoints")
}

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
async fn refreshed(storage: &dyn Storage, endpoint: &WebhookEndpoint) -> WebhookEndpoint {
    found(storage, endpoint.id, endpoint.owner)
        .await
        .expect("the endpoint")
}

/// Every delivery of `endpoint`, newest first, following the pages of `limit`.
async fn deliveries_paged(
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

/// Every delivery of `endpoint`, oldest first.
async fn oldest_first(storage: &dyn Storage, endpoint: &WebhookEndpoint) -> Vec<Delivery> {
    let mut all = deliveries(storage, endpoint).await;
    all.reverse();
    all
}

/// Delivery `id` of `endpoint`, with its attempts.
pub(super) async fn delivery(
    storage: &dyn Storage,
    endpoint: &WebhookEndpoint,
    id: i64,
) -> (Delivery, Vec<Attempt>) {
    storage
        .find_webhook_delivery(endpoint.id, id, endpoint.owner)
        .await
        .expect("find a delivery")
        .expect("the delivery")
}

/// An order of a new available pet, placed by `owner`'s key (none for the operators). The
/// pet's own `pet.created` event has no key: only the operators' endpoints get it.
pub(super) async fn order_for(storage: &dyn Storage, owner: EndpointOwner) -> Order {
    let pet = add(storage, "for sale", PetStatus::Available).await;
    order_of(storage, &pet, owner).await
}

async fn order_of(storage: &dyn Storage, pet: &Pet, owner: EndpointOwner) -> Order {
    storage
        .place_order(&PlaceOrder {
            pet_id: pet.id,
            owner: owner.key(),
            completion: None,
        })
        .await
        .expect("place an order")
}

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

pub(super) async fn claim(storage: &dyn Storage, claim: DeliveryClaim) -> Vec<DueDelivery> {
    storage
        .claim_webhook_deliveries(&claim)
        .await
        .expect("claim deliveries")
}

/// The ids of `claimed`, in ascending order.
fn ids(claimed: &[DueDelivery]) -> Vec<i64> {
    let mut ids: Vec<i64> = claimed.iter().map(|due| due.id).collect();
    ids.sort_unstable();
    ids
}

fn body(delivery: &Delivery) -> Value {
    serde_json::from_str(&delivery.body).expect("a JSON body")
}

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

pub(super) async fn recorded(storage: &dyn Storage, record: &AttemptRecord) -> bool {
    storage
        .record_webhook_attempt(record)
        .await
        .expect("record an attempt")
}

pub(super) async fn backlog(storage: &dyn Storage) -> Backlog {
    storage.webhook_backlog().await.expect("the backlog")
}

/// An endpoint is created with a secret shown once (`whsec_`...), listed, found, changed and
/// deleted by its owner only: another key and the operators neither see nor change it, and the
/// operators' endpoints are no key's.
pub async fn webhook_endpoints_belong_to_their_owner(storage: &dyn Storage) {
    let mine = new_key(storage, "mine").await;
    let theirs = new_key(storage, "theirs").await;
    let events = only(&[EventType::OrderPlaced, EventType::PetCreated]);
    let wanted = EndpointSpec {
        description: "orders and pets".to_owned(),
        ..spec("https://hooks.example.com/petstore", events)
    };
    let (first, secret) = storage
        .create_webhook_endpoint(mine, &wanted)
        .await
        .expect("create")
        .done()
        .expect("under the limit");
    assert_eq!(
        (
            first.url.as_str(),
            first.events,
            first.description.as_str(),
            first.enabled,
            first.disabled_reason.as_deref(),
            first.previous_secret_expires_at,
            first.owner,
        ),
        (
            wanted.url.as_str(),
            events,
            "orders and pets",
            true,
            None,
            None,
            mine
        )
    );
    assert!(
        first.created_at > 1_700_000_000,
        "created now, in Unix seconds"
    );
    assert!(
        secret.reveal().starts_with("whsec_"),
        "a Standard Webhooks secret"
    );
    assert!(
        (24..=64).contains(&secret.key().len()),
        "a key of 24 to 64 bytes"
    );
    let (second, other_secret) = storage
        .create_webhook_endpoint(
            mine,
            &spec("https://hooks.example.com/second", EventSet::ALL),
        )
        .await
        .expect("create")
        .done()
        .expect("under the limit");
    assert_ne!(second.id, first.id);
    assert_ne!(other_secret, secret, "each endpoint a secret of its own");
    let mut both = vec![first.clone(), second.clone()];
    both.sort_by_key(|endpoint| endpoint.id);
    assert_eq!(listed(storage, mine).await, both, "in id order");
    assert!(
        listed(storage, theirs).await.is_empty(),
        "not another key's"
    );
    assert!(
        listed(storage, EndpointOwner::Operator).await.is_empty(),
        "not the operators'"
    );
    let operators = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    assert_eq!(operators.owner, EndpointOwner::Operator);
    assert_eq!(
        listed(storage, EndpointOwner::Operator).await,
        vec![operators.clone()]
    );
    assert_eq!(
        listed(storage, mine).await,
        both,
        "the operators' are no key's"
    );
    assert_eq!(found(storage, first.id, mine).await, Some(first.clone()));
    assert_eq!(found(storage, operators.id, mine).await, None);
    for stranger in [theirs, EndpointOwner::Operator] {
        assert_eq!(
            found(storage, first.id, stranger).await,
            None,
            "{stranger:?}"
        );
    }

    let update = EndpointUpdate {
        url: Some(url("https://hooks.example.com/v2")),
        events: Some(only(&[EventType::OrderCancelled])),
        description: Some("cancellations".to_owned()),
        enabled: None,
    };
    for stranger in [theirs, EndpointOwner::Operator] {
        assert_eq!(
            storage
                .update_webhook_endpoint(first.id, stranger, &update)
                .await
                .expect("update"),
            EndpointWrite::NotFound,
            "{stranger:?} changes no endpoint of another's"
        );
    }
    assert_eq!(found(storage, first.id, mine).await, Some(first.clone()));
    let updated = storage
        .update_webhook_endpoint(first.id, mine, &update)
        .await
        .expect("update")
        .done()
        .expect("the key's endpoint");
    assert_eq!(
        updated,
        WebhookEndpoint {
            url: "https://hooks.example.com/v2".to_owned(),
            events: only(&[EventType::OrderCancelled]),
            description: "cancellations".to_owned(),
            ..first.clone()
        }
    );
    assert_eq!(found(storage, first.id, mine).await, Some(updated.clone()));
    assert_eq!(
        storage
            .update_webhook_endpoint(first.id, mine, &EndpointUpdate::default())
            .await
            .expect("update nothing"),
        EndpointWrite::Done(updated),
        "an empty update changes nothing"
    );

    for stranger in [theirs, EndpointOwner::Operator] {
        assert!(
            !storage
                .delete_webhook_endpoint(first.id, stranger)
                .await
                .expect("delete"),
            "{stranger:?} deletes no endpoint of another's"
        );
    }
    assert!(found(storage, first.id, mine).await.is_some());
    assert!(
        storage
            .delete_webhook_endpoint(first.id, mine)
            .await
            .expect("delete")
    );
    assert_eq!(found(storage, first.id, mine).await, None);
    assert!(
        !storage
            .delete_webhook_endpoint(first.id, mine)
            .await
            .expect("delete again"),
        "deleted already"
    );
    assert_eq!(
        storage
            .update_webhook_endpoint(first.id, mine, &update)
            .await
            .expect("update"),
        EndpointWrite::NotFound,
        "a deleted endpoint is not updated"
    );
    assert_eq!(listed(storage, mine).await, vec![second]);
}

/// An owner has at most `MAX_ENDPOINTS` endpoints: one more is refused (`None`), one deleted
/// makes room; each key and the operators have a limit of their own.
pub async fn an_owner_has_at_most_max_endpoints(storage: &dyn Storage) {
    let key = new_key(storage, "many").await;
    let other = new_key(storage, "few").await;
    let create = async |owner: EndpointOwner, n: usize| {
        let text = format!("https://hooks.example.com/{n}");
        storage
            .create_webhook_endpoint(owner, &spec(&text, EventSet::ALL))
            .await
            .expect("create")
            .done()
            .map(|(endpoint, _)| endpoint)
    };
    let mut made = Vec::new();
    for n in 0..MAX_ENDPOINTS {
        let created = create(key, n).await;
        made.push(created.unwrap_or_else(|| panic!("endpoint {n} of {MAX_ENDPOINTS} refused")));
    }
    assert_eq!(create(key, MAX_ENDPOINTS).await, None, "one over the limit");
    assert_eq!(listed(storage, key).await, made);
    assert!(
        create(other, 0).await.is_some(),
        "another key's limit is its own"
    );
    for n in 0..MAX_ENDPOINTS {
        assert!(
            create(EndpointOwner::Operator, n).await.is_some(),
            "the operators' endpoint {n} refused"
        );
    }
    assert_eq!(
        create(EndpointOwner::Operator, MAX_ENDPOINTS).await,
        None,
        "the operators have the limit too"
    );
    assert!(
        storage
            .delete_webhook_endpoint(made[0].id, key)
            .await
            .expect("delete")
    );
    assert!(
        create(key, 0).await.is_some(),
        "a deleted endpoint makes room"
    );
    assert_eq!(create(key, 1).await, None, "for one");
    assert_eq!(listed(storage, key).await.len(), MAX_ENDPOINTS);
}

/// An event is recorded, with the change, as one pending delivery per enabled endpoint
/// subscribed to its type that is its key's or the operators': one event id (`msg_`...) and
/// one body (`type`, `timestamp`, `data` the resource) on each, due at once; none to another
/// key's endpoint or one not subscribed. A pet created by a key is its key's event; an order of
/// no key the operators' only; a refused order records nothing.
pub async fn an_event_goes_to_the_subscribed_endpoints_of_its_key_and_the_operators(
    storage: &dyn Storage,
) {
    // The pets first: their `pet.created` events come before any endpoint is there.
    let rex = add(storage, "Rex", PetStatus::Available).await;
    let felix = add(storage, "Felix", PetStatus::Available).await;
    let spot = add(storage, "Spot", PetStatus::Available).await;
    let mine = new_key(storage, "mine").await;
    let theirs = new_key(storage, "theirs").await;
    let orders_hook = endpoint(
        storage,
        mine,
        "https://mine.example.com/orders",
        only(&[EventType::OrderPlaced]),
    )
    .await;
    let pets_hook = endpoint(
        storage,
        mine,
        "https://mine.example.com/pets",
        only(&[EventType::PetCreated]),
    )
    .await;
    let their_hook = endpoint(
        storage,
        theirs,
        "https://theirs.example.com/all",
        EventSet::ALL,
    )
    .await;
    let operators_hook = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/all",
        EventSet::ALL,
    )
    .await;
    let counts = async || {
        [
            deliveries(storage, &orders_hook).await.len(),
            deliveries(storage, &pets_hook).await.len(),
            deliveries(storage, &their_hook).await.len(),
            deliveries(storage, &operators_hook).await.len(),
        ]
    };
    assert_eq!(
        counts().await,
        [0; 4],
        "nothing happened since they were made"
    );

    let order = order_of(storage, &rex, mine).await;
    assert_eq!(
        counts().await,
        [1, 0, 0, 1],
        "[mine for orders, mine for pets, theirs, the operators']"
    );
    let now = unix_now();
    let placed = deliveries(storage, &orders_hook).await.remove(0);
    let to_operators = deliveries(storage, &operators_hook).await.remove(0);
    for (sent, hook) in [(&placed, &orders_hook), (&to_operators, &operators_hook)] {
        assert_eq!(
            (sent.endpoint_id, sent.event_type, sent.state, sent.attempts),
            (hook.id, EventType::OrderPlaced, DeliveryState::Pending, 0)
        );
        assert_eq!(
            (
                sent.last_status,
                sent.last_latency_ms,
                sent.last_error.as_deref()
            ),
            (None, None, None),
            "no attempt yet"
        );
        assert!(
            sent.created_at > 1_700_000_000 && sent.created_at <= now,
            "created now, in Unix seconds: {}",
            sent.created_at
        );
        let due = sent
            .next_attempt_at
            .expect("a pending delivery's next attempt");
        assert!(due <= now, "due at once: {due} (now {now})");
        let body = body(sent);
        assert_eq!(body["type"], "order.placed");
        assert!(
            body["timestamp"]
                .as_str()
                .is_some_and(|at| at.contains('T')),
            "a timestamp: {body}"
        );
        assert_eq!(body["data"]["id"], order.id, "{body}");
        assert_eq!(body["data"]["petId"], rex.id, "{body}");
    }
    assert!(
        placed.event_id.starts_with("msg_"),
        "an event id: {}",
        placed.event_id
    );
    assert_eq!(placed.event_id, to_operators.event_id, "one event, one id");
    assert_eq!(placed.body, to_operators.body, "one event, one body");
    assert_ne!(placed.id, to_operators.id, "a delivery per endpoint");

    let tom = storage
        .create_pet(&CreatePet {
            creator: mine.key(),
            ..draft("Tom", PetStatus::Available)
        })
        .await
        .expect("create a pet");
    assert_eq!(counts().await, [1, 1, 0, 2], "a pet created by the key");
    let created = deliveries(storage, &pets_hook).await.remove(0);
    let created_to_operators = deliveries(storage, &operators_hook)
        .await
        .into_iter()
        .find(|sent| sent.event_type == EventType::PetCreated)
        .expect("the operators' pet.created");
    for sent in [&created, &created_to_operators] {
        assert_eq!(sent.event_type, EventType::PetCreated);
        let body = body(sent);
        assert_eq!(body["type"], "pet.created");
        assert_eq!(body["data"]["id"], tom.id, "{body}");
    }
    assert_eq!(created.event_id, created_to_operators.event_id);
    assert!(created.event_id.starts_with("msg_"));
    assert_ne!(
        created.event_id, placed.event_id,
        "each event an id of its own"
    );

    let no_keys = order_of(storage, &felix, EndpointOwner::Operator).await;
    assert_eq!(
        counts().await,
        [1, 1, 0, 3],
        "an order of no key: the operators' only"
    );
    assert_eq!(
        body(&deliveries(storage, &operators_hook).await[0])["data"]["id"],
        no_keys.id
    );
    order_of(storage, &spot, theirs).await;
    assert_eq!(
        counts().await,
        [1, 1, 1, 4],
        "their order: theirs and the operators'"
    );

    let refused = storage
        .place_order(&PlaceOrder {
            pet_id: rex.id,
            owner: mine.key(),
            completion: None,
        })
        .await;
    assert!(
        matches!(
            refused,
            Err(OrderError::Refused(LifecycleError::PetNotAvailable(_)))
        ),
        "Rex is taken: {refused:?}"
    );
    assert_eq!(
        counts().await,
        [1, 1, 1, 4],
        "a refused order records nothing"
    );
}

/// Approving, delivering and cancelling an order record `order.approved`, `order.delivered` and
/// `order.cancelled` for the order's key, whoever changed it, each with the order as it now is;
/// a refused change records nothing; the log lists newest first, page by page.
pub async fn each_order_change_records_its_event(storage: &dyn Storage) {
    let key = new_key(storage, "buyer").await;
    let stranger = new_key(storage, "stranger").await;
    let hook = endpoint(
        storage,
        key,
        "https://buyer.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    let first = order_for(storage, key).await;
    for action in [OrderAction::Approve, OrderAction::Deliver] {
        storage
            .change_order(first.id, None, action)
            .await
            .expect("an operator's change");
    }
    let second = order_for(storage, key).await;
    storage
        .change_order(second.id, key.key(), OrderAction::Cancel)
        .await
        .expect("the key cancels its order");
    let before = deliveries(storage, &hook).await;
    let refused = storage
        .change_order(second.id, None, OrderAction::Approve)
        .await;
    assert!(
        matches!(refused, Err(OrderError::Refused(_))),
        "a cancelled order is not approved: {refused:?}"
    );
    let not_theirs = storage
        .change_order(first.id, stranger.key(), OrderAction::Cancel)
        .await;
    assert!(
        matches!(not_theirs, Err(OrderError::OrderNotFound(_))),
        "{not_theirs:?}"
    );
    let log = deliveries(storage, &hook).await;
    assert_eq!(log, before, "refused changes record nothing");
    let seen: Vec<(EventType, String, i64, String)> = log
        .iter()
        .rev()
        .map(|sent| {
            let body = body(sent);
            (
                sent.event_type,
                body["type"].as_str().expect("a type").to_owned(),
                body["data"]["id"].as_i64().expect("an order id"),
                body["data"]["status"]
                    .as_str()
                    .expect("a status")
                    .to_owned(),
            )
        })
        .collect();
    let expected = [
        (EventType::OrderPlaced, first.id, "placed"),
        (EventType::OrderApproved, first.id, "approved"),
        (EventType::OrderDelivered, first.id, "delivered"),
        (EventType::OrderPlaced, second.id, "placed"),
        (EventType::OrderCancelled, second.id, "cancelled"),
    ]
    .map(|(kind, id, status)| (kind, kind.as_str().to_owned(), id, status.to_owned()));
    assert_eq!(seen, expected, "oldest first (the log is newest first)");
    let events: HashSet<&str> = log.iter().map(|sent| sent.event_id.as_str()).collect();
    assert_eq!(events.len(), log.len(), "each event an id of its own");
    assert_eq!(
        deliveries_paged(storage, &hook, 2).await,
        log,
        "pages of two list the same"
    );
}

/// Turning an endpoint off (with a reason) fails its pending deliveries, and records no new
/// event for it while it is off; what is claimed is other endpoints' only. Turning it on clears
/// the reason, and it gets new events again.
pub async fn a_disabled_endpoint_gets_no_deliveries(storage: &dyn Storage) {
    let key = new_key(storage, "owner").await;
    let paused = endpoint(
        storage,
        key,
        "https://owner.example.com/paused",
        EventSet::ALL,
    )
    .await;
    let running = endpoint(
        storage,
        key,
        "https://owner.example.com/running",
        EventSet::ALL,
    )
    .await;
    order_for(storage, key).await;
    let waiting = deliveries(storage, &paused).await;
    assert_eq!(waiting.len(), 1);
    let off = storage
        .update_webhook_endpoint(
            paused.id,
            key,
            &EndpointUpdate {
                enabled: Some(false),
                ..EndpointUpdate::default()
            },
        )
        .await
        .expect("update")
        .done()
        .expect("the key's endpoint");
    assert!(!off.enabled, "turned off");
    assert!(
        off.disabled_reason
            .as_deref()
            .is_some_and(|why| !why.is_empty()),
        "with a reason: {off:?}"
    );
    assert_eq!(refreshed(storage, &paused).await, off);
    let (failed, _) = delivery(storage, &paused, waiting[0].id).await;
    assert_eq!(
        (failed.state, failed.next_attempt_at),
        (DeliveryState::Failed, None),
        "its pending delivery fails"
    );
    let others = deliveries(storage, &running).await;
    assert_eq!(others.len(), 1);
    assert_eq!(
        others[0].state,
        DeliveryState::Pending,
        "another endpoint's stays pending"
    );

    order_for(storage, key).await;
    assert_eq!(
        deliveries(storage, &paused).await.len(),
        1,
        "no new delivery while off"
    );
    let running_log = deliveries(storage, &running).await;
    assert_eq!(running_log.len(), 2);
    assert_eq!(
        backlog(storage).await.pending,
        2,
        "the running endpoint's two"
    );
    let claimed = claim(storage, claim_at(unix_now() + 1, 10, 51)).await;
    let mut expected: Vec<i64> = running_log.iter().map(|sent| sent.id).collect();
    expected.sort_unstable();
    assert_eq!(ids(&claimed), expected, "the running endpoint's only");

    let on = storage
        .update_webhook_endpoint(
            paused.id,
            key,
            &EndpointUpdate {
                enabled: Some(true),
                ..EndpointUpdate::default()
            },
        )
        .await
        .expect("update")
        .done()
        .expect("the key's endpoint");
    assert!(on.enabled, "turned on");
    assert_eq!(on.disabled_reason, None, "its reason cleared");
    order_for(storage, key).await;
    let log = deliveries(storage, &paused).await;
    assert_eq!(log.len(), 2, "events again once on");
    assert_eq!(log[0].state, DeliveryState::Pending);
}

/// A claim takes at most its limit of due deliveries, the longest due first, and leases them:
/// a second claim before the lease ends skips them; one after it takes again those whose
/// attempt was not recorded. An attempt is recorded only with the token of the claim that
/// holds the delivery: with another, nothing changes.
pub async fn a_claim_leases_due_deliveries_to_itself(storage: &dyn Storage) {
    let key = new_key(storage, "sender").await;
    let hook = endpoint(
        storage,
        key,
        "https://sender.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    for _ in 0..3 {
        order_for(storage, key).await;
    }
    let log = oldest_first(storage, &hook).await;
    assert_eq!(log.len(), 3);
    let t = unix_now();
    // Due 30, 20 and 10 seconds ago, the oldest first.
    for (sent, ago) in log.iter().zip([30, 20, 10]) {
        let again = storage
            .redeliver_webhook(hook.id, sent.id, key, t - ago)
            .await
            .expect("redeliver")
            .expect("the key's delivery");
        assert_eq!(again.next_attempt_at, Some(t - ago));
    }
    let [d1, d2, d3] = [log[0].id, log[1].id, log[2].id];
    let now = t + 1;
    let first = claim(storage, claim_at(now, 2, 11)).await;
    assert_eq!(ids(&first), vec![d1, d2], "the two due longest");
    for due in &first {
        let logged = log
            .iter()
            .find(|sent| sent.id == due.id)
            .expect("a logged delivery");
        assert_eq!(
            (
                due.endpoint_id,
                due.url.as_str(),
                due.event_type,
                due.lease,
                due.tries
            ),
            (hook.id, hook.url.as_str(), EventType::OrderPlaced, 11, 0)
        );
        assert_eq!((&due.event_id, &due.body), (&logged.event_id, &logged.body));
        assert_eq!(due.secrets.len(), 1, "never rotated: one secret");
    }
    assert_eq!(
        ids(&claim(storage, claim_at(now, 10, 12)).await),
        vec![d3],
        "the leased ones are skipped"
    );
    assert!(
        claim(storage, claim_at(now, 10, 13)).await.is_empty(),
        "every due delivery is leased"
    );

    let delivered = |lease| attempt(d1, lease, now, Some(200), AttemptResult::Delivered);
    assert!(
        !recorded(storage, &delivered(99)).await,
        "another token records nothing"
    );
    let (unchanged, attempts) = delivery(storage, &hook, d1).await;
    assert_eq!(
        (unchanged.state, unchanged.attempts, attempts.len()),
        (DeliveryState::Pending, 0, 0),
        "nothing recorded"
    );
    assert!(recorded(storage, &delivered(11)).await);
    assert_eq!(
        delivery(storage, &hook, d1).await.0.state,
        DeliveryState::Delivered
    );

    let later = now + LEASE + 1;
    let again = claim(storage, claim_at(later, 10, 14)).await;
    assert_eq!(
        ids(&again),
        vec![d2, d3],
        "after the leases: the unrecorded ones"
    );
    assert!(again.iter().all(|due| due.lease == 14));
    let retry = |lease| {
        attempt(
            d2,
            lease,
            later,
            Some(500),
            AttemptResult::RetryAt(later + 5),
        )
    };
    assert!(
        !recorded(storage, &retry(11)).await,
        "the first claim holds it no more"
    );
    assert_eq!(delivery(storage, &hook, d2).await.0.attempts, 0);
    assert!(recorded(storage, &retry(14)).await);
    assert_eq!(delivery(storage, &hook, d2).await.0.attempts, 1);
}

/// What an attempt makes of its delivery and endpoint: delivered (one attempt shown, with its
/// status and latency; recorded again, refused); retried at a time (pending, not claimed before
/// it); given up on (failed; the endpoint turned off if nothing was delivered to it since the
/// event, kept on if something was); gone (failed, the endpoint off and its other pending
/// deliveries failed).
pub async fn attempts_decide_what_becomes_of_a_delivery_and_its_endpoint(storage: &dyn Storage) {
    let key = new_key(storage, "customer").await;
    let hook = endpoint(
        storage,
        key,
        "https://customer.example.com/hooks",
        EventSet::ALL,
    )
    .await;

    // Delivered.
    order_for(storage, key).await;
    let d1 = deliveries(storage, &hook).await[0].id;
    let t = unix_now();
    let due = claim(storage, claim_at(t + 1, 10, 71)).await;
    assert_eq!(ids(&due), vec![d1]);
    let ok = AttemptRecord {
        latency_ms: 123,
        ..attempt(d1, 71, t + 1, Some(200), AttemptResult::Delivered)
    };
    assert!(recorded(storage, &ok).await);
    let (sent, attempts) = delivery(storage, &hook, d1).await;
    assert_eq!(
        (
            sent.state,
            sent.attempts,
            sent.next_attempt_at,
            sent.last_status,
            sent.last_latency_ms
        ),
        (DeliveryState::Delivered, 1, None, Some(200), Some(123))
    );
    assert_eq!(
        attempts,
        vec![Attempt {
            attempted_at: t + 1,
            status: Some(200),
            latency_ms: 123,
            error: None,
        }]
    );
    assert!(
        !recorded(storage, &ok).await,
        "a delivered delivery is no claim's any more"
    );
    assert_eq!(delivery(storage, &hook, d1).await.1.len(), 1, "one attempt");

    // Retried at a time.
    order_for(storage, key).await;
    let d2 = deliveries(storage, &hook).await[0].id;
    let t2 = unix_now();
    assert_eq!(
        ids(&claim(storage, claim_at(t2 + 1, 10, 72)).await),
        vec![d2]
    );
    let retry_at = t2 + 100;
    assert!(
        recorded(
            storage,
            &attempt(d2, 72, t2 + 1, Some(503), AttemptResult::RetryAt(retry_at))
        )
        .await
    );
    let (waiting, attempts) = delivery(storage, &hook, d2).await;
    assert_eq!(
        (
            waiting.state,
            waiting.attempts,
            waiting.next_attempt_at,
            waiting.last_status
        ),
        (DeliveryState::Pending, 1, Some(retry_at), Some(503))
    );
    assert_eq!(attempts.len(), 1);
    assert!(
        claim(storage, claim_at(retry_at - 1, 10, 73))
            .await
            .is_empty(),
        "not due before its retry"
    );
    let retried = claim(storage, claim_at(retry_at, 10, 73)).await;
    assert_eq!(ids(&retried), vec![d2], "due at its retry");
    assert_eq!(retried[0].tries, 1, "one attempt made");

    // Given up on, something delivered to the endpoint since its event: the endpoint stays on.
    order_for(storage, key).await;
    let d3 = deliveries(storage, &hook).await[0].id;
    assert_eq!(
        ids(&claim(storage, claim_at(retry_at, 10, 74)).await),
        vec![d3],
        "the retried one is leased"
    );
    assert!(
        recorded(
            storage,
            &attempt(d3, 74, retry_at, Some(204), AttemptResult::Delivered)
        )
        .await
    );
    assert!(
        recorded(
            storage,
            &attempt(d2, 73, retry_at + 1, Some(500), AttemptResult::GaveUp)
        )
        .await
    );
    let (failed, attempts) = delivery(storage, &hook, d2).await;
    assert_eq!(
        (failed.state, failed.attempts, failed.next_attempt_at),
        (DeliveryState::Failed, 2, None)
    );
    assert_eq!(
        attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        vec![Some(503), Some(500)],
        "the attempts in order"
    );
    let still = refreshed(storage, &hook).await;
    assert!(
        still.enabled && still.disabled_reason.is_none(),
        "delivered to since the event: kept on, {still:?}"
    );

    // Given up on, nothing ever delivered: the endpoint is turned off.
    let other = new_key(storage, "unreachable").await;
    let broken = endpoint(
        storage,
        other,
        "https://unreachable.example.com/hooks",
        only(&[EventType::OrderPlaced]),
    )
    .await;
    order_for(storage, other).await;
    let d4 = deliveries(storage, &broken).await[0].id;
    let t4 = unix_now();
    assert_eq!(
        ids(&claim(storage, claim_at(t4 + 1, 10, 75)).await),
        vec![d4]
    );
    let gave_up = AttemptRecord {
        error: Some("connection refused".to_owned()),
        ..attempt(d4, 75, t4 + 1, None, AttemptResult::GaveUp)
    };
    assert!(recorded(storage, &gave_up).await);
    let (failed, _) = delivery(storage, &broken, d4).await;
    assert_eq!(
        (
            failed.state,
            failed.last_status,
            failed.last_error.as_deref()
        ),
        (DeliveryState::Failed, None, Some("connection refused"))
    );
    let off = refreshed(storage, &broken).await;
    assert!(
        !off.enabled && off.disabled_reason.is_some(),
        "failing throughout: turned off, {off:?}"
    );

    // Gone.
    let third = new_key(storage, "gone").await;
    let gone = endpoint(
        storage,
        third,
        "https://gone.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    order_for(storage, third).await;
    order_for(storage, third).await;
    let t5 = unix_now();
    let taken = claim(storage, claim_at(t5 + 1, 1, 76)).await;
    assert_eq!(taken.len(), 1);
    let answered = taken[0].id;
    let left = deliveries(storage, &gone)
        .await
        .into_iter()
        .find(|sent| sent.id != answered)
        .expect("the other delivery")
        .id;
    assert!(
        recorded(
            storage,
            &attempt(answered, 76, t5 + 1, Some(410), AttemptResult::Gone)
        )
        .await
    );
    let (failed, _) = delivery(storage, &gone, answered).await;
    assert_eq!(
        (failed.state, failed.last_status),
        (DeliveryState::Failed, Some(410))
    );
    let off = refreshed(storage, &gone).await;
    assert!(
        !off.enabled && off.disabled_reason.is_some(),
        "gone: turned off, {off:?}"
    );
    let (other_one, _) = delivery(storage, &gone, left).await;
    assert_eq!(
        (other_one.state, other_one.next_attempt_at),
        (DeliveryState::Failed, None),
        "its other pending delivery fails"
    );
    assert!(
        claim(storage, claim_at(t5 + 1, 10, 77)).await.is_empty(),
        "nothing left to send"
    );
    assert!(
        refreshed(storage, &hook).await.enabled,
        "another key's endpoint is untouched"
    );
}

/// A delivery, delivered or failed, is sent again on request: pending from the time given, its
/// schedule from the start, its event id and body kept, claimed again. Nothing of another
/// owner's, no unknown delivery, and no delivery of another endpoint is.
pub async fn a_delivery_is_sent_again_on_request(storage: &dyn Storage) {
    let key = new_key(storage, "owner").await;
    let stranger = new_key(storage, "stranger").await;
    let hook = endpoint(
        storage,
        key,
        "https://owner.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    let elsewhere = endpoint(
        storage,
        stranger,
        "https://stranger.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    order_for(storage, key).await;
    order_for(storage, key).await;
    order_for(storage, stranger).await;
    let log = oldest_first(storage, &hook).await;
    assert_eq!(log.len(), 2);
    let theirs = deliveries(storage, &elsewhere).await;
    assert_eq!(theirs.len(), 1);
    let t = unix_now();
    let claimed = claim(storage, claim_at(t + 1, 10, 21)).await;
    assert_eq!(claimed.len(), 3);
    let (d1, d2) = (&log[0], &log[1]);
    for record in [
        attempt(d1.id, 21, t + 1, Some(200), AttemptResult::Delivered),
        attempt(d2.id, 21, t + 1, Some(500), AttemptResult::GaveUp),
        attempt(theirs[0].id, 21, t + 1, Some(200), AttemptResult::Delivered),
    ] {
        assert!(recorded(storage, &record).await, "{record:?}");
    }
    assert_eq!(
        delivery(storage, &hook, d2.id).await.0.state,
        DeliveryState::Failed
    );
    assert!(
        refreshed(storage, &hook).await.enabled,
        "delivered to since: kept on"
    );

    let r = t + 2;
    let redeliver = async |endpoint: i64, id: i64, owner: EndpointOwner| {
        storage
            .redeliver_webhook(endpoint, id, owner, r)
            .await
            .expect("redeliver")
    };
    assert_eq!(
        redeliver(hook.id, d2.id + 1_000, key).await,
        None,
        "unknown"
    );
    assert_eq!(
        redeliver(hook.id, d1.id, stranger).await,
        None,
        "not theirs"
    );
    assert_eq!(
        redeliver(hook.id, d1.id, EndpointOwner::Operator).await,
        None,
        "not the operators'"
    );
    assert_eq!(
        redeliver(elsewhere.id, d1.id, stranger).await,
        None,
        "not that endpoint's delivery"
    );
    assert_eq!(
        storage
            .find_webhook_delivery(hook.id, d1.id, stranger)
            .await
            .expect("find"),
        None
    );
    assert_eq!(
        storage
            .list_webhook_deliveries(
                hook.id,
                stranger,
                PageRequest {
                    limit: Limit::MAX,
                    after: None,
                },
            )
            .await
            .expect("list"),
        None
    );
    assert_eq!(
        delivery(storage, &hook, d1.id).await.0.state,
        DeliveryState::Delivered,
        "untouched"
    );
    assert_eq!(
        delivery(storage, &elsewhere, theirs[0].id).await.0.state,
        DeliveryState::Delivered,
        "untouched"
    );

    for sent in [d1, d2] {
        let again = redeliver(hook.id, sent.id, key)
            .await
            .expect("the key's delivery");
        assert_eq!(
            (
                again.id,
                again.event_id.as_str(),
                again.body.as_str(),
                again.state,
                again.next_attempt_at,
                again.attempts
            ),
            (
                sent.id,
                sent.event_id.as_str(),
                sent.body.as_str(),
                DeliveryState::Pending,
                Some(r),
                1
            ),
            "pending again, its attempt kept"
        );
    }
    let due = claim(storage, claim_at(r, 10, 22)).await;
    assert_eq!(ids(&due), vec![d1.id, d2.id], "claimed again");
    for again in &due {
        let sent = if again.id == d1.id { d1 } else { d2 };
        assert_eq!(again.event_id, sent.event_id, "the same event id");
        assert_eq!(again.tries, 0, "its schedule from the start");
    }
}

/// The current secret and the previous one while its grace lasts.
async fn signing_secrets(
    storage: &dyn Storage,
    now: i64,
    token: i64,
    due_again: i64,
) -> Vec<SigningSecret> {
    let claimed = claim(storage, claim_at(now, 10, token)).await;
    assert_eq!(claimed.len(), 1, "the one delivery");
    let due = &claimed[0];
    // Released for the next claim: a retry due at once.
    let retry = attempt(
        due.id,
        token,
        now,
        Some(500),
        AttemptResult::RetryAt(due_again),
    );
    assert!(recorded(storage, &retry).await);
    due.secrets.clone()
}

/// A rotation gives the endpoint a new secret, shown once; a claim then signs with the new one
/// first and the old one second until the grace given, with the new one alone after it (or when
/// the grace is already over). Only the owner rotates.
pub async fn a_rotated_secret_keeps_signing_until_its_grace_ends(storage: &dyn Storage) {
    let key = new_key(storage, "rotating").await;
    let stranger = new_key(storage, "stranger").await;
    let (hook, original) = storage
        .create_webhook_endpoint(
            key,
            &spec("https://rotating.example.com/hooks", EventSet::ALL),
        )
        .await
        .expect("create")
        .done()
        .expect("under the limit");
    let t = unix_now();
    let grace = t + 3_600;
    for outsider in [stranger, EndpointOwner::Operator] {
        assert!(
            storage
                .rotate_webhook_secret(hook.id, outsider, grace)
                .await
                .expect("rotate")
                .is_none(),
            "{outsider:?} rotates no endpoint of another's"
        );
    }
    assert!(
        storage
            .rotate_webhook_secret(hook.id + 1_000, key, grace)
            .await
            .expect("rotate")
            .is_none(),
        "an unknown endpoint"
    );
    let (rotated, current) = storage
        .rotate_webhook_secret(hook.id, key, grace)
        .await
        .expect("rotate")
        .expect("the key's endpoint");
    assert_ne!(current, original, "a new secret");
    assert!(current.reveal().starts_with("whsec_"));
    assert_eq!(
        (rotated.id, rotated.previous_secret_expires_at),
        (hook.id, Some(grace))
    );
    assert_eq!(
        refreshed(storage, &hook).await.previous_secret_expires_at,
        Some(grace)
    );
    order_for(storage, key).await;
    assert_eq!(
        signing_secrets(storage, t + 1, 31, t + 1).await,
        vec![current.clone(), original.clone()],
        "the new secret first, the old while its grace lasts"
    );
    assert_eq!(
        signing_secrets(storage, grace + 1, 32, t + 1).await,
        vec![current.clone()],
        "after the grace, the new one alone"
    );
    let (rotated, newest) = storage
        .rotate_webhook_secret(hook.id, key, t - 10)
        .await
        .expect("rotate")
        .expect("the key's endpoint");
    assert_ne!(newest, current);
    assert_eq!(
        rotated.previous_secret_expires_at, None,
        "a grace over already"
    );
    assert_eq!(
        signing_secrets(storage, t + 2, 33, t + 1).await,
        vec![newest],
        "a grace over already: the new one alone"
    );
}

/// Four claims at once, each of ten, over twenty due deliveries: no delivery is claimed twice,
/// at least ten are claimed, and the next claim takes exactly those left.
pub async fn racing_claims_never_share_a_delivery(storage: &dyn Storage) {
    let hook = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/pets",
        only(&[EventType::PetCreated]),
    )
    .await;
    for n in 0..20 {
        add(storage, &format!("pet {n}"), PetStatus::Available).await;
    }
    let all: HashSet<i64> = deliveries(storage, &hook)
        .await
        .iter()
        .map(|sent| sent.id)
        .collect();
    assert_eq!(all.len(), 20);
    let now = unix_now() + 1;
    let claims: Vec<DeliveryClaim> = (1..=4).map(|token| claim_at(now, 10, token)).collect();
    let results = join_all(
        claims
            .iter()
            .map(|claim| storage.claim_webhook_deliveries(claim)),
    )
    .await;
    let mut seen = HashSet::new();
    for (claim, result) in claims.iter().zip(results) {
        let claimed = result.expect("claim");
        assert!(claimed.len() <= 10, "over its limit: {}", claimed.len());
        for due in claimed {
            assert_eq!(due.lease, claim.token, "leased to its claim");
            assert!(all.contains(&due.id), "an unknown delivery {}", due.id);
            assert!(seen.insert(due.id), "delivery {} claimed twice", due.id);
        }
    }
    assert!(
        (10..=20).contains(&seen.len()),
        "{} claimed by four claims of ten",
        seen.len()
    );
    let rest: HashSet<i64> = claim(storage, claim_at(now, 20, 5))
        .await
        .iter()
        .map(|due| due.id)
        .collect();
    assert!(rest.is_disjoint(&seen), "a leased delivery claimed again");
    assert_eq!(
        rest.len() + seen.len(),
        20,
        "the rest claimed next, none lost"
    );
}

/// The backlog counts the pending deliveries and gives the oldest one's creation; a deleted
/// endpoint takes its deliveries with it; pruning deletes the deliveries that ended (delivered
/// or failed) before the time given, and only those.
pub async fn the_backlog_counts_what_waits_and_pruning_removes_what_ended(storage: &dyn Storage) {
    assert_eq!(backlog(storage).await, Backlog::default(), "nothing yet");
    let key = new_key(storage, "owner").await;
    let hook = endpoint(
        storage,
        key,
        "https://owner.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    let spare = endpoint(
        storage,
        key,
        "https://owner.example.com/spare",
        only(&[EventType::OrderPlaced]),
    )
    .await;
    for _ in 0..3 {
        order_for(storage, key).await;
    }
    let log = oldest_first(storage, &hook).await;
    let spares = deliveries(storage, &spare).await;
    let oldest = log.iter().chain(&spares).map(|sent| sent.created_at).min();
    assert_eq!(
        backlog(storage).await,
        Backlog {
            pending: 6,
            oldest_created_at: oldest,
        }
    );
    assert!(
        storage
            .delete_webhook_endpoint(spare.id, key)
            .await
            .expect("delete")
    );
    assert_eq!(
        backlog(storage).await,
        Backlog {
            pending: 3,
            oldest_created_at: log.iter().map(|sent| sent.created_at).min(),
        },
        "a deleted endpoint's deliveries go with it"
    );

    let t = unix_now();
    assert_eq!(claim(storage, claim_at(t + 1, 10, 41)).await.len(), 3);
    let (d1, d2, d3) = (log[0].id, log[1].id, log[2].id);
    for record in [
        attempt(d1, 41, t + 1, Some(200), AttemptResult::Delivered),
        attempt(d3, 41, t + 1, Some(500), AttemptResult::RetryAt(t + 100)),
        attempt(d2, 41, t + 1, Some(500), AttemptResult::GaveUp),
    ] {
        assert!(recorded(storage, &record).await, "{record:?}");
    }
    assert_eq!(
        backlog(storage).await,
        Backlog {
            pending: 1,
            oldest_created_at: Some(log[2].created_at),
        },
        "the one retried"
    );
    let prune = async |before: i64| {
        storage
            .prune_webhook_deliveries(before)
            .await
            .expect("prune")
    };
    assert_eq!(prune(t - 100).await, 0, "nothing ended before then");
    assert_eq!(prune(t + 1_000).await, 2, "the delivered and the failed");
    let find = async |id: i64| {
        storage
            .find_webhook_delivery(hook.id, id, key)
            .await
            .expect("find")
    };
    assert_eq!(find(d1).await, None);
    assert_eq!(find(d2).await, None);
    let (kept, attempts) = find(d3).await.expect("the pending delivery is kept");
    assert_eq!((kept.state, attempts.len()), (DeliveryState::Pending, 1));
    assert_eq!(
        deliveries(storage, &hook)
            .await
            .iter()
            .map(|sent| sent.id)
            .collect::<Vec<_>>(),
        vec![d3]
    );
    assert_eq!(prune(t + 1_000).await, 0, "pruned already");
    assert_eq!(backlog(storage).await.pending, 1);
}

/// A claim leaves alone the endpoints it is told to skip (the sender's per-endpoint bound),
/// and takes their deliveries once they are no longer skipped.
pub async fn a_claim_skips_the_endpoints_it_is_told_to(storage: &dyn Storage) {
    let key = new_key(storage, "skipper").await;
    let busy = endpoint(
        storage,
        key,
        "https://busy.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    let quiet = endpoint(
        storage,
        key,
        "https://quiet.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    order_for(storage, key).await;
    let now = unix_now() + 1;
    let mut skipping = claim_at(now, 10, 21);
    skipping.skip_endpoints = vec![busy.id];
    let claimed = claim(storage, skipping).await;
    assert_eq!(claimed.len(), 1, "the quiet endpoint's delivery alone");
    assert_eq!(claimed[0].endpoint_id, quiet.id);
    let rest = claim(storage, claim_at(now, 10, 22)).await;
    assert_eq!(rest.len(), 1, "the skipped one, once it is not skipped");
    assert_eq!(rest[0].endpoint_id, busy.id);
}

/// A deleted endpoint is gone at once: not found, not listed, not counted against the limit,
/// no event recorded for it, none of its deliveries claimed or counted as waiting. (How its
/// rows go is the backend's business.)
pub async fn a_deleted_endpoint_is_gone_at_once(storage: &dyn Storage) {
    let key = new_key(storage, "deleter").await;
    let hook = endpoint(
        storage,
        key,
        "https://deleted.example.com/hooks",
        EventSet::ALL,
    )
    .await;
    order_for(storage, key).await;
    assert!(
        storage
            .delete_webhook_endpoint(hook.id, key)
            .await
            .expect("delete")
    );
    assert!(
        !storage
            .delete_webhook_endpoint(hook.id, key)
            .await
            .expect("delete again"),
        "deleted once"
    );
    assert_eq!(found(storage, hook.id, key).await, None);
    assert!(listed(storage, key).await.is_empty());
    assert_eq!(
        storage
            .list_webhook_deliveries(hook.id, key, PageRequest::default())
            .await
            .expect("list"),
        None,
        "its log is no longer the key's to read"
    );
    order_for(storage, key).await;
    let now = unix_now() + 1;
    assert!(
        claim(storage, claim_at(now, 10, 31)).await.is_empty(),
        "nothing claimed for it, nothing recorded for it"
    );
    assert_eq!(backlog(storage).await.pending, 0);
    for n in 0..MAX_ENDPOINTS {
        endpoint(
            storage,
            key,
            &format!("https://again-{n}.example.com/hooks"),
            EventSet::ALL,
        )
        .await;
    }
}
