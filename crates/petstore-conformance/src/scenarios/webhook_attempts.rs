//! Webhook attempts made together: every attempt a sender made is recorded, even when its
//! delivery ended while it was under way.

use petstore_domain::webhook::{
    AttemptResult, DeliveryState, EndpointOwner, EndpointUpdate, EventType,
};
use petstore_domain::{PetStatus, Storage};

use super::support::add;
use super::webhooks::{attempt, claim, claim_at, delivery, endpoint, only, recorded, unix_now};

/// Three deliveries of one endpoint sent at once, each answered `410`: the first recorded
/// turns the endpoint off and fails the others, whose attempts were made all the same and are
/// recorded (an attempt each, with its status) when they end, the deliveries staying failed.
/// They decide nothing more: the endpoint, turned on again meanwhile, stays on.
pub async fn attempts_under_way_when_their_endpoint_turns_off_are_recorded(storage: &dyn Storage) {
    let hook = endpoint(
        storage,
        EndpointOwner::Operator,
        "https://gone.example.com/h",
        only(&[EventType::PetCreated]),
    )
    .await;
    for n in 0..3 {
        add(storage, &format!("pet {n}"), PetStatus::Available).await;
    }
    let now = unix_now() + 1;
    let claimed = claim(storage, claim_at(now, 3, 11)).await;
    assert_eq!(claimed.len(), 3);
    for (n, due) in claimed.iter().enumerate() {
        let record = attempt(due.id, due.lease, now, Some(410), AttemptResult::Gone);
        assert!(
            recorded(storage, &record).await,
            "delivery {}'s attempt was made: it is recorded",
            due.id
        );
        if n == 0 {
            let on = EndpointUpdate {
                enabled: Some(true),
                ..EndpointUpdate::default()
            };
            let turned_on = storage
                .update_webhook_endpoint(hook.id, hook.owner, &on)
                .await
                .expect("update")
                .done()
                .expect("found");
            assert!(turned_on.enabled, "on again");
        }
    }
    let after = storage
        .find_webhook_endpoint(hook.id, hook.owner)
        .await
        .expect("find")
        .expect("found");
    assert!(
        after.enabled,
        "an attempt of a delivery ended before turned it off again"
    );
    for due in &claimed {
        let (sent, attempts) = delivery(storage, &hook, due.id).await;
        assert_eq!(sent.state, DeliveryState::Failed, "{sent:?}");
        assert_eq!(
            (sent.attempts, sent.last_status),
            (1, Some(410)),
            "{sent:?}"
        );
        assert_eq!(attempts.len(), 1, "{attempts:?}");
        // Recorded once: the claim holds it no more.
        let again = attempt(due.id, due.lease, now, Some(410), AttemptResult::Gone);
        assert!(!recorded(storage, &again).await, "recorded twice");
    }
}
