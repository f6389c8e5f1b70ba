//! Pets: creating, reading, paging.

use std::collections::HashSet;

use futures_util::future::join_all;
use petstore_domain::{PetListQuery, PetStatus, Storage};

use super::support::{add, draft, page, walk};

/// A created pet reads back, field for field, under its new id.
pub async fn a_created_pet_reads_back_with_its_new_id(storage: &dyn Storage) {
    let created = add(storage, "Rex", PetStatus::Pending).await;
    assert_eq!(created.name, "Rex");
    assert_eq!(created.status, PetStatus::Pending);
    assert_eq!(
        storage.find_pet(created.id).await.expect("find"),
        Some(created)
    );
}

/// 200 creates at once (8 callers of 25 each): every one answered is stored, each under an id
/// of its own, and a walk of the catalogue finds each once.
pub async fn concurrent_creates_all_commit_with_distinct_ids(storage: &dyn Storage) {
    let callers = (0..8).map(|caller| async move {
        let mut ids = Vec::new();
        for i in 0..25 {
            let pet = draft(&format!("c{caller} p{i}"), PetStatus::Pending);
            ids.push(storage.create_pet(&pet).await.expect("create").id);
        }
        ids
    });
    let ids: Vec<i64> = join_all(callers).await.into_iter().flatten().collect();
    let unique: HashSet<i64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 200, "every create has an id of its own");
    let mut expected: Vec<i64> = unique.into_iter().collect();
    expected.sort_unstable();
    assert_eq!(
        walk(storage, 100, None).await,
        expected,
        "every acknowledged pet is stored"
    );
}

/// No pet under an id never given: `None`, not an error.
pub async fn a_missing_pet_is_none(storage: &dyn Storage) {
    assert_eq!(storage.find_pet(424_242).await.expect("find"), None);
    assert_eq!(storage.find_pet(-1).await.expect("find"), None);
}

/// Names come back byte for byte: non-ASCII, emoji, white space at the ends, 255 characters,
/// quotes and SQL.
pub async fn names_are_stored_exactly(storage: &dyn Storage) {
    let long = "ü".repeat(255);
    for name in [
        "Mötley 🐶",
        " padded ",
        long.as_str(),
        "quote ' and \" and ;--",
    ] {
        let created = add(storage, name, PetStatus::Sold).await;
        let found = storage
            .find_pet(created.id)
            .await
            .expect("find")
            .expect("present");
        assert_eq!(found.name, name);
    }
}

/// Pages in ascending id order, by any page size and status, visit every pet once; a page
/// exactly full has no next page.
pub async fn paging_visits_every_pet_once_in_ascending_order(storage: &dyn Storage) {
    let statuses = [PetStatus::Available, PetStatus::Sold, PetStatus::Pending];
    let mut all = Vec::new();
    for i in 0..23 {
        let status = statuses[i % 3];
        all.push((add(storage, &format!("pet {i}"), status).await.id, status));
    }
    // Pages are in ascending id order, whatever order the ids were given in.
    all.sort_unstable_by_key(|(id, _)| *id);
    let every: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(walk(storage, 5, None).await, every);
    assert_eq!(walk(storage, 100, None).await, every);
    for status in statuses {
        let expected: Vec<i64> = all
            .iter()
            .filter(|(_, s)| *s == status)
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(walk(storage, 2, Some(status)).await, expected, "{status}");
    }
    let exact = storage
        .list_pets(&page(23, None, None))
        .await
        .expect("list");
    assert_eq!(exact.items.len(), 23);
    assert_eq!(
        exact.next_after, None,
        "no next page when the page is exactly full"
    );
}

/// An empty catalogue: an empty page, no next one.
pub async fn an_empty_catalogue_lists_nothing(storage: &dyn Storage) {
    let empty = storage
        .list_pets(&PetListQuery::default())
        .await
        .expect("list");
    assert!(empty.items.is_empty());
    assert_eq!(empty.next_after, None);
}
