//! CORS: off by default; with allowed origins, preflights are answered without a key and without
//! being counted, and responses expose the headers a browser client needs.

use actix_web::http::Method;
use actix_web::test::TestRequest;
use petstore_http::config::CorsOrigins;

use crate::helpers::TestApp;

const ORIGIN: &str = "https://app.example.com";

fn preflight() -> TestRequest {
    TestRequest::default()
        .method(Method::OPTIONS)
        .uri("/v1/pets")
        .insert_header(("origin", ORIGIN))
        .insert_header(("access-control-request-method", "POST"))
        .insert_header((
            "access-control-request-headers",
            "authorization, content-type",
        ))
}

#[actix_web::test]
async fn cors_is_off_by_default() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("sqlite");
    let reply = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", ORIGIN)),
        )
        .await;
    assert_eq!(reply.header("access-control-allow-origin"), None);
    let preflight = app.send(preflight()).await;
    assert_eq!(preflight.header("access-control-allow-origin"), None);
}

#[actix_web::test]
async fn allowed_origins_get_preflights_for_free_and_the_headers_they_need() {
    let app = TestApp::with_config(|config| {
        config.cors = CorsOrigins::Only(vec![ORIGIN.to_owned()]);
    })
    .await;
    for _ in 0..3 {
        let reply = app.send(preflight()).await;
        assert_eq!(reply.status, 200, "a preflight needs no key");
        assert!(
            reply.header("x-request-id").is_some(),
            "a preflight has its id too"
        );
        assert_eq!(reply.header("access-control-allow-origin"), Some(ORIGIN));
        let methods = reply
            .header("access-control-allow-methods")
            .unwrap_or_default();
        assert!(methods.contains("POST"), "{methods}");
        assert_eq!(reply.header("x-ratelimit-remaining"), None, "not counted");
    }
    let reply = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", ORIGIN))
                .insert_header(("authorization", format!("Bearer {}", app.key))),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("access-control-allow-origin"), Some(ORIGIN));
    let exposed = reply
        .header("access-control-expose-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for name in [
        "x-ratelimit-remaining",
        "ratelimit",
        "retry-after",
        "link",
        "location",
        "sunset",
        "deprecation",
        "x-api-stability",
        "x-request-id",
        "idempotent-replayed",
        "etag",
        "vary",
    ] {
        assert!(exposed.contains(name), "{name} not exposed: {exposed}");
    }
    // Errors carry the CORS headers too, or a browser could not read them.
    let unauthorised = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", ORIGIN)),
        )
        .await;
    unauthorised.assert_error(401, "unauthorized");
    assert_eq!(
        unauthorised.header("access-control-allow-origin"),
        Some(ORIGIN)
    );
    // The first request of the minute was the one above: the preflights were not counted.
    assert_eq!(reply.header("x-ratelimit-remaining"), Some("4294967294"));
    let other = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("origin", "https://evil.example")),
        )
        .await;
    assert_eq!(other.header("access-control-allow-origin"), None);
}

#[actix_web::test]
async fn a_refused_preflight_is_an_error_object_too() {
    let app = TestApp::with_config(|config| {
        config.cors = CorsOrigins::Only(vec![ORIGIN.to_owned()]);
    })
    .await;
    let other_origin = preflight().insert_header(("origin", "https://evil.example"));
    let refused = app.send(other_origin).await;
    let message = refused.assert_error(400, "bad_request");
    assert!(refused.header("x-request-id").is_some());
    assert_eq!(refused.header("access-control-allow-origin"), None);
    assert!(!message.is_empty());
    let other_method = preflight().insert_header(("access-control-request-method", "PUT"));
    app.send(other_method)
        .await
        .assert_error(400, "bad_request");
}
