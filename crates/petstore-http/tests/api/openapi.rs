//! The API's description of itself: the committed copy, the served document, and the docs page.

use std::collections::BTreeSet;

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_http::ErrorCode;
use petstore_http::HttpSettings;
use petstore_http::routes::openapi::document;
use serde_json::Value;

use crate::helpers::TestApp;

/// The committed copy, `docs/openapi.json`.
fn committed() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let text = std::fs::read_to_string(path).expect("docs/openapi.json");
    serde_json::from_str(&text).expect("docs/openapi.json is JSON")
}

fn generated() -> Value {
    serde_json::to_value(document("/v1")).expect("the document serialises")
}

/// The documents' bytes are the same every time they are built (and so on every instance):
/// their `ETag` is a hash of those bytes. Maps whose order is random per map (utoipa keeps
/// extensions in a `HashMap`) would break that as soon as an object had two entries.
#[test]
fn the_documents_are_the_same_bytes_every_time() {
    let bytes = |document: utoipa::openapi::OpenApi| document.to_pretty_json().expect("JSON");
    let public = bytes(document("/v1"));
    let admin = bytes(petstore_http::admin::openapi::document());
    for _ in 0..20 {
        assert_eq!(bytes(document("/v1")), public);
        assert_eq!(bytes(petstore_http::admin::openapi::document()), admin);
    }
}

#[test]
fn the_committed_document_is_what_the_code_generates() {
    assert!(
        committed() == generated(),
        "docs/openapi.json is stale: regenerate it with `cargo run -q -- openapi > docs/openapi.json`"
    );
}

/// Every place in `value` (a JSON pointer) where `bad` holds, for `key` and its value.
fn offenders(value: &Value, at: &str, bad: &dyn Fn(&str, &Value) -> bool, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let here = format!("{at}/{key}");
                if bad(key, inner) {
                    out.push(here.clone());
                }
                offenders(inner, &here, bad, out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                offenders(inner, &format!("{at}/{i}"), bad, out);
            }
        }
        _ => {}
    }
}

#[test]
fn both_documents_keep_to_openapi_3_1_rules_a_validator_does_not_check() {
    let admin = serde_json::to_value(petstore_http::admin::openapi::document())
        .expect("the admin document serialises");
    for doc in [generated(), admin] {
        let mut found = Vec::new();
        // 3.1 schemas take `examples` (JSON Schema); `example` is deprecated.
        offenders(&doc, "", &|key, _| key == "example", &mut found);
        // A header is present or absent: never null.
        offenders(
            &doc,
            "",
            &|key, headers| {
                key == "headers"
                    && headers.as_object().is_some_and(|headers| {
                        headers
                            .values()
                            .any(|header| header.to_string().contains("\"null\""))
                    })
            },
            &mut found,
        );
        // Descriptions are written for clients: no Rust paths or intra-doc links.
        offenders(
            &doc,
            "",
            &|key, text| {
                matches!(key, "description" | "summary")
                    && text
                        .as_str()
                        .is_some_and(|text| text.contains("[`") || text.contains("::"))
            },
            &mut found,
        );
        assert!(found.is_empty(), "{found:#?}");
    }
}

#[test]
fn the_document_describes_every_operation_completely() {
    let doc = generated();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let mut ids = BTreeSet::new();
    let conditional = [
        "listPets",
        "getPet",
        "listOrders",
        "getOrder",
        "getInventory",
        "listWebhookEndpoints",
        "getWebhookEndpoint",
        "listWebhookDeliveries",
        "getWebhookDelivery",
    ];
    for (path, item) in doc["paths"].as_object().expect("paths") {
        // The methods the path does not serve: `405`, said on the path.
        let methods: Vec<&str> = item
            .as_object()
            .expect("path item")
            .keys()
            .filter(|key| *key != "description")
            .map(String::as_str)
            .collect();
        let allow: Vec<&str> = [
            ("get", "GET, HEAD"),
            ("post", "POST"),
            ("put", "PUT"),
            ("patch", "PATCH"),
            ("delete", "DELETE"),
        ]
        .into_iter()
        .filter(|(method, _)| methods.contains(method))
        .map(|(_, allowed)| allowed)
        .collect();
        let description = item["description"]
            .as_str()
            .expect("the path's description");
        assert!(
            description.contains(&format!(
                "`405 method_not_allowed` with `Allow: {}`",
                allow.join(", ")
            )),
            "{path}: {description}"
        );
        for method in methods {
            let op = &item[method];
            let id = op["operationId"].as_str().expect("operationId");
            ids.insert(id.to_owned());
            // Conditional reads: `If-None-Match`, a tagged `200`, a `304` with the same headers.
            let responses = &op["responses"];
            assert_eq!(
                responses["304"].is_object(),
                conditional.contains(&id),
                "{id}: 304"
            );
            if conditional.contains(&id) {
                let parameters = op["parameters"].as_array().expect("parameters");
                assert!(
                    parameters.contains(
                        &serde_json::json!({"$ref": "#/components/parameters/If-None-Match"})
                    ),
                    "{id}"
                );
                for status in ["200", "304"] {
                    for name in ["ETag", "Cache-Control", "Vary"] {
                        assert!(
                            responses[status]["headers"][name].is_object(),
                            "{id} {status}: {name}"
                        );
                    }
                }
                assert!(responses["304"].get("content").is_none(), "{id}: no body");
            }
            // The index needs no key: no security requirement, no `401`.
            let open = id == "getApiIndex";
            let security = if open {
                serde_json::json!([{}])
            } else {
                serde_json::json!([{"bearer": []}])
            };
            assert_eq!(op["security"], security, "{id}");
            let responses = op["responses"].as_object().expect("responses");
            for status in ["401", "429", "500", "503"] {
                assert!(
                    responses.contains_key(status) || (open && status == "401"),
                    "{method} {path}: no {status}"
                );
            }
            for (status, response) in responses {
                // The 405 every path answers another method: one shared response, referred to.
                if let Some(shared) = response.get("$ref") {
                    assert_eq!(
                        (status.as_str(), shared.as_str()),
                        ("405", Some("#/components/responses/MethodNotAllowed")),
                        "{id}"
                    );
                    continue;
                }
                let headers = response["headers"].as_object().expect("headers");
                for name in [
                    "X-RateLimit-Limit",
                    "X-RateLimit-Remaining",
                    "X-RateLimit-Reset",
                    "RateLimit",
                    "RateLimit-Policy",
                ] {
                    assert!(headers.contains_key(name), "{id} {status}: no {name}");
                }
                // Every 429 and 503, and the 409 of an `Idempotency-Key` still in flight.
                let retry = headers.contains_key("Retry-After");
                let in_flight = status == "409"
                    && response["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("idempotency_request_in_progress"));
                assert_eq!(
                    retry,
                    matches!(status.as_str(), "429" | "503") || in_flight,
                    "{id} {status}"
                );
                if status.starts_with('4') || status.starts_with('5') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{id} {status}"
                    );
                }
                let deprecated = op["deprecated"] == true;
                assert_eq!(headers.contains_key("Sunset"), deprecated, "{id} {status}");
                let experimental = op["x-stability"] == "experimental";
                assert_eq!(
                    headers.contains_key("X-API-Stability"),
                    experimental,
                    "{id} {status}"
                );
            }
        }
    }
    let expected = [
        "cancelOrder",
        "createPet",
        "createWebhookEndpoint",
        "deleteOrder",
        "deleteWebhookEndpoint",
        "getApiIndex",
        "getInventory",
        "getOrder",
        "getPet",
        "getRateLimit",
        "getWebhookDelivery",
        "getWebhookEndpoint",
        "listOrders",
        "listPets",
        "listWebhookDeliveries",
        "listWebhookEndpoints",
        "placeOrder",
        "redeliverWebhook",
        "rotateWebhookSecret",
        "updateWebhookEndpoint",
    ];
    assert_eq!(ids.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    let not_allowed = &doc["components"]["responses"]["MethodNotAllowed"];
    assert!(not_allowed["headers"]["Allow"].is_object());
    assert_eq!(
        not_allowed["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Error"
    );
    assert_eq!(doc["paths"]["/pets/{petId}"]["get"]["deprecated"], true);
    assert_eq!(
        doc["paths"]["/pets/{petId}"]["get"]["x-sunset"],
        "2030-12-05"
    );
    for (path, method) in [
        ("/store/orders", "get"),
        ("/store/orders", "post"),
        ("/store/orders/{orderId}", "get"),
        ("/store/orders/{orderId}", "delete"),
        ("/store/inventory", "get"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["x-stability"], "experimental",
            "{method} {path}"
        );
    }
    assert!(doc["paths"]["/pets"]["post"]["responses"]["201"]["headers"]["Location"].is_object());
    let idempotency = &doc["paths"]["/pets"]["post"]["parameters"][0];
    assert_eq!(idempotency["name"], "Idempotency-Key");
    assert_eq!(idempotency["in"], "header");
    assert_eq!(idempotency["required"], false);
    for status in ["403", "409", "422"] {
        assert!(
            doc["paths"]["/pets"]["post"]["responses"][status].is_object(),
            "createPet documents {status}"
        );
    }
    let limit = &doc["paths"]["/pets"]["get"]["parameters"][0];
    assert_eq!(limit["name"], "limit");
    assert_eq!(
        limit["schema"],
        serde_json::json!({"type": "integer", "format": "int32", "minimum": 1, "maximum": 100, "default": 20})
    );
    let new_pet = &doc["components"]["schemas"]["NewPet"];
    assert_eq!(new_pet["additionalProperties"], false);
    assert_eq!(
        new_pet["required"],
        serde_json::json!(["name", "categoryId"])
    );
    let codes: Vec<&str> = doc["components"]["schemas"]["Error"]["properties"]["code"]["enum"]
        .as_array()
        .expect("the code enum")
        .iter()
        .map(|code| code.as_str().expect("a string"))
        .collect();
    assert_eq!(
        codes,
        ErrorCode::ALL.map(ErrorCode::as_str),
        "the closed catalogue"
    );
}

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
    let doc = generated();
    let paths = doc["paths"].as_object().expect("paths");
    assert_eq!(
        paths.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "/",
            "/pets",
            "/pets/{petId}",
            "/rate_limit",
            "/store/inventory",
            "/store/orders",
            "/store/orders/{orderId}",
            "/store/orders/{orderId}/cancel",
            "/webhook_endpoints",
            "/webhook_endpoints/{endpointId}",
            "/webhook_endpoints/{endpointId}/deliveries",
            "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}",
            "/webhook_endpoints/{endpointId}/deliveries/{deliveryId}/redeliver",
            "/webhook_endpoints/{endpointId}/rotate_secret",
        ],
        "every resource of the route table, documented"
    );
    const METHODS: [&str; 8] = [
        "get", "head", "post", "put", "patch", "delete", "options", "trace",
    ];
    for (path, item) in paths {
        let uri = format!(
            "/v1{}",
            path.replace("{petId}", "1")
                .replace("{orderId}", "1")
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
        let other = app.send(with_key(request.uri(&uri))).await;
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
            let reply = app
                .send(with_key(TestRequest::default().method(method).uri(&uri)))
                .await;
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

/// What every answer carries is described on every response: `X-Content-Type-Options`, an
/// error's `Cache-Control: no-store`, `/rate_limit`'s too, and a page's `Link` on its `304`.
#[test]
fn the_headers_every_answer_carries_are_described() {
    let doc = generated();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let Some(responses) = op["responses"].as_object() else {
                continue;
            };
            for (status, response) in responses {
                if response.get("$ref").is_some() {
                    continue;
                }
                let headers = &response["headers"];
                assert!(
                    headers["X-Content-Type-Options"].is_object(),
                    "{method} {path} {status}"
                );
                if status.starts_with('4') || status.starts_with('5') {
                    assert_eq!(
                        headers["Cache-Control"]["$ref"],
                        "#/components/headers/Cache-Control-No-Store",
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
    let list = &doc["paths"]["/pets"]["get"]["responses"];
    assert!(
        list["304"]["headers"]["Link"].is_object(),
        "a page's 304 keeps its Link"
    );
    let standing = &doc["paths"]["/rate_limit"]["get"]["responses"]["200"]["headers"];
    assert!(standing["Cache-Control"].is_object());
}

/// The servers an operator names (`--openapi-servers`: a production and a staging one, as the
/// interface lists them) are the served document's, each with its name.
#[actix_web::test]
async fn openapi_json_lists_the_servers_the_operator_named() {
    let servers: petstore_http::config::NamedServers =
        "Production=https://api.example.com/v1, Staging=https://staging.example.com/v1/"
            .parse()
            .expect("two servers");
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
    for bad in [
        "https://api.example.com/v1",
        "Production=ftp://x/v1",
        "=https://x/v1",
    ] {
        assert!(
            bad.parse::<petstore_http::config::NamedServers>().is_err(),
            "{bad} accepted"
        );
    }
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
