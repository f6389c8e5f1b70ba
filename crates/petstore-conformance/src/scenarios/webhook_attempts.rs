//! Webhook attempts: what an attempt makes of its delivery and endpoint (delivered, retried,
//! given up on, gone), and every attempt a sender made recorded, even when its delivery ended
//! while it was under way.

use petstore_domain::Storage;
use petstore_domain::webhook::{
    Attempt, AttemptRecord, AttemptResult, Delivery, DeliveryState, EventType,
};

use super::webhook_support::{
    attempt, catch_all, claim, claim_at, claimed_delivery, claimed_ids, deliveries, delivery,
    endpoint, ids, new_delivery, new_key, only, order_for, pets_created, record_all, recorded,
    recorded_together, refreshed, set_enabled, unix_now,
};

/// Where `delivery` stands: its state, attempts made, next attempt's time and last status.
fn standing(d: &Delivery) -> (DeliveryState, u32, Option<i64>, Option<u16>) {
    (d.state, d.attempts, d.next_attempt_at, d.last_status)
}

/// What an attempt makes of its delivery and endpoint: delivered (one attempt shown, with its
/// status and latency; recorded again, refused); retried at a time (pending, not claimed before
/// it); given up on (failed; the endpoint turned off if nothing was delivered to it since the
/// event, kept on if something was); gone (failed, the endpoint off and its other pending
/// deliveries failed).
pub async fn attempts_decide_what_becomes_of_a_delivery_and_its_endpoint(storage: &dyn Storage) {
    let key = new_key(storage, "customer").await;
    let hook = catch_all(storage, key, "https://customer.example.com/hooks").await;

    // Delivered.
    let (d1, t) = claimed_delivery(storage, &hook, 71).await;
    let ok = AttemptRecord {
        latency_ms: 123,
        ..attempt(d1, 71, t + 1, Some(200), AttemptResult::Delivered)
    };
    assert!(recorded(storage, &ok).await);
    let (sent, attempts) = delivery(storage, &hook, d1).await;
    assert_eq!(
        (standing(&sent), sent.last_latency_ms),
        ((DeliveryState::Delivered, 1, None, Some(200)), Some(123))
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
    let (d2, t2) = claimed_delivery(storage, &hook, 72).await;
    let retry_at = t2 + 100;
    let retry = AttemptRecord {
        error: Some("HTTP 503: 'busy' \u{2014} try later".to_owned()),
        ..attempt(d2, 72, t2 + 1, Some(503), AttemptResult::RetryAt(retry_at))
    };
    assert!(recorded(storage, &retry).await);
    let (waiting, attempts) = delivery(storage, &hook, d2).await;
    assert_eq!(
        (standing(&waiting), waiting.last_error.as_deref()),
        (
            (DeliveryState::Pending, 1, Some(retry_at), Some(503)),
            retry.error.as_deref()
        )
    );
    assert_eq!(
        attempts,
        vec![Attempt {
            attempted_at: t2 + 1,
            status: Some(503),
            latency_ms: 25,
            error: retry.error.clone(),
        }]
    );
    assert!(
        !recorded(storage, &retry).await,
        "a retried delivery is no claim's until it is claimed again"
    );
    assert!(
        claimed_ids(storage, retry_at - 1, 73).await.is_empty(),
        "not due before its retry"
    );
    let retried = claim(storage, claim_at(retry_at, 10, 73)).await;
    assert_eq!(ids(&retried), vec![d2], "due at its retry");
    assert_eq!(retried[0].tries, 1, "one attempt made");

    // Given up on, something delivered to the endpoint since its event: the endpoint stays on.
    let (d3, _) = new_delivery(storage, &hook).await;
    assert_eq!(
        claimed_ids(storage, retry_at, 74).await,
        vec![d3],
        "the retried one is leased"
    );
    let records = [
        attempt(d3, 74, retry_at, Some(204), AttemptResult::Delivered),
        attempt(d2, 73, retry_at + 1, Some(500), AttemptResult::GaveUp),
    ];
    record_all(storage, &records).await;
    let (failed, attempts) = delivery(storage, &hook, d2).await;
    assert_eq!(
        standing(&failed),
        (DeliveryState::Failed, 2, None, Some(500))
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
    let (d4, t4) = claimed_delivery(storage, &broken, 75).await;
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
    let gone = catch_all(storage, third, "https://gone.example.com/hooks").await;
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
    let gone_away = attempt(answered, 76, t5 + 1, Some(410), AttemptResult::Gone);
    assert!(recorded(storage, &gone_away).await);
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

/// Four deliveries of one endpoint sent at once: the first answered `410`, recorded first,
/// turns the endpoint off and fails the others, whose attempts (one answered `410` too, one
/// delivered, one to be retried) were made all the same and are recorded (an attempt each,
/// with its status) when they end, the deliveries staying failed. They decide nothing more:
/// the endpoint, turned on again meanwhile, stays on.
pub async fn attempts_under_way_when_their_endpoint_turns_off_are_recorded(storage: &dyn Storage) {
    let hook = pets_created(storage, "https://gone.example.com/h", 4).await;
    let now = unix_now() + 1;
    let claimed = claim(storage, claim_at(now, 4, 11)).await;
    assert_eq!(claimed.len(), 4);
    let answers = [
        (Some(410), AttemptResult::Gone),
        (Some(410), AttemptResult::Gone),
        (Some(200), AttemptResult::Delivered),
        (Some(503), AttemptResult::RetryAt(now + 600)),
    ];
    for (n, (due, (status, result))) in claimed.iter().zip(answers).enumerate() {
        let record = attempt(due.id, due.lease, now, status, result);
        assert!(
            recorded(storage, &record).await,
            "delivery {}'s attempt was made: it is recorded",
            due.id
        );
        if n == 0 {
            let turned_on = set_enabled(storage, &hook, true).await;
            assert!(turned_on.enabled, "on again");
        }
    }
    let after = refreshed(storage, &hook).await;
    assert!(
        after.enabled,
        "an attempt of a delivery ended before turned it off again"
    );
    for (due, (status, result)) in claimed.iter().zip(answers) {
        let (sent, attempts) = delivery(storage, &hook, due.id).await;
        assert_eq!(
            (
                sent.state,
                sent.attempts,
                sent.next_attempt_at,
                sent.last_status
            ),
            (DeliveryState::Failed, 1, None, status),
            "{result:?}: {sent:?}"
        );
        assert_eq!(
            attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
            vec![status],
            "{result:?}"
        );
        // Recorded once: the claim holds it no more.
        let again = attempt(due.id, due.lease, now, status, result);
        assert!(
            !recorded(storage, &again).await,
            "{result:?}: recorded twice"
        );
    }
}

/// Attempts recorded in one call, as a sender records those that end together: each is
/// recorded as it would be alone, and answered in the order given (not the deliveries'). An
/// attempt whose claim no longer holds its delivery records nothing and does not stop the
/// others; two `410`s of one endpoint both count, the endpoint off once; another endpoint's
/// delivered attempt is untouched by it.
pub async fn attempts_recorded_together_are_each_recorded_as_alone(storage: &dyn Storage) {
    let key = new_key(storage, "together").await;
    let fine = catch_all(storage, key, "https://fine-together.example.com/hooks").await;
    order_for(storage, key).await;
    let gone = pets_created(storage, "https://gone-together.example.com/h", 3).await;
    let now = unix_now() + 1;
    let claimed = claim(storage, claim_at(now, 10, 21)).await;
    let of = |endpoint: i64| -> Vec<i64> {
        let mut found: Vec<i64> = claimed
            .iter()
            .filter(|due| due.endpoint_id == endpoint)
            .map(|due| due.id)
            .collect();
        found.sort_unstable();
        found
    };
    let (gone_ids, fine_ids) = (of(gone.id), of(fine.id));
    assert_eq!((gone_ids.len(), fine_ids.len()), (3, 1), "{claimed:?}");
    // The newest first, a stale claim's attempt between them.
    let records = [
        attempt(fine_ids[0], 21, now, Some(200), AttemptResult::Delivered),
        attempt(gone_ids[2], 21, now, Some(410), AttemptResult::Gone),
        attempt(gone_ids[1], 99, now, Some(200), AttemptResult::Delivered),
        attempt(gone_ids[0], 21, now, Some(410), AttemptResult::Gone),
    ];
    assert_eq!(
        recorded_together(storage, &records).await,
        vec![true, true, false, true],
        "in the order given; the stale claim's attempt is not recorded"
    );
    let off = refreshed(storage, &gone).await;
    assert!(
        !off.enabled && off.disabled_reason.is_some(),
        "gone: turned off, {off:?}"
    );
    for (id, attempts) in [(gone_ids[0], 1), (gone_ids[1], 0), (gone_ids[2], 1)] {
        let (sent, made) = delivery(storage, &gone, id).await;
        assert_eq!(sent.state, DeliveryState::Failed, "{sent:?}");
        assert_eq!(
            (sent.attempts, made.len()),
            (attempts, attempts as usize),
            "{sent:?}"
        );
    }
    let (sent, made) = delivery(storage, &fine, fine_ids[0]).await;
    assert_eq!(
        (sent.state, sent.last_status, made.len()),
        (DeliveryState::Delivered, Some(200), 1)
    );
    assert!(refreshed(storage, &fine).await.enabled, "untouched");
    assert!(
        recorded_together(storage, &[]).await.is_empty(),
        "nothing to record, nothing recorded"
    );
}
