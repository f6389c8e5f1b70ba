//! Orders: placing, listing, the lifecycle and the pet's status with it, races.

use futures_util::future::join_all;
use petstore_domain::{
    Inventory, KeySpec, LifecycleError, Limit, OrderAction, OrderError, OrderListQuery,
    OrderStatus, Page, PageRequest, PetStatus, PlaceOrder, Plan, Storage, StorageErrorKind,
};

use super::support::add;

fn place(pet_id: i64, owner: Option<i64>) -> PlaceOrder {
    PlaceOrder {
        pet_id,
        owner,
        completion: None,
    }
}

fn ids(page: &Page<petstore_domain::Order>) -> Vec<i64> {
    page.items.iter().map(|o| o.id).collect()
}

/// Orders list in id order, page by page, all of them or one key's, by status; a key reads
/// only its own orders, an operator (no owner) any.
pub async fn orders_list_in_id_order_with_paging_and_by_owner(storage: &dyn Storage) {
    let (owner, _) = storage
        .create_key(&KeySpec::new(Plan::Pro, "customer", None).expect("spec"))
        .await
        .expect("key");
    let mut placed = Vec::new();
    for i in 0..4 {
        let pet = add(storage, &format!("pet {i}"), PetStatus::Available).await;
        // Every other order is the customer's; the rest an operator's.
        let owner = (i % 2 == 0).then_some(owner.id);
        let order = storage
            .place_order(&place(pet.id, owner))
            .await
            .expect("place");
        assert_eq!(
            (order.status, order.owner, order.quantity),
            (OrderStatus::Placed, owner, 1)
        );
        assert!(
            order.created_at > 1_700_000_000,
            "created now, in Unix seconds"
        );
        placed.push(order.id);
    }
    // The order pages list them in: ascending ids (orders 0 and 2 are the customer's).
    let mine_expected = {
        let mut mine = vec![placed[0], placed[2]];
        mine.sort_unstable();
        mine
    };
    let approved_expected = {
        let mut approved = vec![placed[0], placed[3]];
        approved.sort_unstable();
        approved
    };
    let placed_expected = {
        let mut still = vec![placed[1], placed[2]];
        still.sort_unstable();
        still
    };
    let mut in_order = placed.clone();
    in_order.sort_unstable();
    let query = |after, owner| OrderListQuery {
        page: PageRequest {
            limit: Limit::new(2).expect("limit"),
            after,
        },
        owner,
        status: None,
    };
    let first = storage.list_orders(&query(None, None)).await.expect("list");
    assert_eq!(ids(&first), in_order[..2]);
    let rest = storage
        .list_orders(&query(first.next_after, None))
        .await
        .expect("list");
    assert_eq!(ids(&rest), in_order[2..]);
    assert_eq!(rest.next_after, None);
    let mine = storage
        .list_orders(&query(None, Some(owner.id)))
        .await
        .expect("list");
    assert_eq!(ids(&mine), mine_expected);
    // By status: the customer's first order and the operator's second approved.
    for id in [placed[0], placed[3]] {
        storage
            .change_order(id, None, OrderAction::Approve)
            .await
            .expect("approve");
    }
    let of = |owner, status| OrderListQuery {
        status: Some(status),
        ..query(None, owner)
    };
    let listed =
        async |owner, status| ids(&storage.list_orders(&of(owner, status)).await.expect("list"));
    assert_eq!(listed(None, OrderStatus::Approved).await, approved_expected);
    assert_eq!(listed(None, OrderStatus::Placed).await, placed_expected);
    assert_eq!(
        listed(Some(owner.id), OrderStatus::Placed).await,
        vec![placed[2]]
    );
    assert!(
        listed(Some(owner.id), OrderStatus::Delivered)
            .await
            .is_empty()
    );
    assert_eq!(
        storage
            .find_order(placed[1], Some(owner.id))
            .await
            .expect("find"),
        None,
        "not theirs"
    );
    assert!(
        storage
            .find_order(placed[1], None)
            .await
            .expect("find")
            .is_some(),
        "operators see all"
    );
}

/// Placing an order makes its pet pending, delivering it sold; what the lifecycle refuses is
/// refused, naming why; the inventory follows.
pub async fn the_order_lifecycle_moves_the_pet_with_it(storage: &dyn Storage) {
    let pet = add(storage, "Rex", PetStatus::Available).await;
    let order = storage
        .place_order(&place(pet.id, None))
        .await
        .expect("place");
    let status = async |id| {
        storage
            .find_pet(id)
            .await
            .expect("find")
            .expect("the pet")
            .status
    };
    assert_eq!(status(pet.id).await, PetStatus::Pending);
    assert!(matches!(
        storage.place_order(&place(pet.id, None)).await,
        Err(OrderError::Refused(LifecycleError::PetNotAvailable(
            PetStatus::Pending
        )))
    ));
    assert!(matches!(
        storage.place_order(&place(999_999, None)).await,
        Err(OrderError::PetNotFound(999_999))
    ));
    assert!(matches!(
        storage
            .change_order(order.id, None, OrderAction::Deliver)
            .await,
        Err(OrderError::Refused(LifecycleError::Transition {
            from: OrderStatus::Placed,
            ..
        }))
    ));
    storage
        .change_order(order.id, None, OrderAction::Approve)
        .await
        .expect("approve");
    assert_eq!(status(pet.id).await, PetStatus::Pending);
    storage
        .change_order(order.id, None, OrderAction::Deliver)
        .await
        .expect("deliver");
    assert_eq!(status(pet.id).await, PetStatus::Sold);
    assert_eq!(
        storage.inventory().await.expect("inventory"),
        Inventory {
            available: 0,
            pending: 0,
            sold: 1
        }
    );
    assert!(matches!(
        storage.change_order(4242, None, OrderAction::Cancel).await,
        Err(OrderError::OrderNotFound(4242))
    ));
    // A cancelled order gives its pet back.
    let other = add(storage, "Tom", PetStatus::Available).await;
    let order = storage
        .place_order(&place(other.id, None))
        .await
        .expect("place");
    let cancelled = storage
        .change_order(order.id, None, OrderAction::Cancel)
        .await
        .expect("cancel");
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
    assert_eq!(status(other.id).await, PetStatus::Available);
}

/// Twelve orders at once on one available pet: exactly one is placed, the others refused
/// because the pet is no longer available; the pet is pending, with one order.
pub async fn racing_orders_on_one_pet_have_one_winner(storage: &dyn Storage) {
    let pet = add(storage, "Sought", PetStatus::Available).await;
    let order = place(pet.id, None);
    let attempts = join_all((0..12).map(|_| storage.place_order(&order))).await;
    let won: Vec<_> = attempts.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "one order is placed: {attempts:?}");
    for lost in attempts.iter().filter_map(|a| a.as_ref().err()) {
        // Refused as the pet is taken, or (a backend that detects the conflict when it
        // commits) unavailable: retried, it is refused.
        let refused = matches!(
            lost,
            OrderError::Refused(LifecycleError::PetNotAvailable(PetStatus::Pending))
        );
        let conflicted = matches!(
            lost,
            OrderError::Storage(error) if error.kind() == StorageErrorKind::Unavailable
        );
        assert!(
            refused || conflicted,
            "a losing order is refused as the pet is taken: {lost:?}"
        );
    }
    let pet = storage.find_pet(pet.id).await.expect("find").expect("pet");
    assert_eq!(pet.status, PetStatus::Pending);
    let all = storage
        .list_orders(&OrderListQuery {
            page: PageRequest {
                limit: Limit::MAX,
                after: None,
            },
            owner: None,
            status: None,
        })
        .await
        .expect("list");
    assert_eq!(ids(&all), vec![won[0].id]);
}

/// The inventory counts every pet by status, exactly, after eight callers at once each create
/// pets and order, approve, deliver and cancel them: the same counts as walking the catalogue
/// by status.
pub async fn the_inventory_is_exact_after_concurrent_changes(storage: &dyn Storage) {
    let callers = (0..8).map(|caller| async move {
        for round in 0..5 {
            let pet = add(
                storage,
                &format!("c{caller} r{round}"),
                PetStatus::Available,
            )
            .await;
            let order = storage
                .place_order(&place(pet.id, None))
                .await
                .expect("place");
            let action = match round % 3 {
                0 => OrderAction::Cancel,
                1 => OrderAction::Approve,
                _ => {
                    storage
                        .change_order(order.id, None, OrderAction::Approve)
                        .await
                        .expect("approve");
                    OrderAction::Deliver
                }
            };
            storage
                .change_order(order.id, None, action)
                .await
                .expect("change");
        }
    });
    join_all(callers).await;
    add(storage, "listed as sold", PetStatus::Sold).await;
    let inventory = storage.inventory().await.expect("inventory");
    let count = async |status| super::support::walk(storage, 100, Some(status)).await.len() as u64;
    assert_eq!(
        inventory,
        Inventory {
            available: count(PetStatus::Available).await,
            pending: count(PetStatus::Pending).await,
            sold: count(PetStatus::Sold).await,
        }
    );
    assert_eq!(
        (inventory.available, inventory.pending, inventory.sold),
        (16, 16, 9),
        "cancelled: available again; approved: pending; delivered: sold; and one created sold"
    );
}

/// An order placed with its claim completes it in the order's own transaction: a retry is
/// answered the order's `201`.
pub async fn an_order_completes_its_claim_in_its_own_transaction(storage: &dyn Storage) {
    use petstore_domain::{
        ClaimOutcome, Completion, Fingerprint, IdempotencyKey, IdempotentRequest, StoredResponse,
    };
    let (owner, _) = storage
        .create_key(&KeySpec::new(Plan::Pro, "buyer", None).expect("spec"))
        .await
        .expect("key");
    let pet = add(storage, "Rex", PetStatus::Available).await;
    let request = IdempotentRequest {
        owner: owner.id,
        key: IdempotencyKey::parse(b"order-1").expect("key"),
        fingerprint: Fingerprint::of("POST", "/v1/store/orders", b"{}"),
        now: 1_800_000_000,
        retention: 86_400,
        lease: 60,
    };
    let ClaimOutcome::Claimed(claim) = storage
        .claim_idempotency_key(&request)
        .await
        .expect("claim")
    else {
        panic!("a free key");
    };
    let base = "https://api.example.com/v1";
    let order = storage
        .place_order(&PlaceOrder {
            pet_id: pet.id,
            owner: Some(owner.id),
            completion: Some(Completion {
                claim,
                base: base.to_owned(),
            }),
        })
        .await
        .expect("place");
    assert_eq!(
        storage
            .claim_idempotency_key(&request)
            .await
            .expect("claim again"),
        ClaimOutcome::Completed(StoredResponse::created(&order, base))
    );
}

/// A key reads, cancels and changes only its own orders: another key's are not found.
pub async fn a_key_changes_only_its_own_orders(storage: &dyn Storage) {
    let spec = KeySpec::new(Plan::Pro, "customer", None).expect("spec");
    let (mine, _) = storage.create_key(&spec).await.expect("key");
    let (theirs, _) = storage.create_key(&spec).await.expect("key");
    let pet = add(storage, "Rex", PetStatus::Available).await;
    let order = storage
        .place_order(&place(pet.id, Some(theirs.id)))
        .await
        .expect("place");
    assert_eq!(
        storage
            .find_order(order.id, Some(mine.id))
            .await
            .expect("find"),
        None
    );
    assert!(matches!(
        storage
            .change_order(order.id, Some(mine.id), OrderAction::Cancel)
            .await,
        Err(OrderError::OrderNotFound(id)) if id == order.id
    ));
    let still = storage
        .find_order(order.id, Some(theirs.id))
        .await
        .expect("find")
        .expect("theirs");
    assert_eq!(still.status, OrderStatus::Placed);
    let cancelled = storage
        .change_order(order.id, Some(theirs.id), OrderAction::Cancel)
        .await
        .expect("their own");
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
}
