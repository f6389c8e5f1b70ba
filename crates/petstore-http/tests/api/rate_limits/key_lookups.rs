//! Key lookups and a refused address: a client whose address is banned or at its limit costs
//! no lookup with a made-up key, and one whose key this instance found valid before is not
//! refused with the address.

use std::time::Duration;

use actix_web::http::header;
use petstore_domain::{Clock, KeySpec, Plan};

use super::new_key;
use crate::helpers::{TestApp, get_from};

/// A client whose address is at its limit, or banned, costs no key lookup: each request with a
/// made-up key (one the cache has no answer for) is refused before the storage is asked.
#[actix_web::test]
async fn an_address_at_its_limit_or_banned_costs_no_key_lookup() {
    let storage = std::sync::Arc::new(crate::memory_storage::MemoryStorage::default());
    let app = TestApp::with_storage(storage.clone()).await;
    let made_up = |n: u32| {
        get_from("/v1/pets", "203.0.113.21:5")
            .insert_header((header::AUTHORIZATION, format!("Bearer pst_{n:064x}")))
    };
    let mut n = 0;
    let mut next = || {
        n += 1;
        made_up(n)
    };
    for _ in 0..60 {
        app.send(next()).await.assert_error(401, "unauthorized");
    }
    assert_eq!(storage.key_lookups(), 60, "each made-up key looked up once");
    // Limited, then (past the default threshold of 60 refusals) banned.
    let mut banned = 0;
    for _ in 0..100 {
        let reply = app.send(next()).await;
        assert_eq!(reply.status, 429);
        banned += u32::from(reply.json()["code"] == "temporarily_banned");
    }
    assert!(banned > 0, "the address was banned");
    assert_eq!(
        storage.key_lookups(),
        60,
        "a limited or banned address's made-up keys were looked up"
    );
    // Another address is not held back: its key is looked up and found.
    let valid = app
        .send(
            get_from("/v1/pets", "203.0.113.22:5")
                .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key))),
        )
        .await;
    assert_eq!(valid.status, 200);
    assert_eq!(storage.key_lookups(), 61);
}

/// Uses up `address`'s allowance with made-up keys until it is banned.
async fn ban_with_made_up_keys(app: &TestApp, address: &str) {
    let mut banned = false;
    for n in 0..200u32 {
        let reply = app
            .send(
                get_from("/v1/pets", address)
                    .insert_header((header::AUTHORIZATION, format!("Bearer pst_{n:064x}"))),
            )
            .await;
        if reply.status == 429 && reply.json()["code"] == "temporarily_banned" {
            banned = true;
            break;
        }
    }
    assert!(banned, "{address} was banned");
}

/// A client behind an address that others used up (a shared NAT, a /64) is not refused with
/// it once its key's cache entry is stale: a key this instance found valid before is looked up
/// again and counted as the key's. A made-up key from that address still costs no lookup; a
/// key found revoked since is refused with its address from then on, unread.
#[actix_web::test]
async fn a_key_found_valid_before_is_not_refused_with_its_address() {
    let storage = std::sync::Arc::new(crate::memory_storage::MemoryStorage::default());
    let app = TestApp::with_storage_and_config(storage.clone(), |config| {
        config.key_cache_ttl = Duration::from_millis(50);
    })
    .await;
    let (_, victim) = new_key(&app, Plan::Pro, None).await;
    let (other_id, other) = new_key(&app, Plan::Pro, None).await;
    let shared = "198.51.100.7:5";
    let as_key = |key: &str| {
        get_from("/v1/pets", shared).insert_header((header::AUTHORIZATION, format!("Bearer {key}")))
    };
    assert_eq!(app.send(as_key(&victim)).await.status, 200);
    assert_eq!(app.send(as_key(&other)).await.status, 200);
    ban_with_made_up_keys(&app, shared).await;
    // Past the cache's TTL: the key is looked up again, and served on its own limits.
    tokio::time::sleep(Duration::from_millis(80)).await;
    let looked_up = storage.key_lookups();
    let reply = app.send(as_key(&victim)).await;
    assert_eq!(reply.status, 200, "{:?}", reply.json());
    assert_eq!(storage.key_lookups(), looked_up + 1);
    // A made-up key from the banned address is still refused unread.
    app.send(as_key(&format!("pst_{:064x}", 999_999)))
        .await
        .assert_error(429, "temporarily_banned");
    assert_eq!(storage.key_lookups(), looked_up + 1);
    // Revoked meanwhile: looked up once more, found gone, refused with the address, and never
    // read again from it.
    app.store.revoke_key(other_id).await.expect("revoked");
    tokio::time::sleep(Duration::from_millis(80)).await;
    app.send(as_key(&other))
        .await
        .assert_error(429, "temporarily_banned");
    assert_eq!(storage.key_lookups(), looked_up + 2);
    tokio::time::sleep(Duration::from_millis(80)).await;
    app.send(as_key(&other))
        .await
        .assert_error(429, "temporarily_banned");
    assert_eq!(storage.key_lookups(), looked_up + 2);
    // Found valid (from elsewhere), expired since: not spared, refused with the address unread.
    let now = i64::try_from(app.clock.unix_seconds()).expect("a time");
    let spec = KeySpec::new(Plan::Pro, "expiring", None)
        .expect("spec")
        .expiring_at(now + 60, now)
        .expect("expiry");
    let (_, expiring) = app.store.create_key(&spec).await.expect("create key");
    let expiring = expiring.expose().to_owned();
    let elsewhere = get_from("/v1/pets", "198.51.100.99:5")
        .insert_header((header::AUTHORIZATION, format!("Bearer {expiring}")));
    assert_eq!(app.send(elsewhere).await.status, 200);
    app.clock.advance(Duration::from_secs(61));
    tokio::time::sleep(Duration::from_millis(80)).await;
    app.send(as_key(&expiring))
        .await
        .assert_error(429, "temporarily_banned");
    assert_eq!(storage.key_lookups(), looked_up + 3);
}
