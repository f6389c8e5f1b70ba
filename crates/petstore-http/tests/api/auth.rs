use crate::helpers::TestApp;
use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_domain::ApiKeySecret;

use crate::api_tests;

/// Each operation of the interface, as (method, uri).
const OPERATIONS: [(&str, &str); 4] = [
    ("GET", "/v1/pets"),
    ("POST", "/v1/pets"),
    ("GET", "/v1/pets/1"),
    ("GET", "/v1/store/orders"),
];

fn request(method: &str, uri: &str) -> TestRequest {
    let request = match method {
        "POST" => TestRequest::post()
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(r#"{"name":"Rex","categoryId":1}"#),
        _ => TestRequest::get(),
    };
    request.uri(uri)
}

async fn every_operation_without_a_key_returns_401(app: TestApp) {
    for (method, uri) in OPERATIONS {
        let reply = app.send(request(method, uri)).await;
        reply.assert_error(401, "unauthorized");
        assert_eq!(
            reply.header("www-authenticate"),
            Some("Bearer realm=\"petstore\""),
            "{method} {uri}"
        );
    }
    // Authentication comes before the method check.
    app.send(TestRequest::delete().uri("/v1/pets"))
        .await
        .assert_error(401, "unauthorized");
    // Nothing was created by the rejected POST.
    assert!(
        app.get("/v1/pets")
            .await
            .json()
            .as_array()
            .expect("array")
            .is_empty()
    );
}

async fn missing_malformed_unknown_and_revoked_keys_are_indistinguishable(app: TestApp) {
    let unknown = ApiKeySecret::from_random_bytes([0x5a; 32]);
    let (revoked, revoked_secret) = app
        .store
        .create_key(
            &petstore_domain::KeySpec::new(petstore_domain::Plan::Pro, "old", None).expect("spec"),
        )
        .await
        .expect("create");
    app.store.revoke_key(revoked.id).await.expect("revoke");
    let headers = [
        None,
        Some("Bearer".to_owned()),
        Some("Bearer not-a-key".to_owned()),
        Some(format!("Basic {}", app.key)),
        Some(format!("Bearer {}", unknown.expose())),
        Some(format!("Bearer {}", revoked_secret.expose())),
    ];
    let mut bodies = Vec::new();
    let mut challenges = Vec::new();
    for value in headers {
        let mut req = TestRequest::get().uri("/v1/pets");
        if let Some(value) = &value {
            req = req.insert_header((header::AUTHORIZATION, value.as_str()));
        }
        let reply = app.send(req).await;
        reply.assert_error(401, "unauthorized");
        bodies.push(reply.body.clone());
        challenges.push(reply.header("www-authenticate").map(str::to_owned));
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "401 answers differ: {bodies:?}"
    );
    // RFC 6750 §3: no bearer token (none, an empty one, another scheme), no error code; a token
    // that is not a valid key, `invalid_token`, the same whatever is wrong with it.
    let none = Some("Bearer realm=\"petstore\"".to_owned());
    let invalid = Some("Bearer realm=\"petstore\", error=\"invalid_token\"".to_owned());
    assert_eq!(
        challenges,
        [
            none.clone(),
            none.clone(),
            invalid.clone(),
            none,
            invalid.clone(),
            invalid
        ]
    );
}

async fn a_key_stops_working_once_revoked(app: TestApp) {
    assert_eq!(app.get("/v1/pets").await.status, 200);
    let key = petstore_domain::key_admin::all(&*app.store)
        .await
        .expect("list")
        .remove(0);
    app.store.revoke_key(key.id).await.expect("revoke");
    app.get("/v1/pets").await.assert_error(401, "unauthorized");
}

async fn the_bearer_scheme_is_case_insensitive(app: TestApp) {
    let reply = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header((header::AUTHORIZATION, format!("bEaReR {}", app.key))),
        )
        .await;
    assert_eq!(reply.status, 200);
}

api_tests!(
    every_operation_without_a_key_returns_401,
    missing_malformed_unknown_and_revoked_keys_are_indistinguishable,
    a_key_stops_working_once_revoked,
    the_bearer_scheme_is_case_insensitive,
);

/// `Authorization`: exactly one `Bearer` header carries a token (the scheme in any case, the
/// token after one or more spaces).
#[test]
fn only_one_bearer_header_carries_a_token() {
    use actix_web::http::header::{HeaderMap, HeaderValue};
    use petstore_http::auth::bearer_token;
    let headers = |values: &[&str]| {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        map
    };
    let secret = ApiKeySecret::from_random_bytes([3; 32]);
    let key = secret.expose().to_owned();
    for good in [
        format!("Bearer {key}"),
        format!("bearer  {key}"),
        format!("BEARER {key} "),
    ] {
        assert_eq!(
            bearer_token(&headers(&[&good])),
            Some(key.as_bytes()),
            "{good:?}"
        );
    }
    for bad in [
        String::new(),
        key.to_owned(),
        format!("Basic {key}"),
        format!("Bearer{key}"),
        "Bearer ".to_owned(),
        "Bearer    ".to_owned(),
    ] {
        assert_eq!(bearer_token(&headers(&[&bad])), None, "{bad:?}");
    }
    let twice = format!("Bearer {key}");
    assert_eq!(bearer_token(&headers(&[&twice, &twice])), None);
    assert_eq!(bearer_token(&HeaderMap::new()), None);
}
