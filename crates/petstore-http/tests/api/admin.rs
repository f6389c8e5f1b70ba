//! The admin API (`/admin/v1/keys`) in process, on every backend: admin tokens, every key
//! operation and its effect on the public API, the Error object on every failure, and the
//! admin routes' absence from the public application.

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_domain::AdminTokenSpec;
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{Reply, TestApp};

/// A new admin token's secret.
pub(crate) async fn admin_token(app: &TestApp, label: &str) -> String {
    let spec = AdminTokenSpec::new(label).expect("label");
    let (_, secret) = app
        .store
        .create_admin_token(&spec)
        .await
        .expect("create an admin token");
    secret.expose().to_owned()
}

pub(crate) fn bearer(token: &str) -> (header::HeaderName, String) {
    (header::AUTHORIZATION, format!("Bearer {token}"))
}

pub(crate) async fn admin_get(app: &TestApp, token: &str, uri: &str) -> Reply {
    app.send_admin(TestRequest::get().uri(uri).insert_header(bearer(token)))
        .await
}

pub(crate) async fn admin_send(
    app: &TestApp,
    token: &str,
    method: &str,
    uri: &str,
    body: Value,
) -> Reply {
    let request = match method {
        "POST" => TestRequest::post(),
        "PATCH" => TestRequest::patch(),
        other => panic!("method {other}"),
    };
    app.send_admin(
        request
            .uri(uri)
            .insert_header(bearer(token))
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(body.to_string()),
    )
    .await
}

pub(crate) async fn admin_post(app: &TestApp, token: &str, uri: &str) -> Reply {
    app.send_admin(TestRequest::post().uri(uri).insert_header(bearer(token)))
        .await
}

/// `GET /v1/pets` with `key` on the public application.
async fn public_status(app: &TestApp, key: &str) -> u16 {
    app.get_as("/v1/pets", key).await.status.as_u16()
}

async fn every_bad_token_gets_the_same_401(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    let revoked = admin_token(&app, "old").await;
    let tokens = app.store.list_admin_tokens().await.expect("list");
    let old = tokens.iter().find(|t| t.label == "old").expect("old").id;
    assert!(app.store.revoke_admin_token(old).await.expect("revoke"));
    let unknown = format!("psa_{}", "0".repeat(64));
    let mut messages = Vec::new();
    for sent in [
        None,
        Some(format!("Basic {token}")),
        Some("Bearer".to_owned()),
        Some(format!("Bearer {}", app.key)),
        Some(format!("Bearer {unknown}")),
        Some(format!("Bearer {revoked}")),
        Some(format!("Bearer {}", &token[..20])),
    ] {
        let mut request = TestRequest::get().uri("/admin/v1/keys");
        if let Some(value) = &sent {
            request = request.insert_header((header::AUTHORIZATION, value.clone()));
        }
        let reply = app.send_admin(request).await;
        messages.push(reply.assert_error(401, "unauthorized"));
        // RFC 6750 §3: a bearer token that is not a valid admin token is `invalid_token`,
        // whatever is wrong with it; without one, the challenge names no error.
        let token_sent = sent
            .as_deref()
            .is_some_and(|value| value.starts_with("Bearer ") && value.len() > 7);
        let challenge = if token_sent {
            "Bearer realm=\"petstore\", error=\"invalid_token\""
        } else {
            "Bearer realm=\"petstore\""
        };
        assert_eq!(
            reply.header("www-authenticate"),
            Some(challenge),
            "{sent:?}"
        );
    }
    messages.dedup();
    assert_eq!(
        messages.len(),
        1,
        "one answer whatever is wrong: {messages:?}"
    );
    assert!(messages[0].contains("admin token"), "{messages:?}");
    // Refused before the body is read: a bad body with a bad token is still 401.
    let reply = admin_send(
        &app,
        &unknown,
        "POST",
        "/admin/v1/keys",
        json!({"nonsense": 1}),
    )
    .await;
    reply.assert_error(401, "unauthorized");
    // The good one works, and the public API's limits do not apply.
    let reply = admin_get(&app, &token, "/admin/v1/keys").await;
    assert_eq!(reply.status, 200);
    assert!(reply.header("x-ratelimit-limit").is_none());
}

async fn a_key_issued_over_http_works_and_goes_through_its_lifecycle(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    let created = admin_send(
        &app,
        &token,
        "POST",
        "/admin/v1/keys",
        json!({
            "plan": "pro", "label": "ACME", "scope": "read-only"
        }),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.json());
    assert_eq!(created.header("cache-control"), Some("no-store"));
    let body = created.json();
    let id = body["id"].as_i64().expect("id");
    assert_eq!(
        created.header("location"),
        Some(format!("/admin/v1/keys/{id}").as_str())
    );
    let secret = body["key"].as_str().expect("the secret").to_owned();
    assert!(secret.starts_with(body["prefix"].as_str().expect("prefix")));
    assert_eq!(body["plan"], "pro");
    assert_eq!(body["perMinute"], 300);
    assert_eq!(body["scope"], "read-only");
    assert_eq!(body["state"], "active");
    assert_eq!(body["label"], "ACME");
    // The key works on the public API, read-only.
    assert_eq!(public_status(&app, &secret).await, 200);
    let write = app
        .send(
            TestRequest::post()
                .uri("/v1/pets")
                .insert_header(bearer(&secret))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload(r#"{"name":"Rex","categoryId":1}"#),
        )
        .await;
    write.assert_error(403, "insufficient_scope");

    // Shown, never with its secret.
    let shown = admin_get(&app, &token, &format!("/admin/v1/keys/{id}")).await;
    assert_eq!(shown.status, 200);
    assert_eq!(shown.json()["label"], "ACME");
    assert!(shown.json().get("key").is_none());

    // Changed: plan with custom limits, scope, label, together.
    let updated = admin_send(
        &app,
        &token,
        "PATCH",
        &format!("/admin/v1/keys/{id}"),
        json!({
            "plan": "enterprise", "perMinute": 5000, "perDay": 900000,
            "scope": "read-write", "label": "ACME Corp"
        }),
    )
    .await;
    assert_eq!(updated.status, 200, "{:?}", updated.json());
    let view = updated.json();
    assert_eq!(
        (view["plan"].clone(), view["perMinute"].clone()),
        (json!("enterprise"), json!(5000))
    );
    assert_eq!(
        (view["scope"].clone(), view["label"].clone()),
        (json!("read-write"), json!("ACME Corp"))
    );

    // Rotated with no grace: the old secret stops, the new one works, the id stays.
    let rotated = admin_send(
        &app,
        &token,
        "POST",
        &format!("/admin/v1/keys/{id}/rotate"),
        json!({"graceSeconds": 0}),
    )
    .await;
    assert_eq!(rotated.status, 200, "{:?}", rotated.json());
    let new_secret = rotated.json()["key"]
        .as_str()
        .expect("new secret")
        .to_owned();
    assert_eq!(rotated.json()["id"], id);
    assert_ne!(new_secret, secret);
    assert_eq!(public_status(&app, &secret).await, 401);
    assert_eq!(public_status(&app, &new_secret).await, 200);
    // With a grace period, the previous secret keeps working until it ends.
    let graced = admin_send(
        &app,
        &token,
        "POST",
        &format!("/admin/v1/keys/{id}/rotate"),
        json!({}),
    )
    .await;
    assert_eq!(graced.status, 200);
    assert!(graced.json()["previousSecretUntil"].is_string());
    assert_eq!(public_status(&app, &new_secret).await, 200);

    // Unbanned (nothing to lift is fine), then revoked: refused on the public API.
    let unbanned = admin_post(&app, &token, &format!("/admin/v1/keys/{id}/unban")).await;
    assert_eq!(unbanned.status, 200);
    let revoked = admin_post(&app, &token, &format!("/admin/v1/keys/{id}/revoke")).await;
    assert_eq!(revoked.status, 200);
    assert_eq!(revoked.json()["state"], "revoked");
    let current = graced.json()["key"].as_str().expect("secret").to_owned();
    assert_eq!(public_status(&app, &current).await, 401);
    // A revoked key cannot be rotated; revoking again keeps it revoked.
    let again = admin_send(
        &app,
        &token,
        "POST",
        &format!("/admin/v1/keys/{id}/rotate"),
        json!({}),
    )
    .await;
    again.assert_error(409, "key_revoked");
    let twice = admin_post(&app, &token, &format!("/admin/v1/keys/{id}/revoke")).await;
    assert_eq!(twice.json()["revokedAt"], revoked.json()["revokedAt"]);
}

async fn listing_filters_and_pages(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    // The app's own key (enterprise) is id 1; three more.
    for plan in ["free", "pro", "free"] {
        let reply = admin_send(
            &app,
            &token,
            "POST",
            "/admin/v1/keys",
            json!({"plan": plan}),
        )
        .await;
        assert_eq!(reply.status, 201);
    }
    let free = admin_get(&app, &token, "/admin/v1/keys?plan=free").await;
    let ids = |reply: &Reply| -> Vec<i64> {
        reply.json()["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|key| key["id"].as_i64().expect("id"))
            .collect()
    };
    assert_eq!(ids(&free), vec![2, 4]);
    assert_eq!(free.json()["nextAfter"], Value::Null);
    let first = admin_get(&app, &token, "/admin/v1/keys?limit=2").await;
    assert_eq!(ids(&first), vec![1, 2]);
    assert_eq!(first.json()["nextAfter"], 2);
    let second = admin_get(&app, &token, "/admin/v1/keys?limit=2&after=2").await;
    assert_eq!(ids(&second), vec![3, 4]);
    admin_post(&app, &token, "/admin/v1/keys/3/revoke").await;
    let active = admin_get(&app, &token, "/admin/v1/keys?state=active").await;
    assert_eq!(ids(&active), vec![1, 2, 4]);
    let revoked = admin_get(&app, &token, "/admin/v1/keys?state=revoked&plan=pro").await;
    assert_eq!(ids(&revoked), vec![3]);
    // An expiring key is active until it expires, then listed as expired.
    let at = petstore_domain::Clock::unix_seconds(app.clock.as_ref()) + 3600;
    let expires = petstore_domain::key_admin::rfc3339(Some(at as i64)).expect("time");
    let expiring = admin_send(
        &app,
        &token,
        "POST",
        "/admin/v1/keys",
        json!({"plan": "free", "expiresAt": expires}),
    )
    .await;
    assert_eq!(expiring.status, 201, "{:?}", expiring.json());
    assert_eq!(expiring.json()["expiresAt"], json!(expires));
    let expired = admin_get(&app, &token, "/admin/v1/keys?state=expired").await;
    assert_eq!(ids(&expired), Vec::<i64>::new());
    app.clock.advance(std::time::Duration::from_secs(3601));
    let expired = admin_get(&app, &token, "/admin/v1/keys?state=expired").await;
    assert_eq!(ids(&expired), vec![5]);
    // Bad parameters are named.
    for (uri, parameter) in [
        ("/admin/v1/keys?plan=gold", "plan"),
        ("/admin/v1/keys?state=sleeping", "state"),
        ("/admin/v1/keys?limit=0", "limit"),
        ("/admin/v1/keys?after=-1", "after"),
        ("/admin/v1/keys?plan=free&plan=pro", "plan"),
    ] {
        let message = admin_get(&app, &token, uri)
            .await
            .assert_error(400, "invalid_query_parameter");
        assert!(message.contains(parameter), "{uri}: {message}");
    }
    admin_get(&app, &token, "/admin/v1/keys?color=red")
        .await
        .assert_error(400, "unknown_query_parameter");
}

async fn every_bad_input_gets_a_named_error_and_changes_nothing(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    let create = |body: Value| {
        let token = token.clone();
        let app = &app;
        async move { admin_send(app, &token, "POST", "/admin/v1/keys", body).await }
    };
    for (body, code, field) in [
        (json!({}), "missing_field", "plan"),
        (json!({"plan": "gold"}), "invalid_field", "plan"),
        (
            json!({"plan": "pro", "scope": "root"}),
            "invalid_field",
            "scope",
        ),
        (
            json!({"plan": "pro", "perMinute": 10, "perDay": 100}),
            "invalid_field",
            "perMinute",
        ),
        (json!({"plan": "enterprise"}), "invalid_field", "perMinute"),
        (
            json!({"plan": "enterprise", "perMinute": 10}),
            "invalid_field",
            "perDay",
        ),
        (
            json!({"plan": "pro", "label": "x".repeat(101)}),
            "invalid_field",
            "label",
        ),
        (
            json!({"plan": "pro", "expiresAt": "tomorrow"}),
            "invalid_field",
            "expiresAt",
        ),
        (
            json!({"plan": "pro", "expiresAt": "2001-01-01T00:00:00Z"}),
            "invalid_field",
            "expiresAt",
        ),
        (
            json!({"plan": "pro", "secret": "mine"}),
            "unknown_field",
            "secret",
        ),
        (json!({"plan": 3}), "invalid_field", "plan"),
    ] {
        let message = create(body.clone()).await.assert_error(400, code);
        assert!(message.contains(field), "{body}: {message}");
    }
    let keys = petstore_domain::key_admin::all(&*app.store)
        .await
        .expect("list");
    assert_eq!(keys.len(), 1, "nothing was created");

    let patch = |uri: String, body: Value| {
        let token = token.clone();
        let app = &app;
        async move { admin_send(app, &token, "PATCH", &uri, body).await }
    };
    patch("/admin/v1/keys/1".into(), json!({}))
        .await
        .assert_error(400, "invalid_field");
    patch(
        "/admin/v1/keys/1".into(),
        json!({"perMinute": 5, "perDay": 5}),
    )
    .await
    .assert_error(400, "invalid_field");
    // The scope is valid but the label is not: nothing changes.
    patch(
        "/admin/v1/keys/1".into(),
        json!({"scope": "read-only", "label": "a\u{7}b"}),
    )
    .await
    .assert_error(400, "invalid_field");
    let key = app.store.find_key(1).await.expect("find").expect("key 1");
    assert_eq!(key.scope.as_str(), "read-write");
    patch("/admin/v1/keys/99".into(), json!({"label": "x"}))
        .await
        .assert_error(404, "key_not_found");
    patch("/admin/v1/keys/abc".into(), json!({"label": "x"}))
        .await
        .assert_error(400, "invalid_path_parameter");
    admin_get(&app, &token, "/admin/v1/keys/99")
        .await
        .assert_error(404, "key_not_found");
    admin_post(&app, &token, "/admin/v1/keys/99/revoke")
        .await
        .assert_error(404, "key_not_found");
    admin_post(&app, &token, "/admin/v1/keys/99/unban")
        .await
        .assert_error(404, "key_not_found");
    admin_send(&app, &token, "POST", "/admin/v1/keys/99/rotate", json!({}))
        .await
        .assert_error(404, "key_not_found");
    admin_send(
        &app,
        &token,
        "POST",
        "/admin/v1/keys/1/rotate",
        json!({"graceSeconds": -1}),
    )
    .await
    .assert_error(400, "invalid_field");
    // A grace period past what any date can say is refused, and the key keeps its secret.
    let message = admin_send(
        &app,
        &token,
        "POST",
        "/admin/v1/keys/1/rotate",
        json!({"graceSeconds": 300_000_000_000u64}),
    )
    .await
    .assert_error(400, "invalid_field");
    assert!(message.contains("graceSeconds"), "{message}");
    assert_eq!(
        app.get("/v1/pets").await.status,
        200,
        "the app's key still works"
    );
    let page = admin_get(&app, &token, "/admin/v1/keys?after=9223372036854775807").await;
    assert_eq!(page.json()["keys"], json!([]));
    admin_get(&app, &token, "/admin/v1/keys/1?x=1")
        .await
        .assert_error(400, "unknown_query_parameter");
    admin_send(
        &app,
        &token,
        "PATCH",
        "/admin/v1/keys/1?x=1",
        json!({"label": "y"}),
    )
    .await
    .assert_error(400, "unknown_query_parameter");
    // Without a JSON body where one is needed; a wrong method; a wrong path.
    admin_post(&app, &token, "/admin/v1/keys")
        .await
        .assert_error(415, "unsupported_media_type");
    let reply = app
        .send_admin(
            TestRequest::delete()
                .uri("/admin/v1/keys/1")
                .insert_header(bearer(&token)),
        )
        .await;
    reply.assert_error(405, "method_not_allowed");
    assert_eq!(reply.header("allow"), Some("GET, HEAD, PATCH"));
    // As the admin document says on the path.
    let document = serde_json::to_value(petstore_openapi::documents().admin()).expect("JSON");
    let said = document["paths"]["/keys/{keyId}"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("`Allow: GET, HEAD, PATCH`"), "{said}");
    admin_get(&app, &token, "/admin/v1/nothing")
        .await
        .assert_error(404, "route_not_found");
}

async fn the_admin_api_lives_only_on_the_admin_listener(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    // The public application has no admin route, whatever the credentials.
    for credentials in [token.as_str(), app.key.as_str()] {
        let reply = app.get_as("/admin/v1/keys", credentials).await;
        reply.assert_error(404, "route_not_found");
        let reply = app.get_as("/admin/v1/openapi.json", credentials).await;
        reply.assert_error(404, "route_not_found");
    }
    // The admin listener serves its document without a token.
    let document = app
        .send_admin(TestRequest::get().uri("/admin/v1/openapi.json"))
        .await;
    assert_eq!(document.status, 200);
    let document = document.json();
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["servers"][0]["url"], "/admin/v1");
    for (path, method) in [
        ("/keys", "post"),
        ("/keys", "get"),
        ("/keys/{keyId}", "get"),
        ("/keys/{keyId}", "patch"),
        ("/keys/{keyId}/rotate", "post"),
        ("/keys/{keyId}/revoke", "post"),
        ("/keys/{keyId}/unban", "post"),
    ] {
        assert!(
            document["paths"][path][method].is_object(),
            "{method} {path}"
        );
    }
    assert_eq!(
        document["components"]["securitySchemes"]["adminToken"]["scheme"],
        "bearer"
    );
    // The public document does not describe the admin API.
    let public = app.get("/v1/openapi.json").await.json();
    assert!(
        public["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .all(|path| !path.contains("admin"))
    );
}

api_tests!(
    every_bad_token_gets_the_same_401,
    a_key_issued_over_http_works_and_goes_through_its_lifecycle,
    listing_filters_and_pages,
    every_bad_input_gets_a_named_error_and_changes_nothing,
    the_admin_api_lives_only_on_the_admin_listener,
);
