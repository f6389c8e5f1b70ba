//! Every address the service hands out leads somewhere: each `Link` target, `Location`, `next`
//! link, docs link, the OpenAPI document's `servers` URL and the API index's addresses,
//! followed through the real binary.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::{TestServer, temp_db, unlimited_key};

/// One answer: status, `Location`, every `Link` target with its relation, the JSON body.
struct Answer {
    status: u16,
    location: Option<String>,
    links: Vec<(String, String)>,
    body: Value,
}

fn call(method: &str, url: &str, key: &str, body: Option<Value>, extra: &[(&str, &str)]) -> Answer {
    let mut request = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Authorization", format!("Bearer {key}"));
    if body.is_some() {
        request = request.header("Content-Type", "application/json");
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let request = request
        .body(body.map(|body| body.to_string()).unwrap_or_default())
        .expect("a request");
    // Redirects not followed: a `Location` is an address handed out, followed below.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .build()
        .into();
    let mut response = agent.run(request).expect(method);
    let header = |name: &str| {
        response
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let location = header("location").into_iter().next();
    let links = header("link")
        .iter()
        .flat_map(|value| value.split(", <"))
        .filter_map(|link| {
            let link = link.trim_start_matches('<');
            let (target, params) = link.split_once('>')?;
            let rel = params
                .split(';')
                .find_map(|param| param.trim().strip_prefix("rel="))
                .unwrap_or_default()
                .trim_matches('"')
                .to_owned();
            Some((target.to_owned(), rel))
        })
        .collect();
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    Answer {
        status,
        location,
        links,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

#[test]
fn every_address_the_service_hands_out_answers() {
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(
        &db,
        &[
            "--bootstrap-key=false",
            "--webhook-allow-http",
            "--webhook-allow-private",
            "--webhook-sender=false",
        ],
    );
    let base = server.base.clone();
    // (where it came from, the address)
    let mut handed_out: Vec<(String, String)> = Vec::new();
    let mut note = |from: &str, url: &str| handed_out.push((from.to_owned(), url.to_owned()));

    let docs = server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("docs on "))
        .expect("the docs page's address printed at start")
        .to_owned();
    note("the start's `docs on` line", &docs);

    // Webhook endpoint first, so that the pets' events fill its delivery log.
    let hook = call(
        "POST",
        &format!("{base}/webhook_endpoints"),
        &key,
        Some(json!({"url": "http://127.0.0.1:9/hooks", "events": ["pet.created"]})),
        &[],
    );
    assert_eq!(hook.status, 201, "{}", hook.body);
    note(
        "Location of a new webhook endpoint",
        &hook.location.expect("Location"),
    );
    let hook_id = hook.body["id"].as_i64().expect("id");

    for name in ["Rex", "Tom", "Kim"] {
        let created = call(
            "POST",
            &format!("{base}/pets"),
            &key,
            Some(json!({"name": name, "categoryId": 1})),
            &[],
        );
        assert_eq!(created.status, 201);
        note(
            "Location of a new pet",
            &created.location.expect("Location"),
        );
    }
    let page = call("GET", &format!("{base}/pets?limit=1"), &key, None, &[]);
    for (target, rel) in &page.links {
        note(&format!("the pet list's Link rel={rel}"), target);
    }
    let deprecated = call("GET", &format!("{base}/pets/1"), &key, None, &[]);
    assert_eq!(deprecated.links.len(), 3, "successor, deprecation, sunset");
    for (target, rel) in &deprecated.links {
        note(&format!("getPet's Link rel={rel}"), target);
    }
    let reused = |name: &str| {
        call(
            "POST",
            &format!("{base}/pets"),
            &key,
            Some(json!({"name": name, "categoryId": 1})),
            &[("Idempotency-Key", "\"links-test\"")],
        )
    };
    assert_eq!(reused("Ann").status, 201);
    let refused = reused("Bob");
    assert_eq!(refused.status, 422, "{}", refused.body);
    for (target, rel) in &refused.links {
        note(
            &format!("a reused Idempotency-Key's Link rel={rel}"),
            target,
        );
    }

    let mut orders = Vec::new();
    for pet in [1, 2] {
        let placed = call(
            "POST",
            &format!("{base}/store/orders"),
            &key,
            Some(json!({"petId": pet})),
            &[],
        );
        assert_eq!(placed.status, 201, "{}", placed.body);
        note(
            "Location of a new order",
            &placed.location.expect("Location"),
        );
        orders.push(placed.body["id"].as_i64().expect("id"));
    }
    let page = call(
        "GET",
        &format!("{base}/store/orders?limit=1"),
        &key,
        None,
        &[],
    );
    for (target, rel) in &page.links {
        note(&format!("the order list's Link rel={rel}"), target);
    }
    let cancelled = call(
        "DELETE",
        &format!("{base}/store/orders/{}", orders[0]),
        &key,
        None,
        &[],
    );
    assert_eq!(cancelled.status, 200);
    for (target, rel) in &cancelled.links {
        note(&format!("the deprecated DELETE's Link rel={rel}"), target);
    }
    let deliveries = call(
        "GET",
        &format!("{base}/webhook_endpoints/{hook_id}/deliveries?limit=1"),
        &key,
        None,
        &[],
    );
    for (target, rel) in &deliveries.links {
        note(&format!("the delivery log's Link rel={rel}"), target);
    }

    let document = call("GET", &format!("{base}/openapi.json"), &key, None, &[]);
    for server in document.body["servers"].as_array().expect("servers") {
        note(
            "the OpenAPI document's servers",
            server["url"].as_str().expect("url"),
        );
    }
    let index = call("GET", &base, &key, None, &[]);
    assert_eq!(index.status, 200, "{}", index.body);
    for (name, url) in index.body.as_object().expect("the index") {
        note(
            &format!("the index's {name}"),
            url.as_str().expect("an address"),
        );
    }
    let to_docs = call(
        "GET",
        &format!("{}/docs", base.trim_end_matches("/v1")),
        &key,
        None,
        &[],
    );
    assert_eq!(to_docs.status, 308);
    let location = to_docs.location.expect("Location");
    let origin = base.trim_end_matches("/v1");
    note("/docs's Location", &format!("{origin}{location}"));

    let relations: BTreeSet<&str> = handed_out.iter().map(|(from, _)| from.as_str()).collect();
    for expected in [
        "next",
        "successor-version",
        "deprecation",
        "sunset",
        "describedby",
    ] {
        assert!(
            relations
                .iter()
                .any(|from| from.ends_with(&format!("rel={expected}"))),
            "no {expected} link was handed out: {relations:?}"
        );
    }
    for (from, url) in &handed_out {
        // A fragment is the browser's (the docs page's operation), not the server's.
        let url = url.split('#').next().expect("an address");
        let answer = call("GET", url, &key, None, &[]);
        if from.contains("deprecated DELETE") && from.ends_with("successor-version") {
            // The successor of a `DELETE` is a `POST`: it is there, and says so.
            assert_eq!(answer.status, 405, "{from}: {url}");
            continue;
        }
        assert!(
            (200..300).contains(&answer.status),
            "{from}: {url} answered {}: {}",
            answer.status,
            answer.body
        );
    }
    server.stop();
}
