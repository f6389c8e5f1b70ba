//! Webhook claims: a claim leases the deliveries due longest to itself, up to its limit and
//! past the endpoints it is told to skip, and claims at once never share a delivery; an attempt
//! is recorded only under the lease that holds its delivery.

use std::collections::HashSet;

use futures_util::future::join_all;
use petstore_domain::Storage;
use petstore_domain::webhook::{AttemptResult, DeliveryClaim, DeliveryState, EventType};

use super::webhook_support::{
    LEASE, attempt, catch_all, claim, claim_at, delivery, delivery_ids, ids, new_key, oldest_first,
    order_for, pets_created, recorded, redelivered, unix_now,
};

/// A claim takes at most its limit of due deliveries, the longest due first, and leases them:
/// a second claim before the lease ends skips them; one after it takes again those whose
/// attempt was not recorded. An attempt is recorded only with the token of the claim that
/// holds the delivery: with another, nothing changes.
pub async fn a_claim_leases_due_deliveries_to_itself(storage: &dyn Storage) {
    let key = new_key(storage, "sender").await;
    let hook = catch_all(storage, key, "https://sender.example.com/hooks").await;
    for _ in 0..3 {
        order_for(storage, key).await;
    }
    let log = oldest_first(storage, &hook).await;
    assert_eq!(log.len(), 3);
    let t = unix_now();
    // Due 30, 20 and 10 seconds ago, the oldest first.
    for (sent, ago) in log.iter().zip([30, 20, 10]) {
        let again = redelivered(storage, &hook, sent.id, key, t - ago)
            .await
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

/// Four claims at once, each of ten, over twenty due deliveries: no delivery is claimed twice,
/// at least ten are claimed, and the next claim takes exactly those left.
pub async fn racing_claims_never_share_a_delivery(storage: &dyn Storage) {
    let hook = pets_created(storage, "https://ops.example.com/pets", 20).await;
    let all: HashSet<i64> = delivery_ids(storage, &hook).await.into_iter().collect();
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

/// A claim leaves alone the endpoints it is told to skip (the sender's per-endpoint bound),
/// and takes their deliveries once they are no longer skipped.
pub async fn a_claim_skips_the_endpoints_it_is_told_to(storage: &dyn Storage) {
    let key = new_key(storage, "skipper").await;
    let busy = catch_all(storage, key, "https://busy.example.com/hooks").await;
    let quiet = catch_all(storage, key, "https://quiet.example.com/hooks").await;
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
