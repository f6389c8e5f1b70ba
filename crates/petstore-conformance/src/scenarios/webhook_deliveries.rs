//! Webhook deliveries once sent: one is sent again on its owner's request, the backlog counts
//! what waits, and pruning removes what ended.

use petstore_domain::webhook::{
    AttemptResult, Backlog, DeliveryState, EndpointOwner, EventType, WebhookEndpoint,
};
use petstore_domain::{Limit, PageRequest, Storage};

use super::webhook_support::{
    attempt, backlog, catch_all, claim, claim_at, deleted, deliveries, delivery, delivery_ids,
    delivery_of, endpoint, ids, new_key, oldest_first, only, order_for, record_all, redelivered,
    refreshed, unix_now,
};

/// A delivery, delivered or failed, is sent again on request: pending from the time given, its
/// schedule from the start, its event id and body kept, claimed again. Nothing of another
/// owner's, no unknown delivery, and no delivery of another endpoint is.
pub async fn a_delivery_is_sent_again_on_request(storage: &dyn Storage) {
    let key = new_key(storage, "owner").await;
    let stranger = new_key(storage, "stranger").await;
    let hook = catch_all(storage, key, "https://owner.example.com/hooks").await;
    let elsewhere = catch_all(storage, stranger, "https://stranger.example.com/hooks").await;
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
    let records = [
        attempt(d1.id, 21, t + 1, Some(200), AttemptResult::Delivered),
        attempt(d2.id, 21, t + 1, Some(500), AttemptResult::GaveUp),
        attempt(theirs[0].id, 21, t + 1, Some(200), AttemptResult::Delivered),
    ];
    record_all(storage, &records).await;
    assert_eq!(
        delivery(storage, &hook, d2.id).await.0.state,
        DeliveryState::Failed
    );
    assert!(
        refreshed(storage, &hook).await.enabled,
        "delivered to since: kept on"
    );

    let r = t + 2;
    let redeliver = async |endpoint: &WebhookEndpoint, id: i64, owner: EndpointOwner| {
        redelivered(storage, endpoint, id, owner, r).await
    };
    assert_eq!(redeliver(&hook, d2.id + 1_000, key).await, None, "unknown");
    assert_eq!(redeliver(&hook, d1.id, stranger).await, None, "not theirs");
    assert_eq!(
        redeliver(&hook, d1.id, EndpointOwner::Operator).await,
        None,
        "not the operators'"
    );
    assert_eq!(
        redeliver(&elsewhere, d1.id, stranger).await,
        None,
        "not that endpoint's delivery"
    );
    assert_eq!(delivery_of(storage, &hook, d1.id, stranger).await, None);
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
        let again = redeliver(&hook, sent.id, key)
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

/// The backlog counts the pending deliveries and gives the oldest one's creation; a deleted
/// endpoint takes its deliveries with it; pruning deletes the deliveries that ended (delivered
/// or failed) before the time given, and only those.
pub async fn the_backlog_counts_what_waits_and_pruning_removes_what_ended(storage: &dyn Storage) {
    assert_eq!(backlog(storage).await, Backlog::default(), "nothing yet");
    let key = new_key(storage, "owner").await;
    let hook = catch_all(storage, key, "https://owner.example.com/hooks").await;
    let placed = only(&[EventType::OrderPlaced]);
    let spare = endpoint(storage, key, "https://owner.example.com/spare", placed).await;
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
    assert!(deleted(storage, spare.id, key).await);
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
    let records = [
        attempt(d1, 41, t + 1, Some(200), AttemptResult::Delivered),
        attempt(d3, 41, t + 1, Some(500), AttemptResult::RetryAt(t + 100)),
        attempt(d2, 41, t + 1, Some(500), AttemptResult::GaveUp),
    ];
    record_all(storage, &records).await;
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
    let find = async |id: i64| delivery_of(storage, &hook, id, key).await;
    assert_eq!(find(d1).await, None);
    assert_eq!(find(d2).await, None);
    let (kept, attempts) = find(d3).await.expect("the pending delivery is kept");
    assert_eq!((kept.state, attempts.len()), (DeliveryState::Pending, 1));
    assert_eq!(delivery_ids(storage, &hook).await, vec![d3]);
    assert_eq!(prune(t + 1_000).await, 0, "pruned already");
    assert_eq!(backlog(storage).await.pending, 1);
}
