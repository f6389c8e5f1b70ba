//! Webhooks between owners: a claim takes owners in turn within their room, an owner has one
//! endpoint per URL, creates at once hold the limits (the operators' too), and a revoked or
//! expired key's events are neither recorded nor sent.

use futures_util::future::join_all;
use petstore_domain::Storage;
use petstore_domain::webhook::{
    DeliveryState, EndpointOwner, EndpointUpdate, EndpointWrite, EventSet, EventType, MAX_ENDPOINTS,
};

use super::support::expiring_key;
use super::webhook_support::{
    backlog, catch_all, changed, claim, claim_at, deleted, deliveries, delivery_ids, endpoint,
    found, listed, new_key, only, order_for, set_enabled, spec, unix_now, url,
};

/// One owner's deliveries are the oldest, yet a claim takes the next delivery of each other
/// owner with them (owners in turn, among the oldest it looks at); an owner with no room gets
/// nothing; each owner's share is bounded by the claim's `per_owner`.
pub async fn claims_take_owners_in_turn_within_their_room(storage: &dyn Storage) {
    let (busy, quiet) = (
        new_key(storage, "busy").await,
        new_key(storage, "quiet").await,
    );
    let events = only(&[EventType::OrderPlaced]);
    let busy_hook = endpoint(storage, busy, "https://busy.example.com/h", events).await;
    for _ in 0..3 {
        order_for(storage, busy).await;
    }
    let quiet_hook = endpoint(storage, quiet, "https://quiet.example.com/h", events).await;
    let ops_hook = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/h",
        events,
    )
    .await;
    order_for(storage, quiet).await;
    // The operators' endpoint came after the busy key's orders: the quiet key's is the newest.
    let (busy_ids, quiet_ids) = (
        delivery_ids(storage, &busy_hook).await,
        delivery_ids(storage, &quiet_hook).await,
    );
    assert_eq!((busy_ids.len(), quiet_ids.len()), (3, 1));
    let now = unix_now() + 1;

    let mut first = claim_at(now, 4, 1);
    first.per_owner = 2;
    let claimed = claim(storage, first).await;
    let owners: Vec<EndpointOwner> = claimed.iter().map(|due| due.owner).collect();
    assert_eq!(claimed.len(), 4, "{owners:?}");
    assert!(
        claimed.iter().any(|due| due.id == quiet_ids[0]),
        "the quiet key's delivery waits for no other owner's backlog: {owners:?}"
    );
    let busy_taken = owners.iter().filter(|taken| **taken == busy).count();
    assert_eq!(
        busy_taken, 2,
        "per_owner, the rest to the others: {owners:?}"
    );
    assert_eq!(
        owners
            .iter()
            .filter(|taken| **taken == EndpointOwner::Operator)
            .count(),
        1
    );
    for due in &claimed {
        let owner = match due.endpoint_id {
            id if id == ops_hook.id => EndpointOwner::Operator,
            id if id == quiet_hook.id => quiet,
            _ => busy,
        };
        assert_eq!(
            due.owner, owner,
            "delivery {} names its endpoint's owner",
            due.id
        );
    }

    // Only the busy key's one is left: with no room it gets none, whatever its age; with
    // room, it.
    let mut full = claim_at(now, 4, 2);
    full.owner_room = vec![(busy, 0)];
    assert!(
        claim(storage, full).await.is_empty(),
        "an owner without room was claimed"
    );
    let mut some = claim_at(now, 4, 3);
    some.owner_room = vec![(busy, 3)];
    let claimed = claim(storage, some).await;
    assert_eq!(claimed.len(), 3 - busy_taken);
    assert!(claimed.iter().all(|due| due.owner == busy));
}

/// An owner has one endpoint per receiver (its URL normalised, the query aside): a second
/// create, or a change of URL onto another of its endpoints', is refused naming the one that
/// has it; another owner
/// may use the URL, and a deleted endpoint frees it.
pub async fn an_owner_has_one_endpoint_per_url(storage: &dyn Storage) {
    let (mine, theirs) = (
        new_key(storage, "mine").await,
        new_key(storage, "theirs").await,
    );
    let first = catch_all(storage, mine, "https://hooks.example.com/a").await;
    let create = async |owner, text: &str| {
        storage
            .create_webhook_endpoint(owner, &spec(text, EventSet::ALL))
            .await
            .expect("create")
    };
    assert_eq!(
        create(mine, "https://HOOKS.example.com/a").await,
        EndpointWrite::UrlTaken(first.id),
        "the same URL once normalised"
    );
    assert_eq!(
        create(mine, "https://hooks.example.com/a?copy=2").await,
        EndpointWrite::UrlTaken(first.id),
        "the same receiver, whatever the query"
    );
    assert!(
        create(theirs, "https://hooks.example.com/a")
            .await
            .done()
            .is_some()
    );
    assert!(
        create(EndpointOwner::Operator, "https://hooks.example.com/a")
            .await
            .done()
            .is_some()
    );
    let second = create(mine, "https://hooks.example.com/b")
        .await
        .done()
        .expect("another URL")
        .0;
    let onto_first = EndpointUpdate {
        url: Some(url("https://hooks.example.com/a")),
        ..EndpointUpdate::default()
    };
    assert_eq!(
        changed(storage, second.id, mine, &onto_first).await,
        EndpointWrite::UrlTaken(first.id)
    );
    assert_eq!(
        found(storage, second.id, mine).await,
        Some(second.clone()),
        "unchanged"
    );
    // Its own URL again is no conflict.
    let same = EndpointUpdate {
        url: Some(url("https://hooks.example.com/b")),
        ..EndpointUpdate::default()
    };
    assert_eq!(
        changed(storage, second.id, mine, &same).await,
        EndpointWrite::Done(second.clone())
    );
    assert!(deleted(storage, first.id, mine).await);
    assert!(
        create(mine, "https://hooks.example.com/a")
            .await
            .done()
            .is_some(),
        "a deleted endpoint frees its URL"
    );
}

/// Creates at once never pass an owner's limit nor register one URL twice: forty creates of
/// distinct URLs by the operators (who have no key row) make exactly [`MAX_ENDPOINTS`], and
/// eight creates of one URL by a key make one.
pub async fn creates_at_once_keep_the_limit_and_one_endpoint_per_url(storage: &dyn Storage) {
    let specs: Vec<_> = (0..MAX_ENDPOINTS * 2)
        .map(|n| spec(&format!("https://ops.example.com/{n}"), EventSet::ALL))
        .collect();
    let results = join_all(
        specs
            .iter()
            .map(|spec| storage.create_webhook_endpoint(EndpointOwner::Operator, spec)),
    )
    .await;
    let made = results
        .into_iter()
        .map(|result| result.expect("create"))
        .filter(|written| matches!(written, EndpointWrite::Done(_)))
        .count();
    assert_eq!(made, MAX_ENDPOINTS, "the operators' limit held");
    assert_eq!(
        listed(storage, EndpointOwner::Operator).await.len(),
        MAX_ENDPOINTS
    );

    let key = new_key(storage, "racer").await;
    let one = spec("https://racer.example.com/hook", EventSet::ALL);
    let results = join_all((0..8).map(|_| storage.create_webhook_endpoint(key, &one))).await;
    let made = results
        .into_iter()
        .map(|result| result.expect("create"))
        .filter(|written| matches!(written, EndpointWrite::Done(_)))
        .count();
    assert_eq!(made, 1, "one endpoint per URL held");
    assert_eq!(listed(storage, key).await.len(), 1);
}

/// A revoked key's, or an expired key's, events are no longer recorded for its endpoints,
/// its pending deliveries are no longer claimed nor counted in the backlog, and pruning ends
/// them as failed; its endpoints stay, listed, and can be turned off. The operators' endpoint
/// still gets every event.
pub async fn a_revoked_or_expired_keys_events_are_not_sent(storage: &dyn Storage) {
    let events = only(&[EventType::OrderPlaced]);
    let revoked = new_key(storage, "revoked").await;
    let now = unix_now();
    let (expired_key, _) = expiring_key(storage, "expiring", now + 2, now).await;
    let expired = EndpointOwner::Key(expired_key.id);
    let ops = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/h",
        events,
    )
    .await;
    let mut hooks = Vec::new();
    for (owner, host) in [(revoked, "revoked"), (expired, "expired")] {
        let hook = endpoint(
            storage,
            owner,
            &format!("https://{host}.example.com/h"),
            events,
        )
        .await;
        order_for(storage, owner).await;
        assert_eq!(
            deliveries(storage, &hook).await.len(),
            1,
            "recorded while it works"
        );
        hooks.push((owner, hook));
    }
    assert_eq!(backlog(storage).await.pending, 4);
    assert!(
        storage
            .revoke_key(revoked.key().expect("a key"))
            .await
            .expect("revoke")
    );
    // The expiring key's time runs out.
    while unix_now() < now + 2 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for (owner, hook) in &hooks {
        order_for(storage, *owner).await;
        assert_eq!(
            deliveries(storage, hook).await.len(),
            1,
            "{owner:?}: nothing more recorded"
        );
    }
    assert_eq!(
        deliveries(storage, &ops).await.len(),
        4,
        "the operators get every event"
    );
    assert_eq!(
        backlog(storage).await.pending,
        4,
        "the operators' four alone"
    );
    let claimed = claim(storage, claim_at(unix_now() + 1, 10, 7)).await;
    assert_eq!(claimed.len(), 4);
    assert!(
        claimed.iter().all(|due| due.endpoint_id == ops.id),
        "none of a revoked or expired key's"
    );
    storage
        .prune_webhook_deliveries(now - 3_600)
        .await
        .expect("prune");
    for (owner, hook) in &hooks {
        let left = deliveries(storage, hook).await;
        assert_eq!(left.len(), 1, "{owner:?}: kept in the log");
        assert_eq!(left[0].state, DeliveryState::Failed, "{owner:?}");
        assert!(
            left[0]
                .last_error
                .as_deref()
                .is_some_and(|why| why.contains("revoked or has expired")),
            "{owner:?}: {:?}",
            left[0].last_error
        );
        assert_eq!(
            listed(storage, *owner).await.len(),
            1,
            "{owner:?}: still listed"
        );
        let turned_off = set_enabled(storage, hook, false).await;
        assert!(!turned_off.enabled);
    }
}
