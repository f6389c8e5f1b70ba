//! Durability on PostgreSQL: no write reports success before the server has confirmed that its
//! transaction ended. Every write of the storage interface is started against a server whose
//! commits wait for a synchronous standby that does not exist (`synchronous_standby_names =
//! 'nobody'`), so that each waits in its commit; the server is then stopped at once (`pg_ctl stop
//! -m immediate`). A write whose commit was never confirmed must fail as unavailable (the
//! caller answers `503`), never succeed.

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use petstore_domain::{
    AdminTokenRepository, AdminTokenSpec, ApiKeyRepository, Ban, ClaimOutcome, CreatePet,
    Fingerprint, IdempotencyClaim, IdempotencyKey, IdempotencyRepository, IdempotentRequest,
    KeySpec, KeyUpdate, OrderAction, OrderRepository, PetDraft, PetRepository, PetStatus,
    PlaceOrder, Plan, Scope, StorageErrorKind, StoredResponse,
};
use petstore_store::testing::PostgresServer;
use petstore_store::{Store, StoreConfig};

/// A write of the storage interface, run to its end: `Ok` if the store reported success.
type Write = BoxFuture<'static, Result<(), StorageErrorKind>>;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn pet(name: &str) -> CreatePet {
    CreatePet::new(PetDraft::new(name, 1, PetStatus::Available).expect("a valid pet"))
}

fn request(owner: i64, key: &str, now: u64) -> IdempotentRequest {
    IdempotentRequest {
        owner,
        key: IdempotencyKey::parse(key.as_bytes()).expect("a valid key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", key.as_bytes()),
        now,
        retention: 86_400,
        lease: 60,
    }
}

async fn claim(store: &Store, owner: i64, key: &str, now: u64) -> IdempotencyClaim {
    match store
        .claim_idempotency_key(&request(owner, key, now))
        .await
        .expect("claim")
    {
        ClaimOutcome::Claimed(claim) => claim,
        other => panic!("the key {key} was not free: {other:?}"),
    }
}

/// Every write of the storage interface, each on rows of its own (so that none waits for
/// another's lock), seeded on `store` first.
async fn every_write(store: &Store) -> Vec<(&'static str, Write)> {
    let key = |label: &'static str| async move {
        store
            .create_key(&KeySpec::new(Plan::Free, label, None).expect("spec"))
            .await
            .expect("create a key")
            .0
            .id
    };
    let for_order = store
        .create_pet(&pet("for an order"))
        .await
        .expect("pet")
        .id;
    let ordered = store.create_pet(&pet("ordered")).await.expect("pet").id;
    let placed = PlaceOrder {
        pet_id: ordered,
        owner: None,
        completion: None,
    };
    let order = store.place_order(&placed).await.expect("order").id;
    let (updated, revoked, replanned) =
        (key("update").await, key("revoke").await, key("plan").await);
    let (banned, unbanned, rotated) = (key("ban").await, key("unban").await, key("rotate").await);
    let (scoped, touched, owner) = (key("scope").await, key("touch").await, key("owner").await);
    let ban = Ban {
        until: unix_now() + 600,
        level: 1,
    };
    assert!(store.ban_key(unbanned, ban, unix_now()).await.expect("ban"));
    let token = store
        .create_admin_token(&AdminTokenSpec::new("to revoke").expect("spec"))
        .await
        .expect("token")
        .0
        .id;
    let now = unix_now();
    let to_complete = claim(store, owner, "complete", now).await;
    let to_release = claim(store, owner, "release", now).await;
    claim(store, owner, "expired", 1_000).await;

    let s = || store.clone();
    let kind = |error: petstore_domain::StorageError| error.kind();
    let order_kind = |error: petstore_domain::OrderError| match error {
        petstore_domain::OrderError::Storage(error) => error.kind(),
        other => panic!("the order was refused: {other:?}"),
    };
    let writes: Vec<(&'static str, Write)> = vec![
        ("create_pet", {
            let s = s();
            Box::pin(async move { s.create_pet(&pet("new")).await.map(drop).map_err(kind) })
        }),
        ("place_order", {
            let s = s();
            let order = PlaceOrder {
                pet_id: for_order,
                owner: None,
                completion: None,
            };
            Box::pin(async move { s.place_order(&order).await.map(drop).map_err(order_kind) })
        }),
        ("change_order", {
            let s = s();
            Box::pin(async move {
                s.change_order(order, None, OrderAction::Approve)
                    .await
                    .map(drop)
                    .map_err(order_kind)
            })
        }),
        ("create_key", {
            let s = s();
            Box::pin(async move {
                let spec = KeySpec::new(Plan::Free, "new", None).expect("spec");
                s.create_key(&spec).await.map(drop).map_err(kind)
            })
        }),
        ("update_key", {
            let s = s();
            Box::pin(async move {
                let update = KeyUpdate {
                    label: Some("renamed".into()),
                    ..KeyUpdate::default()
                };
                s.update_key(updated, &update).await.map(drop).map_err(kind)
            })
        }),
        ("revoke_key", {
            let s = s();
            Box::pin(async move { s.revoke_key(revoked).await.map(drop).map_err(kind) })
        }),
        ("update_key_plan", {
            let s = s();
            Box::pin(async move {
                s.update_key_plan(replanned, Plan::Pro, None)
                    .await
                    .map(drop)
                    .map_err(kind)
            })
        }),
        ("ban_key", {
            let s = s();
            Box::pin(async move { s.ban_key(banned, ban, now).await.map(drop).map_err(kind) })
        }),
        ("unban_key", {
            let s = s();
            Box::pin(async move { s.unban_key(unbanned).await.map(drop).map_err(kind) })
        }),
        ("rotate_key", {
            let s = s();
            let grace = i64::try_from(now + 60).expect("a time");
            Box::pin(async move { s.rotate_key(rotated, grace).await.map(drop).map_err(kind) })
        }),
        ("update_key_scope", {
            let s = s();
            Box::pin(async move {
                s.update_key_scope(scoped, Scope::ReadOnly)
                    .await
                    .map(drop)
                    .map_err(kind)
            })
        }),
        ("touch_key", {
            let s = s();
            let at = i64::try_from(now).expect("a time");
            Box::pin(async move { s.touch_key(touched, at).await.map_err(kind) })
        }),
        ("create_admin_token", {
            let s = s();
            Box::pin(async move {
                let spec = AdminTokenSpec::new("new").expect("spec");
                s.create_admin_token(&spec).await.map(drop).map_err(kind)
            })
        }),
        ("revoke_admin_token", {
            let s = s();
            Box::pin(async move { s.revoke_admin_token(token).await.map(drop).map_err(kind) })
        }),
        ("claim_idempotency_key", {
            let s = s();
            Box::pin(async move {
                s.claim_idempotency_key(&request(owner, "claim", now))
                    .await
                    .map(drop)
                    .map_err(kind)
            })
        }),
        ("complete_idempotency_key", {
            let s = s();
            Box::pin(async move {
                let response = StoredResponse {
                    status: 201,
                    location: None,
                    body: "{}".into(),
                };
                s.complete_idempotency_key(&to_complete, &response)
                    .await
                    .map_err(kind)
            })
        }),
        ("release_idempotency_key", {
            let s = s();
            Box::pin(async move { s.release_idempotency_key(&to_release).await.map_err(kind) })
        }),
        ("prune_idempotency_keys", {
            let s = s();
            Box::pin(async move {
                s.prune_idempotency_keys(2_000)
                    .await
                    .map(drop)
                    .map_err(kind)
            })
        }),
    ];
    writes
}

/// How many of the server's sessions wait for a synchronous standby to confirm their commit (or
/// for a lock one of those holds), read on a blocking thread (the writes go on meanwhile).
async fn waiting_for_a_standby(server_url: String) -> usize {
    tokio::task::spawn_blocking(move || {
        petstore_store::testing::RawPostgres::connect(&server_url)
            .and_then(|watcher| {
                // Or behind one that does: a write that changes the same count of pets as
                // another (the inventory's counters) waits for that one's row lock, which a
                // transaction holds until its commit is confirmed.
                watcher.count(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event = 'SyncRep' OR wait_event_type = 'Lock'",
                )
            })
            .expect("read pg_stat_activity")
    })
    .await
    .expect("the watcher's thread")
}

/// The server's client sessions, one a line: what each waits for and what it runs (for a
/// failure's message).
async fn sessions(server_url: String) -> String {
    tokio::task::spawn_blocking(move || {
        petstore_store::testing::RawPostgres::connect(&server_url)
            .and_then(|watcher| {
                watcher.query(
                    "SELECT concat_ws(' | ', state, wait_event_type, wait_event, left(query, 80)) \
                     FROM pg_stat_activity WHERE backend_type = 'client backend'",
                )
            })
            .map(|rows| {
                rows.iter()
                    .map(|row| row[0].clone().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_else(|error| format!("(not read: {error})"))
    })
    .await
    .unwrap_or_else(|error| format!("(not read: {error})"))
}

#[tokio::test]
async fn no_write_succeeds_before_postgresql_confirms_its_commit() {
    let Some(mut server) = PostgresServer::start(&[]) else {
        return;
    };
    let mut config = StoreConfig::new(server.url("127.0.0.1", ""));
    // One connection for each write at once; a statement timeout no wait here reaches.
    config.pool_size = 32;
    config.statement_timeout = Duration::from_secs(120);
    let store = Store::open(&config).expect("open");
    store.migrate().await.expect("migrate");
    let writes = every_write(&store).await;
    let count = writes.len();

    // From now on, every commit waits for a standby that never comes.
    server.set("synchronous_standby_names", "nobody");
    let running: Vec<_> = writes
        .into_iter()
        .map(|(name, write)| (name, tokio::spawn(write)))
        .collect();
    let started = Instant::now();
    loop {
        let waiting = waiting_for_a_standby(server.url("127.0.0.1", "")).await;
        if waiting == count {
            break;
        }
        if started.elapsed() >= Duration::from_secs(60) {
            let sessions = sessions(server.url("127.0.0.1", "")).await;
            panic!(
                "{waiting} of {count} writes came to wait for the standby; sessions:\n{sessions}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop_immediately();

    let mut acknowledged = Vec::new();
    for (name, write) in running {
        match write.await.expect("the write's task") {
            Ok(()) => acknowledged.push(name),
            Err(kind) => assert_eq!(
                kind,
                StorageErrorKind::Unavailable,
                "{name} failed, but not as unavailable"
            ),
        }
    }
    assert!(
        acknowledged.is_empty(),
        "writes reported stored though their commit was never confirmed: {acknowledged:?}"
    );

    // The server back (its commits no longer waiting): the store serves again, on new
    // connections.
    server.restart();
    server.set("synchronous_standby_names", "");
    let started = Instant::now();
    while let Err(error) = store.create_pet(&pet("after the restart")).await {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the store did not recover: {error:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    store.close();
}
