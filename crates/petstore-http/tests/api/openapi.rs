//! The API's descriptions served: each route table and its document agree (the public and
//! the admin one), the document is served naming its servers, and the docs page over it. (What
//! the documents say is `petstore-openapi`'s tests'.)

use std::collections::BTreeSet;

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_http::HttpSettings;
use serde_json::Value;

use crate::helpers::{Reply, TestApp};

/// The public document as `petstore openapi` prints it at `/v1`.
fn generated() -> Value {
    let document = petstore_openapi::documents().public(&[], "/v1");
    serde_json::to_value(document).expect("the document serialises")
}

/// The webhook endpoints' paths, the same in both documents (the public ones a key's, the
/// admin ones the operators'), after the rest of each.
const WEBHOOK_PATHS: [&str; 6] = [
    "/webhook_endpoints",
    "/webhook_endpoints/{endpointId}",
    "/webhook_endpoints/{endpointId}/deliveries",
    "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
    "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver",
    "/webhook_endpoints/{endpointId}/rotate_secret",
];

/// The route table and the document cannot drift apart: every documented path answers another
/// method with `405` and an `Allow` naming exactly its documented operations (and `HEAD` with
/// `GET`), and none of those is answered `405`.
#[actix_web::test]
async fn every_documented_path_allows_exactly_its_documented_operations() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("sqlite");
    let with_key = |request: TestRequest| {
        request.insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
    };
    let expected = [
        "/",
        "/pets",
        "/pets/{petId}",
        "/rate_limit",
        "/store/inventory",
        "/store/orders",
        "/store/orders/{orderId}",
        "/store/orders/{orderId}/cancel",
    ];
    let send = async |request| app.send(with_key(request)).await;
    let expected = [&expected[..], &WEBHOOK_PATHS].concat();
    agrees_with_its_routes(&generated(), &expected, "/v1", send).await;
}

/// The same of the admin document and the admin listener's routes: its webhook operations are
/// described from the public ones (the operators' at the public paths, a key's under the key),
/// and each must be one the admin API serves, with the methods it serves.
#[actix_web::test]
async fn every_admin_path_allows_exactly_its_documented_operations() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("sqlite");
    let token = crate::admin::admin_token(&app, "document").await;
    let doc = serde_json::to_value(petstore_openapi::documents().admin()).expect("JSON");
    let expected = [
        "/keys",
        "/keys/{keyId}",
        "/keys/{keyId}/revoke",
        "/keys/{keyId}/rotate",
        "/keys/{keyId}/unban",
        "/keys/{keyId}/webhook_endpoints",
        "/keys/{keyId}/webhook_endpoints/{endpointId}",
        "/orders",
        "/orders/{orderId}",
        "/orders/{orderId}/approve",
        "/orders/{orderId}/cancel",
        "/orders/{orderId}/deliver",
    ];
    let send = async |request: TestRequest| {
        let request = request.insert_header(crate::admin::bearer(&token));
        app.send_admin(request).await
    };
    let expected = [&expected[..], &WEBHOOK_PATHS].concat();
    agrees_with_its_routes(&doc, &expected, "/admin/v1", send).await;
}

/// Holds `doc`'s paths (exactly `expected`) to the application `send` reaches, under `base`.
async fn agrees_with_its_routes(
    doc: &Value,
    expected: &[&str],
    base: &str,
    send: impl AsyncFn(TestRequest) -> Reply,
) {
    let paths = doc["paths"].as_object().expect("paths");
    assert_eq!(
        paths.keys().map(String::as_str).collect::<Vec<_>>(),
        expected,
        "every resource of the route table, documented"
    );
    const METHODS: [&str; 8] = [
        "get", "head", "post", "put", "patch", "delete", "options", "trace",
    ];
    for (path, item) in paths {
        let uri = format!(
            "{base}{}",
            path.replace("{petId}", "1")
                .replace("{orderId}", "1")
                .replace("{keyId}", "1")
                .replace("{endpointId}", "1")
                .replace("{deliveryId}", "1")
        );
        let mut documented: BTreeSet<String> = item
            .as_object()
            .expect("path item")
            .keys()
            .filter(|key| METHODS.contains(&key.as_str()))
            .map(|method| method.to_uppercase())
            .collect();
        assert!(!documented.is_empty(), "{uri}");
        if documented.contains("GET") {
            documented.insert("HEAD".to_owned());
        }
        let probe = ["PUT", "PATCH", "TRACE"]
            .into_iter()
            .find(|method| !documented.contains(*method))
            .expect("a method not served");
        let request = TestRequest::default().method(probe.parse().expect("a method"));
        let other = send(request.uri(&uri)).await;
        other.assert_error(405, "method_not_allowed");
        let allowed: BTreeSet<String> = other
            .header("allow")
            .unwrap_or_default()
            .split(", ")
            .map(str::to_owned)
            .collect();
        assert_eq!(allowed, documented, "{uri}");
        // The path's description says so, with the very `Allow` value.
        let said = format!("`Allow: {}`", other.header("allow").unwrap_or_default());
        assert!(
            item["description"]
                .as_str()
                .is_some_and(|text| text.contains(&said)),
            "{uri}: {said} in {}",
            item["description"]
        );
        for method in &documented {
            let method = method.parse().expect("a method");
            let reply = send(TestRequest::default().method(method).uri(&uri)).await;
            assert_ne!(reply.status, 405, "{uri}");
        }
    }
}

#[actix_web::test]
async fn openapi_json_is_served_without_a_key_naming_the_public_base_url() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("sqlite");
    let reply = app.send(TestRequest::get().uri("/v1/openapi.json")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert!(reply.header("x-ratelimit-remaining").is_some(), "counted");
    let doc = reply.json();
    assert_eq!(
        doc["servers"],
        serde_json::json!([{"url": "https://api.example.com/v1"}])
    );
    let mut rest = doc;
    rest["servers"] = generated()["servers"].clone();
    assert!(
        rest == generated(),
        "the same document as `petstore openapi`"
    );
}

/// The servers an operator names (`--openapi-servers`: a production and a staging one, as the
/// interface lists them) are the served document's, each with its name.
#[actix_web::test]
async fn openapi_json_lists_the_servers_the_operator_named() {
    let servers = petstore_http::config::NamedServers(vec![
        ("Production".into(), "https://api.example.com/v1".into()),
        ("Staging".into(), "https://staging.example.com/v1".into()),
    ]);
    let app = TestApp::with_settings(
        HttpSettings::new("/v1", Some("https://api.example.com/v1".into())).with_servers(servers),
    )
    .await;
    let doc = app
        .send(TestRequest::get().uri("/v1/openapi.json"))
        .await
        .json();
    assert_eq!(
        doc["servers"],
        serde_json::json!([
            {"url": "https://api.example.com/v1", "description": "Production"},
            {"url": "https://staging.example.com/v1", "description": "Staging"},
        ])
    );
}

#[actix_web::test]
async fn openapi_json_derives_its_server_from_the_request_without_a_public_base_url() {
    let app = TestApp::with_settings(HttpSettings::new("/api/v1", None)).await;
    let reply = app
        .send(
            TestRequest::get()
                .uri("/api/v1/openapi.json")
                .insert_header((header::HOST, "pets.example.org:8443")),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json()["servers"],
        serde_json::json!([{"url": "http://pets.example.org:8443/api/v1"}])
    );
    let wrong = app
        .send(TestRequest::post().uri("/api/v1/openapi.json"))
        .await;
    wrong.assert_error(405, "method_not_allowed");
}

#[actix_web::test]
async fn the_docs_page_is_served_from_the_binary_over_the_document() {
    let app = TestApp::with_settings(HttpSettings::new("/api/v1", None)).await;
    let moved = app.send(TestRequest::get().uri("/docs")).await;
    assert_eq!(moved.status, 308);
    assert_eq!(moved.header("location"), Some("/docs/"));
    let page = app.send(TestRequest::get().uri("/docs/")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    // Where people paste keys: a strict policy, no framing, no referrer, no sniffing.
    for (name, value) in [
        ("content-security-policy", petstore_http::app::DOCS_CSP),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
    ] {
        assert_eq!(page.header(name), Some(value), "{name}");
    }
    assert!(petstore_http::app::DOCS_CSP.contains("frame-ancestors 'none'"));
    assert!(petstore_http::app::DOCS_CSP.contains("script-src 'self'"));
    // `nosniff` on every answer of the API, errors included.
    for uri in ["/api/v1/pets", "/api/v1/nowhere", "/healthz"] {
        let reply = app.send(TestRequest::get().uri(uri)).await;
        assert_eq!(
            reply.header("x-content-type-options"),
            Some("nosniff"),
            "{uri}"
        );
    }
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        !html.contains("https://"),
        "no asset from another host: {html}"
    );
    let init = app
        .send(TestRequest::get().uri("/docs/swagger-initializer.js"))
        .await;
    assert_eq!(init.status, 200);
    let script = String::from_utf8_lossy(&init.body);
    assert!(script.contains("\"/api/v1/openapi.json\""), "{script}");
    assert!(script.contains("\"validatorUrl\": \"none\""), "{script}");
    for asset in [
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-ui-standalone-preset.js",
    ] {
        let reply = app
            .send(TestRequest::get().uri(&format!("/docs/{asset}")))
            .await;
        assert_eq!(reply.status, 200, "{asset}");
    }
    app.send(TestRequest::get().uri("/docs/no-such-file.js"))
        .await
        .assert_error(404, "route_not_found");
}
