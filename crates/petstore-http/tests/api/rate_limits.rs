//! Section 8 of the interface: every rule, with the limiter counting in memory and in Redis.

use std::time::Duration;

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_domain::{BanPolicy, KeySpec, Plan, RateLimits};
use petstore_http::ratelimit::{AddressPolicy, FailurePolicy, Limiter, RedisCounters};
use petstore_store::testing::TestDatabase;

use crate::helpers::{Reply, TestApp, anonymous_limits, get_from};
use crate::redis_support::TestRedis;

mod in_redis;
mod key_lookups;

/// 2026-11-21T12:34:00Z, the start of a minute.
const T0: u64 = 1_795_264_440;
/// 2026-11-22T00:00:00Z, the end of T0's day.
const MIDNIGHT: u64 = 1_795_305_600;
/// Refusals tolerated before a ban, in these tests.
const THRESHOLD: u32 = 3;

fn bans() -> BanPolicy {
    BanPolicy {
        threshold: THRESHOLD,
        ..BanPolicy::default()
    }
}

/// An app on SQLite whose limiter counts in memory, or in Redis under a prefix of its own.
pub async fn limited_app(redis: Option<TestRedis>) -> TestApp {
    let db = TestDatabase::sqlite();
    let store = db.store().await;
    let limiter = match &redis {
        None => Limiter::in_memory(bans(), anonymous_limits(), AddressPolicy::default()),
        Some(redis) => Limiter::shared(
            Box::new(
                RedisCounters::new(&redis.url, &redis.prefix, Duration::from_secs(2), 86_400)
                    .expect("redis counters"),
            ),
            FailurePolicy::Closed,
            bans(),
            anonymous_limits(),
            AddressPolicy::default(),
        ),
    };
    let mut app = TestApp::with_limiter(Some(db), store, limiter).await;
    app.redis = redis;
    app.clock.set(T0 + 5);
    app
}

/// Runs each scenario named (a plain `async fn name(app: TestApp)`) with counters in memory and
/// in Redis (skipped loudly when unreachable outside CI).
macro_rules! limiter_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::*;

                #[actix_web::test]
                async fn memory() {
                    super::$name(limited_app(None).await).await;
                }

                #[actix_web::test]
                async fn redis() {
                    if let Some(redis) = TestRedis::new() {
                        super::$name(limited_app(Some(redis)).await).await;
                    }
                }
            }
        )*
    };
}

async fn new_key(app: &TestApp, plan: Plan, limits: Option<(u32, u32)>) -> (i64, String) {
    let custom = limits.map(|(m, d)| RateLimits::custom(m, d).expect("limits"));
    let (key, secret) = app
        .store
        .create_key(&KeySpec::new(plan, "rate-limit test", custom).expect("spec"))
        .await
        .expect("create key");
    (key.id, secret.expose().to_owned())
}

#[track_caller]
fn limit_headers(reply: &Reply) -> (u64, u64, u64) {
    let number = |name: &str| -> u64 {
        reply
            .header(name)
            .unwrap_or_else(|| panic!("{name} missing on a {} response", reply.status))
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not a number"))
    };
    let policy = reply
        .header("ratelimit-policy")
        .expect("RateLimit-Policy missing");
    let state = reply.header("ratelimit").expect("RateLimit missing");
    assert_items(policy, "q", &["q", "w"]);
    assert_items(state, "r", &["r", "t"]);
    (
        number("x-ratelimit-limit"),
        number("x-ratelimit-remaining"),
        number("x-ratelimit-reset"),
    )
}

/// `field` is what draft-ietf-httpapi-ratelimit-headers-11 says its fields are: a List (RFC
/// 9651) of Items whose value is a String (§3, §4) and whose Parameters are non-negative
/// Integers, `required` among them, each key one of `known`.
#[track_caller]
fn assert_items(field: &str, required: &str, known: &[&str]) {
    for item in field.split(", ") {
        let (name, parameters) = item.split_once(';').unwrap_or((item, ""));
        let name = name
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{item:?} in {field:?}: not a String"));
        assert!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()),
            "{field:?}"
        );
        let mut keys = Vec::new();
        for parameter in parameters.split(';') {
            let (key, value) = parameter
                .split_once('=')
                .unwrap_or_else(|| panic!("{parameter:?} in {field:?}"));
            assert!(known.contains(&key), "{key} in {field:?}");
            assert!(
                !value.is_empty() && value.len() <= 15 && value.bytes().all(|b| b.is_ascii_digit()),
                "{key}={value} in {field:?}: not a non-negative Integer"
            );
            keys.push(key);
        }
        assert!(keys.contains(&required), "{required} missing in {field:?}");
    }
}

async fn a_free_key_gets_exactly_60_requests_a_minute(app: TestApp) {
    let (_, key) = new_key(&app, Plan::Free, None).await;
    for i in 1..=60u64 {
        let reply = app.get_as("/v1/pets", &key).await;
        assert_eq!(reply.status, 200, "request {i}");
        assert_eq!(limit_headers(&reply), (60, 60 - i, T0 + 60), "request {i}");
    }
    let refused = app.get_as("/v1/pets", &key).await;
    let message = refused.assert_error(429, "rate_limited");
    assert!(message.contains("60 requests per minute"), "{message}");
    assert_eq!(limit_headers(&refused), (60, 0, T0 + 60));
    assert_eq!(refused.header("retry-after"), Some("55"));
    assert_eq!(
        refused.headers.get_all("retry-after").count(),
        1,
        "Retry-After written once"
    );
    assert_eq!(
        refused.header("ratelimit-policy"),
        Some("\"minute\";q=60;w=60, \"day\";q=1000;w=86400")
    );
    assert_eq!(
        refused.header("ratelimit"),
        Some("\"minute\";r=0;t=55, \"day\";r=940;t=41155")
    );

    app.clock.set(T0 + 59);
    app.get_as("/v1/pets", &key)
        .await
        .assert_error(429, "rate_limited");
    app.clock.set(T0 + 60);
    let next_minute = app.get_as("/v1/pets", &key).await;
    assert_eq!(next_minute.status, 200, "the window resets on the minute");
    assert_eq!(limit_headers(&next_minute), (60, 59, T0 + 120));
}

async fn the_day_window_is_enforced_too(app: TestApp) {
    let (_, key) = new_key(&app, Plan::Enterprise, Some((5, 7))).await;
    for _ in 0..5 {
        assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    }
    let minute_full = app.get_as("/v1/pets", &key).await;
    minute_full.assert_error(429, "rate_limited");
    assert_eq!(minute_full.header("retry-after"), Some("55"));

    app.clock.set(T0 + 65);
    let first = app.get_as("/v1/pets", &key).await;
    // 4 left this minute, 1 left today: the day is closest to exhaustion.
    assert_eq!(limit_headers(&first), (7, 1, MIDNIGHT));
    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    let day_full = app.get_as("/v1/pets", &key).await;
    day_full.assert_error(429, "rate_limited");
    assert_eq!(limit_headers(&day_full), (7, 0, MIDNIGHT));
    assert_eq!(
        day_full.header("retry-after"),
        Some(&*(MIDNIGHT - (T0 + 65)).to_string())
    );

    app.clock.set(MIDNIGHT);
    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200, "a new day");
}

async fn every_response_carries_the_headers(app: TestApp) {
    let too_big = format!(r#"{{"name":"{}","categoryId":1}}"#, "x".repeat(70 * 1024));
    let with_key = |request: TestRequest| {
        request.insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
    };
    let cases = [
        (with_key(TestRequest::get().uri("/v1/pets")), 200),
        (with_key(TestRequest::get().uri("/v1/pets/999")), 404),
        (with_key(TestRequest::get().uri("/v1/nowhere")), 404),
        (with_key(TestRequest::delete().uri("/v1/pets")), 405),
        (with_key(TestRequest::get().uri("/v1/pets?limit=0")), 400),
        (
            with_key(TestRequest::post().uri("/v1/pets"))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload(too_big),
            413,
        ),
        (
            with_key(TestRequest::post().uri("/v1/pets").set_payload("x")),
            415,
        ),
        (TestRequest::get().uri("/v1/pets"), 401),
    ];
    for (request, status) in cases {
        let reply = app.send(request).await;
        assert_eq!(reply.status.as_u16(), status);
        let (limit, _, reset) = limit_headers(&reply);
        let expected = if status == 401 { 60 } else { u32::MAX as u64 };
        assert_eq!(limit, expected, "{status}");
        assert!(reset > T0, "{status}");
    }
    // Health checks and metrics are never limited, whatever the method (and `/metrics` where
    // it is not served: this app has no exporter).
    let unlimited = [
        (TestRequest::get().uri("/healthz"), 200),
        (TestRequest::get().uri("/readyz"), 200),
        (TestRequest::post().uri("/healthz"), 404),
        (TestRequest::delete().uri("/readyz"), 404),
        (TestRequest::get().uri("/metrics"), 404),
    ];
    for (request, status) in unlimited {
        let reply = app.send(request).await;
        assert_eq!(reply.status.as_u16(), status);
        assert_eq!(
            reply.header("x-ratelimit-limit"),
            None,
            "{status}: not limited"
        );
    }
    // Open to anyone and counted, each request once: the API's description, the docs page
    // and its redirect, and unknown paths (inside the docs page's prefix too).
    let anonymous =
        |request: TestRequest| request.peer_addr("192.0.2.9:1000".parse().expect("addr"));
    let open = [
        (TestRequest::get().uri("/v1/openapi.json"), 200),
        (TestRequest::get().uri("/docs/"), 200),
        (TestRequest::get().uri("/docs"), 308),
        (TestRequest::post().uri("/docs/index.html"), 404),
        (TestRequest::get().uri("/nowhere"), 404),
    ];
    for (i, (request, status)) in open.into_iter().enumerate() {
        let reply = app.send(anonymous(request)).await;
        assert_eq!(reply.status.as_u16(), status, "request {i}");
        assert_eq!(limit_headers(&reply).1, 59 - i as u64, "request {i}");
    }
}

async fn ipv6_clients_without_a_key_are_counted_per_64_prefix(app: TestApp) {
    let from = |addr: &str| get_from("/v1/pets", addr);
    let first = app.send(from("[2001:db8:7:7::1]:1000")).await;
    let same_host = app.send(from("[2001:db8:7:7:ffff:1:2:3]:1000")).await;
    let other_host = app.send(from("[2001:db8:7:8::1]:1000")).await;
    assert_eq!(limit_headers(&first).1, 59);
    assert_eq!(
        limit_headers(&same_host).1,
        58,
        "the same /64 shares its count"
    );
    assert_eq!(limit_headers(&other_host).1, 59, "another /64 has its own");
}

async fn requests_without_a_valid_key_are_limited_per_address(app: TestApp) {
    let from = |addr: &str| get_from("/v1/pets", addr);
    for i in 1..=60u64 {
        let reply = app.send(from("198.51.100.1:1000")).await;
        reply.assert_error(401, "unauthorized");
        assert_eq!(limit_headers(&reply).1, 60 - i);
    }
    let guessing = app
        .send(from("198.51.100.1:1001").insert_header((
            header::AUTHORIZATION,
            format!("Bearer pst_{}", "0".repeat(64)),
        )))
        .await;
    guessing.assert_error(429, "rate_limited");
    assert!(guessing.header("retry-after").is_some());
    let other = app.send(from("198.51.100.2:1000")).await;
    other.assert_error(401, "unauthorized");
    assert_eq!(
        limit_headers(&other).1,
        59,
        "another address has its own allowance"
    );
}

async fn enterprise_keys_get_their_custom_limits(app: TestApp) {
    let (id, key) = new_key(&app, Plan::Enterprise, Some((3, 1_000_000))).await;
    for _ in 0..3 {
        let reply = app.get_as("/v1/pets", &key).await;
        assert_eq!(reply.status, 200);
        assert_eq!(limit_headers(&reply).0, 3);
    }
    app.get_as("/v1/pets", &key)
        .await
        .assert_error(429, "rate_limited");
    // `petstore keys update`: new limits apply from the next lookup.
    let raised = RateLimits::custom(10, 1_000_000).expect("limits");
    assert!(
        app.store
            .update_key_plan(id, Plan::Enterprise, Some(raised))
            .await
            .expect("update")
    );
    let reply = app.get_as("/v1/pets", &key).await;
    assert_eq!(reply.status, 200);
    assert_eq!(limit_headers(&reply), (10, 6, T0 + 60));
}

async fn refused_requests_do_no_work(app: TestApp) {
    let (_, key) = new_key(&app, Plan::Enterprise, Some((1, 100))).await;
    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    let post = |body: &str| {
        TestRequest::post()
            .uri("/v1/pets")
            .insert_header((header::AUTHORIZATION, format!("Bearer {key}")))
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(body.to_owned())
    };
    // Not parsed: an invalid body is not a 400 but a 429.
    app.send(post("{not json"))
        .await
        .assert_error(429, "rate_limited");
    // Not stored: a valid body creates nothing.
    app.send(post(r#"{"name":"Sneaky","categoryId":1}"#))
        .await
        .assert_error(429, "rate_limited");
    assert_eq!(app.get("/v1/pets").await.json(), serde_json::json!([]));
}

/// The 2 requests a minute of `key` (an enterprise key limited so), then `THRESHOLD` refused
/// ones: the next one is banned.
async fn use_up_and_push_on(app: &TestApp, key: &str) {
    for _ in 0..2 {
        assert_eq!(app.get_as("/v1/pets", key).await.status, 200);
    }
    for _ in 0..THRESHOLD {
        app.get_as("/v1/pets", key)
            .await
            .assert_error(429, "rate_limited");
    }
}

async fn a_key_that_keeps_pushing_is_banned_escalating_until_unbanned(app: TestApp) {
    let (id, key) = new_key(&app, Plan::Enterprise, Some((2, 1_000))).await;
    use_up_and_push_on(&app, &key).await;
    let banned = app.get_as("/v1/pets", &key).await;
    banned.assert_error(429, "temporarily_banned");
    assert_eq!(banned.header("retry-after"), Some("300"));
    assert_eq!(banned.headers.get_all("retry-after").count(), 1);
    assert_eq!(limit_headers(&banned), (2, 0, T0 + 5 + 300));
    let stored = petstore_domain::key_admin::all(&*app.store)
        .await
        .expect("list")
        .into_iter()
        .find(|k| k.id == id)
        .expect("key");
    assert_eq!(
        stored.ban.map(|b| (b.until, b.level)),
        Some((T0 + 305, 1)),
        "`keys list` sees it"
    );

    app.clock.set(T0 + 200);
    let still = app.get_as("/v1/pets", &key).await;
    still.assert_error(429, "temporarily_banned");
    assert_eq!(still.header("retry-after"), Some("105"));

    // After the ban, the same abuse earns a longer one.
    app.clock.set(T0 + 305);
    use_up_and_push_on(&app, &key).await;
    let again = app.get_as("/v1/pets", &key).await;
    again.assert_error(429, "temporarily_banned");
    assert_eq!(again.header("retry-after"), Some("600"));

    // `petstore keys unban`: the key works again (within its limits).
    assert!(app.store.unban_key(id).await.expect("unban"));
    app.get_as("/v1/pets", &key)
        .await
        .assert_error(429, "rate_limited");
    app.clock.set(T0 + 400);
    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
}

async fn the_status_reads_the_counters_without_counting(app: TestApp) {
    let (_, key) = new_key(&app, Plan::Enterprise, Some((3, 1_000))).await;
    let status = |reply: &Reply| {
        let body = reply.json();
        (
            body["minute"]["remaining"].as_u64(),
            body["day"]["remaining"].as_u64(),
        )
    };
    let fresh = app.get_as("/v1/rate_limit", &key).await;
    assert_eq!(fresh.status, 200);
    assert_eq!(status(&fresh), (Some(3), Some(1_000)));
    assert_eq!(limit_headers(&fresh), (3, 3, T0 + 60));
    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    for _ in 0..5 {
        assert_eq!(
            status(&app.get_as("/v1/rate_limit", &key).await),
            (Some(2), Some(999))
        );
    }
    for _ in 0..2 {
        assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    }
    let spent = app.get_as("/v1/rate_limit", &key).await;
    assert_eq!(spent.status, 200);
    assert_eq!(status(&spent), (Some(0), Some(997)));
    // The next minute, the minute's window is whole again.
    app.clock.set(T0 + 60);
    assert_eq!(
        status(&app.get_as("/v1/rate_limit", &key).await),
        (Some(3), Some(997))
    );
    // A banned address gets its 429 from the status too, key or not.
    let from = || get_from("/v1/rate_limit", "203.0.113.7:5");
    let pets = || get_from("/v1/pets", "203.0.113.7:5");
    for _ in 0..60 {
        app.send(pets()).await.assert_error(401, "unauthorized");
    }
    for _ in 0..=THRESHOLD {
        app.send(pets()).await;
    }
    app.send(from())
        .await
        .assert_error(429, "temporarily_banned");
}

async fn an_address_that_keeps_pushing_is_banned(app: TestApp) {
    let from = || get_from("/v1/pets", "203.0.113.9:5");
    for _ in 0..60 {
        app.send(from()).await.assert_error(401, "unauthorized");
    }
    for _ in 0..THRESHOLD {
        app.send(from()).await.assert_error(429, "rate_limited");
    }
    let banned = app.send(from()).await;
    banned.assert_error(429, "temporarily_banned");
    assert_eq!(banned.header("retry-after"), Some("300"));
    app.clock.set(T0 + 120);
    app.send(from())
        .await
        .assert_error(429, "temporarily_banned");
    app.clock.set(T0 + 305);
    app.send(from()).await.assert_error(401, "unauthorized");
}

/// Requests counted together (in one batch to Redis) cross the threshold together: every one
/// past it is refused, and one ban starts, counted and logged once, for a key and for an
/// address. (With counters in memory these requests do not overlap here, so that run checks
/// the plain case; `MemoryCounters`' own test starts a ban while one is in force.)
async fn a_burst_crossing_the_threshold_together_starts_one_ban(app: TestApp) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let metrics = recorder.handle();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (_, key) = new_key(&app, Plan::Enterprise, Some((2, 1_000))).await;
    for _ in 0..2 {
        assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
    }
    let burst = (0..20).map(|_| app.get_as("/v1/pets", &key));
    for reply in futures_util::future::join_all(burst).await {
        assert_eq!(reply.status, 429);
    }
    app.get_as("/v1/pets", &key)
        .await
        .assert_error(429, "temporarily_banned");

    let from = || get_from("/v1/pets", "203.0.113.10:5");
    for _ in 0..60 {
        app.send(from()).await.assert_error(401, "unauthorized");
    }
    let burst = (0..20).map(|_| app.send(from()));
    for reply in futures_util::future::join_all(burst).await {
        assert_eq!(reply.status, 429);
    }
    app.send(from())
        .await
        .assert_error(429, "temporarily_banned");

    let rendered = metrics.render();
    for subject in ["key", "address"] {
        let line = format!("petstore_rate_limit_bans_total{{subject=\"{subject}\"}} 1\n");
        assert!(rendered.contains(&line), "{line} not in {rendered}");
    }
}

limiter_tests!(
    a_free_key_gets_exactly_60_requests_a_minute,
    the_day_window_is_enforced_too,
    every_response_carries_the_headers,
    ipv6_clients_without_a_key_are_counted_per_64_prefix,
    requests_without_a_valid_key_are_limited_per_address,
    enterprise_keys_get_their_custom_limits,
    refused_requests_do_no_work,
    a_key_that_keeps_pushing_is_banned_escalating_until_unbanned,
    the_status_reads_the_counters_without_counting,
    an_address_that_keeps_pushing_is_banned,
    a_burst_crossing_the_threshold_together_starts_one_ban,
);
