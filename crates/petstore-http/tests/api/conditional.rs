//! Conditional requests: every tagged read answers `304` to its own tag (one, in a list, `*`,
//! weakly compared) with the headers its `200` has and no body; the tags change with what the
//! body shows and with nothing else; a `304` needs a valid key, and is taken back from the
//! counts up to the key's per-minute limit a minute, after which it counts; caching headers.

use actix_web::http::{Method, header};
use actix_web::test::TestRequest;
use petstore_domain::{KeySpec, Plan};
use serde_json::json;

use crate::api_tests;
use crate::helpers::{Reply, TestApp};

/// 2026-11-21T12:34:00Z, the start of a minute.
const T0: u64 = 1_795_264_440;

fn etag(reply: &Reply) -> String {
    let tag = reply
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag on a {}", reply.status))
        .to_owned();
    assert!(
        tag.len() == 20 && tag.starts_with("W/\"") && tag.ends_with('"'),
        "a weak tag: {tag}"
    );
    tag
}

async fn conditional(app: &TestApp, uri: &str, key: Option<&str>, tags: &str) -> Reply {
    let mut request = TestRequest::get()
        .uri(uri)
        .insert_header((header::IF_NONE_MATCH, tags.to_owned()));
    if let Some(key) = key {
        request = request.insert_header((header::AUTHORIZATION, format!("Bearer {key}")));
    }
    app.send(request).await
}

async fn free_key(app: &TestApp) -> String {
    let spec = KeySpec::new(Plan::Free, "conditional", None).expect("spec");
    let (_, secret) = app.store.create_key(&spec).await.expect("create");
    secret.expose().to_owned()
}

/// Every tagged read of the public API, for the data `app` holds after [`seed`].
async fn tagged_reads(app: &TestApp) -> Vec<String> {
    let pets = app.get("/v1/pets?limit=1").await.json();
    let first = pets[0]["id"].as_i64().expect("a pet");
    let orders = app.get("/v1/store/orders").await.json();
    let order = orders[0]["id"].as_i64().expect("an order");
    vec![
        "/v1/pets".into(),
        "/v1/pets?limit=1".into(),
        format!("/v1/pets?limit=1&after={first}"),
        "/v1/pets?status=pending".into(),
        format!("/v1/pets/{first}"),
        "/v1/store/orders".into(),
        format!("/v1/store/orders/{order}"),
        "/v1/store/inventory".into(),
        "/v1/openapi.json".into(),
    ]
}

async fn seed(app: &TestApp) {
    let rex = app.create_pet("Rex", "available").await;
    app.create_pet("Tom", "available").await;
    let reply = app
        .post_json("/v1/store/orders", &json!({"petId": rex["id"]}).to_string())
        .await;
    assert_eq!(reply.status, 201);
}

async fn every_tagged_read_answers_304_to_its_own_tag(app: TestApp) {
    seed(&app).await;
    for uri in tagged_reads(&app).await {
        let ok = app.get(&uri).await;
        assert_eq!(ok.status, 200, "{uri}");
        let tag = etag(&ok);
        let public = uri.ends_with("openapi.json");
        let caching = if public {
            "public, no-cache"
        } else {
            "private, no-cache"
        };
        assert_eq!(ok.header("cache-control"), Some(caching), "{uri}");
        if !public {
            assert_eq!(ok.header("vary"), Some("Authorization"), "{uri}");
        }
        // HEAD is tagged alike.
        let head = app
            .send(
                TestRequest::default()
                    .method(actix_web::http::Method::HEAD)
                    .uri(&uri)
                    .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key))),
            )
            .await;
        assert_eq!(head.header("etag"), Some(tag.as_str()), "HEAD {uri}");
        let head_again = app
            .send(
                TestRequest::default()
                    .method(actix_web::http::Method::HEAD)
                    .uri(&uri)
                    .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
                    .insert_header((header::IF_NONE_MATCH, tag.clone())),
            )
            .await;
        assert_eq!(head_again.status, 304, "conditional HEAD {uri}");
        let strong = tag.trim_start_matches("W/").to_owned();
        for tags in [
            tag.clone(),
            strong.clone(),
            format!("\"stale\", {tag}"),
            format!("W/\"stale\",{strong}"),
            "*".to_owned(),
        ] {
            let not_modified = conditional(&app, &uri, Some(&app.key), &tags).await;
            assert_eq!(not_modified.status, 304, "{uri} with {tags}");
            assert!(not_modified.body.is_empty(), "{uri}: a 304 has no body");
            assert_eq!(not_modified.header("etag"), Some(tag.as_str()), "{uri}");
            // The counts (which the HEAD changed) are the free-revalidation test's.
            for name in ["x-ratelimit-remaining", "ratelimit"] {
                assert!(not_modified.header(name).is_some(), "{uri}: {name}");
            }
            for name in [
                "cache-control",
                "vary",
                "x-ratelimit-limit",
                "x-ratelimit-reset",
                "ratelimit-policy",
                "deprecation",
                "sunset",
                "link",
                "x-api-stability",
            ] {
                assert_eq!(
                    not_modified.header(name),
                    ok.header(name),
                    "{uri}: {name} as on the 200"
                );
            }
        }
        for other in ["\"stale\"", "W/\"0000000000000000\"", "", "garbage"] {
            let changed = conditional(&app, &uri, Some(&app.key), other).await;
            assert_eq!(changed.status, 200, "{uri} with {other}");
            assert_eq!(changed.body, ok.body, "{uri}");
        }
    }
}

async fn tags_follow_what_the_body_shows(app: TestApp) {
    let tag = |reply: Reply| etag(&reply);
    let rex = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let page = tag(app.get("/v1/pets?limit=1").await);
    let pet = tag(app.get(&format!("/v1/pets/{rex}")).await);
    let inventory = tag(app.get("/v1/store/inventory").await);
    let all = tag(app.get("/v1/pets").await);
    // Asking again changes nothing.
    assert_eq!(tag(app.get("/v1/pets?limit=1").await), page);
    assert_eq!(tag(app.get("/v1/pets").await), all);
    // A pet after the first: the first page's items are the same, but it gains a next link.
    app.create_pet("Tom", "available").await;
    let paged = app.get("/v1/pets?limit=1").await;
    assert!(paged.next_link().is_some());
    assert_ne!(etag(&paged), page, "the next link is part of the page");
    assert_ne!(tag(app.get("/v1/pets").await), all);
    assert_eq!(tag(app.get(&format!("/v1/pets/{rex}")).await), pet);
    // An order: the pet's status, the inventory, the orders.
    let orders = tag(app.get("/v1/store/orders").await);
    let placed = app
        .post_json("/v1/store/orders", &json!({"petId": rex}).to_string())
        .await
        .json();
    assert_ne!(tag(app.get(&format!("/v1/pets/{rex}")).await), pet);
    assert_ne!(tag(app.get("/v1/store/inventory").await), inventory);
    assert_ne!(tag(app.get("/v1/store/orders").await), orders);
    let order = format!("/v1/store/orders/{}", placed["id"]);
    let before = tag(app.get(&order).await);
    let cancelled = app
        .send(
            TestRequest::delete()
                .uri(&order)
                .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key))),
        )
        .await;
    assert_eq!(cancelled.status, 200);
    assert_ne!(tag(app.get(&order).await), before, "cancelled");
    assert_eq!(
        tag(app.get(&format!("/v1/pets/{rex}")).await),
        pet,
        "available again: the first tag again"
    );
}

async fn tags_are_the_same_on_every_instance(app: TestApp) {
    seed(&app).await;
    // Another instance (its own state, limiter and key) over the same storage.
    let other = TestApp::with_storage(app.store.clone()).await;
    for uri in ["/v1/pets", "/v1/pets?status=pending", "/v1/store/inventory"] {
        let here = app.get(uri).await;
        let there = other.get(uri).await;
        assert_eq!(etag(&here), etag(&there), "{uri}");
        let not_modified = conditional(&other, uri, Some(&other.key), &etag(&here)).await;
        assert_eq!(not_modified.status, 304, "{uri}");
    }
}

async fn a_304_needs_a_valid_key(app: TestApp) {
    seed(&app).await;
    for uri in tagged_reads(&app).await {
        if uri.ends_with("openapi.json") {
            continue;
        }
        let tag = etag(&app.get(&uri).await);
        let anonymous = conditional(&app, &uri, None, &tag).await;
        anonymous.assert_error(401, "unauthorized");
        assert_eq!(anonymous.header("etag"), None, "{uri}");
        let unknown = format!("pst_{}", "0".repeat(64));
        let refused = conditional(&app, &uri, Some(&unknown), &tag).await;
        refused.assert_error(401, "unauthorized");
        assert_eq!(refused.header("etag"), None, "{uri}");
    }
}

api_tests!(
    every_tagged_read_answers_304_to_its_own_tag,
    tags_follow_what_the_body_shows,
    tags_are_the_same_on_every_instance,
    a_304_needs_a_valid_key,
);

fn remaining(reply: &Reply) -> u64 {
    reply
        .header("x-ratelimit-remaining")
        .expect("X-RateLimit-Remaining")
        .parse()
        .expect("a number")
}

/// A Free key (60 a minute): its `304`s are free up to 60 a minute, then counted like any
/// answer, so a client sending nothing but matching conditional requests is stopped after 119
/// of them in a minute (60 free, 59 counted after the `200` that gave it the tag).
#[actix_web::test]
async fn a_304_is_free_up_to_the_minute_limit_then_counted_then_refused() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("SQLite");
    app.clock.set(T0);
    let key = free_key(&app).await;
    let first = app.get_as("/v1/pets", &key).await;
    assert_eq!(remaining(&first), 59);
    let tag = etag(&first);
    for i in 1..=60 {
        let reply = conditional(&app, "/v1/pets", Some(&key), &tag).await;
        assert_eq!(reply.status, 304, "free revalidation {i}");
        assert_eq!(remaining(&reply), 59, "not counted: {i}");
        assert_eq!(
            reply
                .header("ratelimit")
                .map(|v| v.starts_with("\"minute\";r=59;")),
            Some(true),
            "{:?}",
            reply.header("ratelimit")
        );
    }
    for left in (0..59).rev() {
        let reply = conditional(&app, "/v1/pets", Some(&key), &tag).await;
        assert_eq!(reply.status, 304);
        assert_eq!(remaining(&reply), left, "counted past the free ones");
    }
    let refused = conditional(&app, "/v1/pets", Some(&key), &tag).await;
    refused.assert_error(429, "rate_limited");
    assert_eq!(refused.header("retry-after"), Some("60"));
    // The next minute has its own free revalidations; the day counted the 60 that were not.
    app.clock.set(T0 + 60);
    let reply = conditional(&app, "/v1/pets", Some(&key), &tag).await;
    assert_eq!((reply.status.as_u16(), remaining(&reply)), (304, 60));
    let status = app.get_as("/v1/rate_limit", &key).await.json();
    assert_eq!(status["day"]["remaining"], 1_000 - 60);
    // The documents need no key: their 304s are taken back from the address's counts alike.
    let anonymous = conditional(&app, "/v1/openapi.json", None, "*").await;
    assert_eq!(anonymous.status, 304);
}

#[actix_web::test]
async fn the_rate_limit_status_is_not_tagged_nor_stored() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("SQLite");
    let reply = app.get("/v1/rate_limit").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("etag"), None);
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let again = conditional(&app, "/v1/rate_limit", Some(&app.key), "*").await;
    assert_eq!(again.status, 200, "nothing to compare with");
}

#[actix_web::test]
async fn the_docs_page_files_are_tagged_for_anyone() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("SQLite");
    for uri in [
        "/docs/",
        "/docs/swagger-ui.css",
        "/docs/swagger-initializer.js",
    ] {
        let ok = app.send(TestRequest::get().uri(uri)).await;
        assert_eq!(ok.status, 200, "{uri}");
        if uri == "/docs/" {
            let page = String::from_utf8_lossy(&ok.body);
            assert!(
                page.contains("<title>Animal Store Service: API docs</title>"),
                "the page names the API"
            );
        }
        assert_eq!(
            ok.header("cache-control"),
            Some("public, no-cache"),
            "{uri}"
        );
        // `HEAD` is answered wherever `GET` is, the docs page included.
        let head = app
            .send(TestRequest::default().method(Method::HEAD).uri(uri))
            .await;
        assert_eq!(head.status, 200, "HEAD {uri}");
        assert_eq!(head.header("etag"), ok.header("etag"), "HEAD {uri}");
        let tag = etag(&ok);
        let not_modified = conditional(&app, uri, None, &tag).await;
        assert_eq!(not_modified.status, 304, "{uri}");
        assert!(not_modified.body.is_empty());
        assert_eq!(not_modified.header("etag"), Some(tag.as_str()));
        assert!(not_modified.header("content-security-policy").is_some());
        let changed = conditional(&app, uri, None, "\"other\"").await;
        assert_eq!(changed.body, ok.body, "{uri}");
    }
}
