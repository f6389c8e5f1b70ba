//! Webhook endpoints: made, read, changed and deleted by their owner only, at most
//! `MAX_ENDPOINTS` an owner, gone at once when deleted, and their secret rotated with a grace
//! for the old one.

use petstore_domain::webhook::{
    AttemptResult, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointWrite, EventSet, EventType,
    MAX_ENDPOINTS, SigningSecret, WebhookEndpoint,
};
use petstore_domain::{PageRequest, Storage};

use super::webhook_support::{
    attempt, backlog, catch_all, changed, claim, claim_at, created, deleted, found, listed,
    new_key, only, order_for, recorded, refreshed, rotated, spec, unix_now, url,
};

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
    let (first, secret) = created(storage, mine, &wanted).await;
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
    let second_spec = spec("https://hooks.example.com/second", EventSet::ALL);
    let (second, other_secret) = created(storage, mine, &second_spec).await;
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
    let operators = catch_all(
        storage,
        EndpointOwner::Operator,
        "https://ops.example.com/hooks",
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
            changed(storage, first.id, stranger, &update).await,
            EndpointWrite::NotFound,
            "{stranger:?} changes no endpoint of another's"
        );
    }
    assert_eq!(found(storage, first.id, mine).await, Some(first.clone()));
    let updated = changed(storage, first.id, mine, &update)
        .await
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
        changed(storage, first.id, mine, &EndpointUpdate::default()).await,
        EndpointWrite::Done(updated),
        "an empty update changes nothing"
    );

    for stranger in [theirs, EndpointOwner::Operator] {
        assert!(
            !deleted(storage, first.id, stranger).await,
            "{stranger:?} deletes no endpoint of another's"
        );
    }
    assert!(found(storage, first.id, mine).await.is_some());
    assert!(deleted(storage, first.id, mine).await);
    assert_eq!(found(storage, first.id, mine).await, None);
    assert!(!deleted(storage, first.id, mine).await, "deleted already");
    assert_eq!(
        changed(storage, first.id, mine, &update).await,
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
        let one = create(key, n).await;
        made.push(one.unwrap_or_else(|| panic!("endpoint {n} of {MAX_ENDPOINTS} refused")));
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
    assert!(deleted(storage, made[0].id, key).await);
    assert!(
        create(key, 0).await.is_some(),
        "a deleted endpoint makes room"
    );
    assert_eq!(create(key, 1).await, None, "for one");
    assert_eq!(listed(storage, key).await.len(), MAX_ENDPOINTS);
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
    let wanted = spec("https://rotating.example.com/hooks", EventSet::ALL);
    let (hook, original) = created(storage, key, &wanted).await;
    let t = unix_now();
    let grace = t + 3_600;
    for outsider in [stranger, EndpointOwner::Operator] {
        assert!(
            rotated(storage, hook.id, outsider, grace).await.is_none(),
            "{outsider:?} rotates no endpoint of another's"
        );
    }
    assert!(
        rotated(storage, hook.id + 1_000, key, grace)
            .await
            .is_none(),
        "an unknown endpoint"
    );
    let (renewed, current) = rotated(storage, hook.id, key, grace)
        .await
        .expect("the key's endpoint");
    assert_ne!(current, original, "a new secret");
    assert!(current.reveal().starts_with("whsec_"));
    assert_eq!(
        (renewed.id, renewed.previous_secret_expires_at),
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
    let (renewed, newest) = rotated(storage, hook.id, key, t - 10)
        .await
        .expect("the key's endpoint");
    assert_ne!(newest, current);
    assert_eq!(
        renewed.previous_secret_expires_at, None,
        "a grace over already"
    );
    assert_eq!(
        signing_secrets(storage, t + 2, 33, t + 1).await,
        vec![newest],
        "a grace over already: the new one alone"
    );
}

/// A deleted endpoint is gone at once: not found, not listed, not counted against the limit,
/// no event recorded for it, none of its deliveries claimed or counted as waiting. (How its
/// rows go is the backend's business.)
pub async fn a_deleted_endpoint_is_gone_at_once(storage: &dyn Storage) {
    let key = new_key(storage, "deleter").await;
    let hook = catch_all(storage, key, "https://deleted.example.com/hooks").await;
    order_for(storage, key).await;
    assert!(deleted(storage, hook.id, key).await);
    assert!(!deleted(storage, hook.id, key).await, "deleted once");
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
        catch_all(
            storage,
            key,
            &format!("https://again-{n}.example.com/hooks"),
        )
        .await;
    }
}
