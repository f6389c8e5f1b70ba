//! The client and the committed OpenAPI document (`docs/openapi.json`) agree: every operation
//! of the document is one the client calls, with the same method and path, and the client sends
//! exactly the query and header parameters the document declares.

use std::collections::BTreeSet;

use petstore_client::operations;
use serde_json::Value;

/// Operations of the document the client does not call, and why.
const NOT_CALLED: [(&str, &str); 2] = [
    (
        "deleteOrder",
        "deprecated: the client calls its successor, cancelOrder",
    ),
    ("getApiIndex", "the client knows where things are"),
];

fn document() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let text = std::fs::read_to_string(path).expect("docs/openapi.json");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn every_operation_of_the_document_is_the_clients_and_alike() {
    let doc = document();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let methods = item
            .as_object()
            .expect("path item")
            .iter()
            .filter(|(key, _)| ["get", "put", "post", "delete", "patch"].contains(&key.as_str()));
        for (method, operation) in methods {
            let id = operation["operationId"].as_str().expect("operationId");
            if NOT_CALLED.iter().any(|(skipped, _)| *skipped == id) {
                continue;
            }
            documented.insert(id.to_owned());
            let ours = operations::ALL
                .iter()
                .find(|op| op.id == id)
                .unwrap_or_else(|| panic!("the client does not call {id}"));
            assert_eq!(
                (ours.method, ours.path),
                (method.as_str(), path.as_str()),
                "{id}"
            );
            // Shared parameters are references to `components/parameters`.
            let parameters: Vec<Value> = operation["parameters"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|p| match p["$ref"].as_str() {
                    Some(to) => {
                        let name = to.trim_start_matches("#/components/parameters/");
                        doc["components"]["parameters"][name].clone()
                    }
                    None => p,
                })
                .collect();
            let declared = |place: &str| -> BTreeSet<String> {
                parameters
                    .iter()
                    .filter(|p| p["in"] == place)
                    .map(|p| p["name"].as_str().expect("name").to_owned())
                    .collect()
            };
            let sent = |names: &[&str]| {
                names
                    .iter()
                    .map(|n| (*n).to_owned())
                    .collect::<BTreeSet<_>>()
            };
            assert_eq!(
                sent(ours.query),
                declared("query"),
                "{id}: query parameters"
            );
            assert_eq!(
                sent(ours.headers),
                declared("header"),
                "{id}: header parameters"
            );
            // Path parameters: the template's names are the document's.
            let in_template: BTreeSet<String> = ours
                .path
                .split('/')
                .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}').map(str::to_owned))
                .collect();
            assert_eq!(in_template, declared("path"), "{id}: path parameters");
            if id == "getPet" {
                assert_eq!(
                    operation["deprecated"], true,
                    "the client marks it deprecated too"
                );
            }
        }
    }
    let ours: BTreeSet<String> = operations::ALL.iter().map(|op| op.id.to_owned()).collect();
    assert_eq!(
        ours, documented,
        "the client calls exactly the document's operations"
    );
}
