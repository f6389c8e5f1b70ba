//! The webhook outbox: each change records its event, with the change, as a pending delivery
//! to every enabled endpoint subscribed to it that is its key's or the operators'; an endpoint
//! turned off gets none and fails what it had waiting.

use std::collections::HashSet;

use petstore_domain::webhook::{DeliveryState, EndpointOwner, EventType};
use petstore_domain::{CreatePet, LifecycleError, OrderAction, OrderError, PetStatus, Storage};

use super::support::{add, draft};
use super::webhook_support::{
    backlog, body, catch_all, claim, claim_at, deliveries, deliveries_paged, delivery, endpoint,
    ids, new_key, only, order_for, order_of, place, refreshed, set_enabled, unix_now,
};

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
    let placed = only(&[EventType::OrderPlaced]);
    let created = only(&[EventType::PetCreated]);
    let orders_hook = endpoint(storage, mine, "https://mine.example.com/orders", placed).await;
    let pets_hook = endpoint(storage, mine, "https://mine.example.com/pets", created).await;
    let their_hook = catch_all(storage, theirs, "https://theirs.example.com/all").await;
    let operators_hook = catch_all(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/all",
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

    let refused = place(storage, &rex, mine).await;
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
    let hook = catch_all(storage, key, "https://buyer.example.com/hooks").await;
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
    let paused = catch_all(storage, key, "https://owner.example.com/paused").await;
    let running = catch_all(storage, key, "https://owner.example.com/running").await;
    order_for(storage, key).await;
    let waiting = deliveries(storage, &paused).await;
    assert_eq!(waiting.len(), 1);
    let off = set_enabled(storage, &paused, false).await;
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

    let on = set_enabled(storage, &paused, true).await;
    assert!(on.enabled, "turned on");
    assert_eq!(on.disabled_reason, None, "its reason cleared");
    order_for(storage, key).await;
    let log = deliveries(storage, &paused).await;
    assert_eq!(log.len(), 2, "events again once on");
    assert_eq!(log[0].state, DeliveryState::Pending);
}
