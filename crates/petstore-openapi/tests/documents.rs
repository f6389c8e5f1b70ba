//! The documents as the program builds them: the committed copies are what the code generates,
//! they keep to OpenAPI 3.1's rules, and they describe every operation completely (each status,
//! header and error it can answer).

use std::collections::BTreeSet;

use petstore_http::ErrorCode;
use serde_json::Value;

/// The committed copy, `docs/openapi.json`.
fn committed() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let text = std::fs::read_to_string(path).expect("docs/openapi.json");
    serde_json::from_str(&text).expect("docs/openapi.json is JSON")
}

fn generated() -> Value {
    serde_json::to_value(public()).expect("the document serialises")
}

/// The public document as the application serves it at `/v1`.
fn public() -> utoipa::openapi::OpenApi {
    petstore_openapi::documents().public(&[], "/v1")
}

/// The admin document.
fn admin() -> utoipa::openapi::OpenApi {
    petstore_openapi::documents().admin().clone()
}

/// The documents' bytes are the same every time they are built (and so on every instance):
/// their `ETag` is a hash of those bytes. Maps whose order is random per map (utoipa keeps
/// extensions in a `HashMap`) would break that as soon as an object had two entries.
#[test]
fn the_documents_are_the_same_bytes_every_time() {
    let bytes = |document: utoipa::openapi::OpenApi| document.to_pretty_json().expect("JSON");
    let (first_public, first_admin) = (bytes(public()), bytes(admin()));
    for _ in 0..20 {
        assert_eq!(bytes(public()), first_public);
        assert_eq!(bytes(admin()), first_admin);
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
    let admin = serde_json::to_value(admin()).expect("the admin document serialises");
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

#[test]
fn the_committed_admin_document_is_what_the_code_generates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/admin-openapi.json");
    let text = std::fs::read_to_string(path).expect("docs/admin-openapi.json");
    let committed: Value = serde_json::from_str(&text).expect("JSON");
    let generated = serde_json::to_value(admin()).expect("JSON");
    assert!(
        committed == generated,
        "docs/admin-openapi.json is stale: regenerate it with `cargo run -q -- openapi --admin > docs/admin-openapi.json`"
    );
    // Every operation answers its errors with the Error object.
    for (path, item) in generated["paths"].as_object().expect("paths") {
        let operations = item
            .as_object()
            .expect("item")
            .iter()
            .filter(|(key, _)| *key != "description");
        for (method, operation) in operations {
            let responses = operation["responses"].as_object().expect("responses");
            assert!(responses.contains_key("401"), "{method} {path}");
            for (status, response) in responses {
                // Shared responses are references (the 405 every path answers another method).
                if let Some(shared) = response.get("$ref") {
                    assert_eq!(
                        (status.as_str(), shared.as_str()),
                        ("405", Some("#/components/responses/MethodNotAllowed"))
                    );
                    continue;
                }
                if status.starts_with('4') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}
