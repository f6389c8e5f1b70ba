//! What the scenarios share: a valid pet, a page, a walk of the catalogue, a new key.

use petstore_domain::{
    ApiKey, ApiKeySecret, CreatePet, KeySpec, Limit, PageRequest, Pet, PetDraft, PetListQuery,
    PetStatus, Plan, Storage,
};

/// A plain create of a valid pet.
pub(super) fn draft(name: &str, status: PetStatus) -> CreatePet {
    CreatePet::new(PetDraft::new(name, 1, status).expect("a valid draft"))
}

/// A pet created in `storage`.
pub(super) async fn add(storage: &dyn Storage, name: &str, status: PetStatus) -> Pet {
    storage
        .create_pet(&draft(name, status))
        .await
        .expect("create a pet")
}

/// The first page of `limit` pets after `after`, of `status` when given.
pub(super) fn page(limit: u32, after: Option<i64>, status: Option<PetStatus>) -> PetListQuery {
    PetListQuery {
        page: PageRequest {
            limit: Limit::new(limit).expect("a valid limit"),
            after,
        },
        status,
    }
}

/// Every pet reachable by following `next_after` from the start.
pub(super) async fn walk(storage: &dyn Storage, limit: u32, status: Option<PetStatus>) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page = storage
            .list_pets(&page(limit, after, status))
            .await
            .expect("list pets");
        assert!(
            page.items.len() <= limit as usize,
            "a page longer than its limit"
        );
        ids.extend(page.items.iter().map(|p| p.id));
        match page.next_after {
            Some(next) => after = Some(next),
            None => return ids,
        }
    }
}

/// A new free-plan key labelled `label`, with its secret.
pub(super) async fn free_key(storage: &dyn Storage, label: &str) -> (ApiKey, ApiKeySecret) {
    let spec = KeySpec::new(Plan::Free, label, None).expect("a valid spec");
    storage.create_key(&spec).await.expect("create a key")
}

/// A new free-plan key labelled `label`, made at `now`, that stops working at `at`.
pub(super) async fn expiring_key(
    storage: &dyn Storage,
    label: &str,
    at: i64,
    now: i64,
) -> (ApiKey, ApiKeySecret) {
    let spec = KeySpec::new(Plan::Free, label, None)
        .expect("a valid spec")
        .expiring_at(at, now)
        .expect("a valid expiry");
    storage.create_key(&spec).await.expect("create a key")
}
