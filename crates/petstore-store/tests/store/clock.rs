//! The store's clock (`Store::with_clock`): what it stamps rows with and compares against moves
//! with it, so that rules that take minutes or days in production take a line in a test.

use std::sync::Arc;

use petstore_domain::webhook::{EndpointOwner, EndpointSpec, EndpointUrl, EventSet, UrlPolicy};
use petstore_domain::{
    ApiKeyRepository, CreatePet, KeySpec, ManualClock, PetDraft, PetRepository, PetStatus, Plan,
    WebhookRepository,
};
use petstore_store::for_each_backend;
use petstore_store::testing::TestDatabase;

/// When the tests' clock starts.
const T: u64 = 1_900_000_000;

fn endpoint(url: &str) -> EndpointSpec {
    EndpointSpec {
        url: EndpointUrl::parse(url, UrlPolicy::default()).expect("a valid URL"),
        events: EventSet::ALL,
        description: String::new(),
    }
}

/// A pet created by `creator` (a key's id; `None`: no key's), recording its `pet.created`.
async fn create_pet(store: &dyn PetRepository, creator: Option<i64>) {
    let mut pet = CreatePet::new(PetDraft::new("Rex", 1, PetStatus::Available).expect("draft"));
    pet.creator = creator;
    store.create_pet(&pet).await.expect("create");
}

async fn the_store_stamps_and_compares_by_its_clock(db: &TestDatabase) {
    let clock = Arc::new(ManualClock::at(T));
    let store = db.store().await.with_clock(clock.clone());
    let now = i64::try_from(T).expect("fits");

    // Stamped with the store's time.
    let spec = KeySpec::new(Plan::Free, "clock", None).expect("spec");
    let (key, _) = store.create_key(&spec).await.expect("key");
    assert_eq!(key.created_at, now);

    // A rotated-out secret's grace is shown while it lasts on the store's clock.
    let operators = EndpointOwner::Operator;
    let written = store
        .create_webhook_endpoint(operators, &endpoint("https://example.com/ops"))
        .await
        .expect("create");
    let (created, _) = written.done().expect("created");
    assert_eq!(created.created_at, now);
    let rotated = store
        .rotate_webhook_secret(created.id, operators, now + 100)
        .await
        .expect("rotate")
        .expect("found");
    assert_eq!(rotated.0.previous_secret_expires_at, Some(now + 100));
    clock.set(T + 101);
    let found = store
        .find_webhook_endpoint(created.id, operators)
        .await
        .expect("find")
        .expect("found");
    assert_eq!(found.previous_secret_expires_at, None, "the grace is over");

    // A deleted endpoint's deliveries are removed once it has been deleted for a minute on the
    // store's clock, not before.
    create_pet(&store, None).await;
    assert!(
        store
            .delete_webhook_endpoint(created.id, operators)
            .await
            .expect("delete")
    );
    clock.set(T + 101 + 30);
    assert_eq!(store.prune_webhook_deliveries(0).await.expect("prune"), 0);
    clock.set(T + 101 + 61);
    assert_eq!(store.prune_webhook_deliveries(0).await.expect("prune"), 1);

    // A key's pending deliveries end once the key has expired on the store's clock.
    let now = now + 162;
    let expiring = KeySpec::new(Plan::Free, "expiring", None)
        .expect("spec")
        .expiring_at(now + 10, now)
        .expect("in the future");
    let (expiring, _) = store.create_key(&expiring).await.expect("key");
    let owner = EndpointOwner::Key(expiring.id);
    store
        .create_webhook_endpoint(owner, &endpoint("https://example.com/key"))
        .await
        .expect("create");
    create_pet(&store, Some(expiring.id)).await;
    assert_eq!(store.prune_webhook_deliveries(0).await.expect("prune"), 0);
    clock.set(T + 162 + 11);
    assert_eq!(
        store.prune_webhook_deliveries(0).await.expect("prune"),
        1,
        "the expired key's delivery, failed"
    );
}

for_each_backend!(the_store_stamps_and_compares_by_its_clock);
