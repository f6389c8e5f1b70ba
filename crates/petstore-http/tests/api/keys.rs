//! The key lifecycle through the API: expiry, rotation with a grace period, scopes, last use;
//! and `GET /v1/rate_limit`, which reads the standing without spending it. Every backend.

use std::time::Duration;

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_domain::Clock;
use petstore_domain::{ApiKey, KeySpec, Plan, RateLimits, Scope};

use crate::api_tests;
use crate::helpers::TestApp;

async fn listed(app: &TestApp, id: i64) -> ApiKey {
    petstore_domain::key_admin::all(&*app.store)
        .await
        .expect("list")
        .into_iter()
        .find(|key| key.id == id)
        .expect("the key")
}

/// A key of `per_minute` requests a minute.
async fn limited_key(app: &TestApp, per_minute: u32) -> (ApiKey, String) {
    let limits = RateLimits::custom(per_minute, 1_000).expect("limits");
    let (key, secret) = app
        .store
        .create_key(&KeySpec::new(Plan::Enterprise, "limited", Some(limits)).expect("spec"))
        .await
        .expect("create");
    (key, secret.expose().to_owned())
}

async fn an_expired_key_is_refused_like_an_unknown_one(app: TestApp) {
    let now = i64::try_from(app.clock.unix_seconds()).expect("now");
    let spec = KeySpec::new(Plan::Pro, "trial", None)
        .expect("spec")
        .expiring_at(now + 100, now)
        .expect("in the future");
    let (key, secret) = app.store.create_key(&spec).await.expect("create");
    assert_eq!(key.expires_at, Some(now + 100));
    assert_eq!(app.get_as("/v1/pets", secret.expose()).await.status, 200);
    app.clock.set((now + 100) as u64);
    let expired = app.get_as("/v1/pets", secret.expose()).await;
    let unknown = app
        .get_as("/v1/pets", &format!("pst_{}", "ab".repeat(32)))
        .await;
    expired.assert_error(401, "unauthorized");
    assert_eq!(
        expired.body, unknown.body,
        "indistinguishable from an unknown key"
    );
    assert_eq!(
        expired.header("www-authenticate"),
        Some("Bearer realm=\"petstore\", error=\"invalid_token\"")
    );
    assert_eq!(
        expired.header("www-authenticate"),
        unknown.header("www-authenticate")
    );
    assert_eq!(listed(&app, key.id).await.state_at(now + 100), "expired");
    assert!(spec_in_past_is_refused(now));
}

async fn a_rotated_key_keeps_its_id_counters_and_old_secret_until_the_grace_ends(app: TestApp) {
    let (key, old) = limited_key(&app, 10).await;
    let remaining =
        |reply: &crate::helpers::Reply| reply.header("x-ratelimit-remaining").map(str::to_owned);
    assert_eq!(
        remaining(&app.get_as("/v1/pets", &old).await).as_deref(),
        Some("9")
    );
    let now = i64::try_from(app.clock.unix_seconds()).expect("now");
    let (rotated, new) = app
        .store
        .rotate_key(key.id, now + 3_600)
        .await
        .expect("rotate")
        .expect("found");
    let new = new.expose().to_owned();
    assert_eq!(
        (rotated.id, rotated.plan, rotated.custom_limits),
        (key.id, key.plan, key.custom_limits)
    );
    assert_ne!(rotated.display_prefix, key.display_prefix);
    // Both secrets work, and count against the one key's limits.
    assert_eq!(
        remaining(&app.get_as("/v1/pets", &new).await).as_deref(),
        Some("8")
    );
    assert_eq!(
        remaining(&app.get_as("/v1/pets", &old).await).as_deref(),
        Some("7")
    );
    // The grace period over, the old secret stops; the new one goes on.
    app.clock.set((now + 3_600) as u64);
    app.get_as("/v1/pets", &old)
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(app.get_as("/v1/pets", &new).await.status, 200);
    // A rotation without grace stops the current secret at once; revoked keys cannot rotate.
    let now = now + 3_600;
    let (_, newest) = app
        .store
        .rotate_key(key.id, now)
        .await
        .expect("rotate")
        .expect("found");
    app.get_as("/v1/pets", &new)
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(app.get_as("/v1/pets", newest.expose()).await.status, 200);
    app.store.revoke_key(key.id).await.expect("revoke");
    assert!(
        app.store
            .rotate_key(key.id, now)
            .await
            .expect("rotate")
            .is_none()
    );
    app.get_as("/v1/pets", newest.expose())
        .await
        .assert_error(401, "unauthorized");
}

async fn a_read_only_key_reads_but_gets_403_on_writes_until_rescoped(app: TestApp) {
    let spec = KeySpec::new(Plan::Pro, "dashboard", None)
        .expect("spec")
        .with_scope(Scope::ReadOnly);
    let (key, secret) = app.store.create_key(&spec).await.expect("create");
    assert_eq!(key.scope, Scope::ReadOnly);
    let post = || {
        TestRequest::post()
            .uri("/v1/pets")
            .insert_header((header::AUTHORIZATION, format!("Bearer {}", secret.expose())))
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(r#"{"name":"Rex","categoryId":1}"#)
    };
    assert_eq!(app.get_as("/v1/pets", secret.expose()).await.status, 200);
    assert_eq!(
        app.get_as("/v1/store/orders", secret.expose()).await.status,
        200
    );
    let refused = app.send(post()).await;
    refused.assert_error(403, "insufficient_scope");
    assert_eq!(
        refused.header("www-authenticate"),
        Some("Bearer realm=\"petstore\", error=\"insufficient_scope\"")
    );
    assert!(refused.header("x-ratelimit-remaining").is_some());
    assert!(
        app.store
            .update_key_scope(key.id, Scope::ReadWrite)
            .await
            .expect("update")
    );
    assert_eq!(app.send(post()).await.status, 201);
    assert!(
        !app.store
            .update_key_scope(key.id + 99, Scope::ReadOnly)
            .await
            .expect("unknown")
    );
}

async fn last_use_is_recorded_at_most_once_a_minute(app: TestApp) {
    let (key, secret) = limited_key(&app, 100).await;
    assert_eq!(listed(&app, key.id).await.last_used_at, None);
    let start = app.clock.unix_seconds();
    assert_eq!(app.get_as("/v1/pets", &secret).await.status, 200);
    // Written in the background: wait for it.
    let recorded = wait_for_use(&app, key.id, |at| at.is_some()).await;
    assert_eq!(recorded, Some(start as i64));
    // Within the minute, no second write, however many requests.
    app.clock.set(start + 59);
    for _ in 0..5 {
        assert_eq!(app.get_as("/v1/pets", &secret).await.status, 200);
    }
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(listed(&app, key.id).await.last_used_at, Some(start as i64));
    app.clock.set(start + 60);
    assert_eq!(app.get_as("/v1/pets", &secret).await.status, 200);
    let later = wait_for_use(&app, key.id, |at| at == Some(start as i64 + 60)).await;
    assert_eq!(later, Some(start as i64 + 60));
    // The store never moves it back.
    app.store
        .touch_key(key.id, start as i64)
        .await
        .expect("touch");
    assert_eq!(
        listed(&app, key.id).await.last_used_at,
        Some(start as i64 + 60)
    );
}

async fn the_rate_limit_status_is_read_without_being_counted(app: TestApp) {
    let (_, secret) = limited_key(&app, 5).await;
    assert_eq!(app.get_as("/v1/pets", &secret).await.status, 200);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let reply = app.get_as("/v1/rate_limit", &secret).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(
            reply.header("x-ratelimit-remaining"),
            Some("4"),
            "never counted"
        );
        seen.push(reply.json());
    }
    let status = &seen[0];
    assert!(seen.iter().all(|s| s == status));
    assert_eq!(status["plan"], "enterprise");
    assert_eq!(status["minute"]["limit"], 5);
    assert_eq!(status["minute"]["remaining"], 4);
    assert_eq!(status["day"]["limit"], 1_000);
    assert_eq!(status["day"]["remaining"], 999);
    let now = app.clock.unix_seconds();
    assert_eq!(status["minute"]["reset"], now - now % 60 + 60);
    assert_eq!(status["day"]["reset"], now - now % 86_400 + 86_400);
    // Use up the minute: the status says so, and still answers 200.
    for _ in 0..4 {
        assert_eq!(app.get_as("/v1/pets", &secret).await.status, 200);
    }
    assert_eq!(app.get_as("/v1/pets", &secret).await.status, 429);
    let exhausted = app.get_as("/v1/rate_limit", &secret).await;
    assert_eq!(exhausted.status, 200);
    assert_eq!(exhausted.json()["minute"]["remaining"], 0);
    // The path as the router reads it: percent-encoded, it is the same resource.
    assert_eq!(app.get_as("/v1/rate%5Flimit", &secret).await.status, 200);
    // Without a key: 401; with a parameter: 400.
    app.send(TestRequest::get().uri("/v1/rate_limit"))
        .await
        .assert_error(401, "unauthorized");
    app.get("/v1/rate_limit?verbose=1")
        .await
        .assert_error(400, "unknown_query_parameter");
    app.send(
        TestRequest::post()
            .uri("/v1/rate_limit")
            .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key))),
    )
    .await
    .assert_error(405, "method_not_allowed");
}

async fn a_banned_key_gets_its_429_from_the_status_too(app: TestApp) {
    let (key, secret) = limited_key(&app, 5).await;
    let now = app.clock.unix_seconds();
    app.store
        .ban_key(
            key.id,
            petstore_domain::Ban {
                until: now + 300,
                level: 1,
            },
            now,
        )
        .await
        .expect("ban");
    let reply = app.get_as("/v1/rate_limit", &secret).await;
    reply.assert_error(429, "temporarily_banned");
    assert_eq!(reply.header("retry-after"), Some("300"));
}

api_tests!(
    an_expired_key_is_refused_like_an_unknown_one,
    a_rotated_key_keeps_its_id_counters_and_old_secret_until_the_grace_ends,
    a_read_only_key_reads_but_gets_403_on_writes_until_rescoped,
    last_use_is_recorded_at_most_once_a_minute,
    the_rate_limit_status_is_read_without_being_counted,
    a_banned_key_gets_its_429_from_the_status_too,
);

fn spec_in_past_is_refused(now: i64) -> bool {
    KeySpec::new(Plan::Pro, "x", None)
        .expect("spec")
        .expiring_at(now - 1, now)
        .is_err()
}

/// Polls the key's `last_used_at` until `done` holds (up to 5 s).
async fn wait_for_use(app: &TestApp, id: i64, done: impl Fn(Option<i64>) -> bool) -> Option<i64> {
    for _ in 0..100 {
        let at = listed(app, id).await.last_used_at;
        if done(at) {
            return at;
        }
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
    listed(app, id).await.last_used_at
}
