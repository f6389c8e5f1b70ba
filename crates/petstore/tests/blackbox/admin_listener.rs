//! Black-box: the admin listener: keys administered over HTTP, orders approved and delivered
//! from the command line, and a listener that is never the public one.

use crate::common::{TestServer, petstore, run};
use serde_json::Value;

#[test]
fn operators_approve_and_deliver_orders_from_the_command_line() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let key = crate::common::unlimited_key(db);
    let server = TestServer::start(db, &["--bootstrap-key=false"]);
    let (_, pet) = server.post_pet(&key, r#"{"name":"Rex","categoryId":1}"#);
    let pet = pet["id"].as_i64().expect("id");
    let placed = crate::common::agent()
        .post(format!("{}/store/orders", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(format!(r#"{{"petId":{pet}}}"#))
        .expect("order");
    assert_eq!(placed.status().as_u16(), 201);
    let listed: Vec<Value> =
        serde_json::from_str(&run(db, &["orders", "list", "--format", "json"])).expect("JSON");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "placed");
    assert!(
        listed[0]["ownerKeyId"].as_i64().is_some(),
        "operators see the owner"
    );
    let id = listed[0]["id"].to_string();
    let text = run(db, &["orders", "list"]);
    assert!(text.contains("placed") && text.contains("STATUS"), "{text}");

    // Deliver before approval: refused, with the reason.
    let early = petstore(db)
        .args(["orders", "deliver", &id])
        .output()
        .expect("run");
    assert!(!early.status.success());
    assert!(
        String::from_utf8_lossy(&early.stderr).contains("cannot be delivered"),
        "{}",
        String::from_utf8_lossy(&early.stderr)
    );
    run(db, &["orders", "approve", &id]);
    run(db, &["orders", "deliver", &id]);
    let (_, pets) = server.list_pets("", &key);
    assert_eq!(pets[0]["status"], "sold");
    let missing = petstore(db)
        .args(["orders", "approve", "999"])
        .output()
        .expect("run");
    assert!(!missing.status.success());
    server.stop();
}

/// The status and body (JSON, or empty) of a request to the admin listener.
fn admin_call(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let agent = crate::common::agent();
    let auth = token.map(|token| format!("Bearer {token}"));
    let mut response = match (method, body) {
        ("GET", _) => {
            let mut request = agent.get(url);
            if let Some(auth) = &auth {
                request = request.header("Authorization", auth);
            }
            request.call()
        }
        ("POST", body) => {
            let mut request = agent.post(url).header("Content-Type", "application/json");
            if let Some(auth) = &auth {
                request = request.header("Authorization", auth);
            }
            request.send(body.unwrap_or_default().to_string())
        }
        (other, _) => panic!("method {other}"),
    }
    .expect("admin request");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    (status, serde_json::from_str(&text).unwrap_or_default())
}

#[test]
fn keys_are_administered_over_http_on_the_admin_listener() {
    let (dir, db) = crate::common::temp_db();
    let db = db.as_str();
    run(db, &["migrate"]);
    // Admin tokens come from the command line, never from the environment.
    let token = run(db, &["admin-tokens", "create", "--label", "billing-sync"]);
    let token = token.trim().to_owned();
    assert!(token.starts_with("psa_"), "{token}");
    let listed: serde_json::Value =
        serde_json::from_str(&run(db, &["admin-tokens", "list", "--format", "json"]))
            .expect("JSON");
    assert_eq!(listed[0]["label"], "billing-sync");
    assert_eq!(listed[0]["state"], "active");
    assert!(
        !listed.to_string().contains(&token[12..]),
        "never the secret"
    );

    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        db,
        &["--bootstrap-key=false", "--admin-bind", "127.0.0.1:0"],
        Some(&log),
    );
    let admin = server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("admin on "))
        .expect("the admin listener's address on stdout")
        .to_owned();
    assert!(admin.ends_with("/admin/v1"), "{admin}");
    let root = format!("http://{}", server.addr());

    // Issued over HTTP, the key works on the public listener.
    let (status, issued) = admin_call(
        "POST",
        &format!("{admin}/keys"),
        Some(&token),
        Some(serde_json::json!({"plan": "pro", "label": "ACME"})),
    );
    assert_eq!(status, 201, "{issued}");
    let key = issued["key"].as_str().expect("secret").to_owned();
    let id = issued["id"].as_i64().expect("id");
    assert_eq!(server.list_pets("", &key).0, 200);
    // The CLI sees what the API did, in the same shape.
    let shown: serde_json::Value = serde_json::from_str(&run(
        db,
        &["keys", "show", &id.to_string(), "--format", "json"],
    ))
    .expect("JSON");
    let mut expected = issued.clone();
    expected.as_object_mut().expect("object").remove("key");
    assert_eq!(shown["label"], expected["label"]);
    // And the API sees what the CLI does: a new label from `keys update`.
    run(
        db,
        &["keys", "update", &id.to_string(), "--label", "ACME Corp"],
    );
    let (status, fetched) = admin_call("GET", &format!("{admin}/keys/{id}"), Some(&token), None);
    assert_eq!(
        (status, fetched["label"].as_str()),
        (200, Some("ACME Corp"))
    );
    assert_eq!(
        shown
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>(),
        expected
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>()
    );
    let (status, revoked) = admin_call(
        "POST",
        &format!("{admin}/keys/{id}/revoke"),
        Some(&token),
        None,
    );
    assert_eq!((status, revoked["state"].as_str()), (200, Some("revoked")));

    // Metrics moved to the admin listener; the public one no longer serves them.
    let public_metrics = crate::common::agent()
        .get(format!("{root}/metrics"))
        .call()
        .expect("GET");
    assert_eq!(public_metrics.status().as_u16(), 404);
    let admin_root = admin.trim_end_matches("/admin/v1");
    let mut metrics = crate::common::agent()
        .get(format!("{admin_root}/metrics"))
        .call()
        .expect("GET");
    assert_eq!(metrics.status().as_u16(), 200);
    let text = metrics.body_mut().read_to_string().expect("body");
    assert!(text.contains("petstore_build_info"), "{text}");
    // No admin route on the public listener.
    let (status, body) = admin_call("GET", &format!("{root}/admin/v1/keys"), Some(&token), None);
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("route_not_found"))
    );

    // Orders are fulfilled over HTTP: a customer's order approved, then delivered (its pet
    // sold); the CLI lists the same objects.
    let buyer = crate::common::unlimited_key(db);
    let (status, pet) = crate::common::post(
        &format!("{root}/v1"),
        &buyer,
        r#"{"name":"Rex","categoryId":1}"#,
    );
    assert_eq!(status, 201);
    let placed = crate::common::agent()
        .post(format!("{root}/v1/store/orders"))
        .header("Authorization", format!("Bearer {buyer}"))
        .header("Content-Type", "application/json")
        .send(format!(r#"{{"petId":{}}}"#, pet["id"]))
        .expect("order")
        .body_mut()
        .read_to_string()
        .expect("body");
    let order: serde_json::Value = serde_json::from_str(&placed).expect("JSON");
    let order_id = order["id"].as_i64().expect("id");
    let (status, listed) = admin_call(
        "GET",
        &format!("{admin}/orders?status=placed"),
        Some(&token),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(listed["orders"][0]["id"], order_id);
    assert!(listed["orders"][0]["ownerKeyId"].is_i64());
    for (action, status_after) in [("approve", "approved"), ("deliver", "delivered")] {
        let (status, changed) = admin_call(
            "POST",
            &format!("{admin}/orders/{order_id}/{action}"),
            Some(&token),
            None,
        );
        assert_eq!(
            (status, changed["status"].as_str()),
            (200, Some(status_after))
        );
    }
    let (status, refused) = admin_call(
        "POST",
        &format!("{admin}/orders/{order_id}/approve"),
        Some(&token),
        None,
    );
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("order_transition_refused"))
    );
    let (_, sold) = crate::common::get(&format!("{root}/v1"), "/store/inventory", &buyer);
    assert_eq!(sold["sold"], 1);
    let shown: serde_json::Value =
        serde_json::from_str(&run(db, &["orders", "list", "--format", "json"])).expect("JSON");
    let (_, fetched) = admin_call(
        "GET",
        &format!("{admin}/orders/{order_id}"),
        Some(&token),
        None,
    );
    assert_eq!(shown[0], fetched, "the CLI shows what the admin API does");

    // A revoked token stops working at once.
    run(db, &["admin-tokens", "revoke", "1"]);
    let (status, body) = admin_call("GET", &format!("{admin}/keys"), Some(&token), None);
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    server.stop();

    // One audit line per change: who, what, which key, and the request's id; never a secret.
    let log = std::fs::read_to_string(&log).expect("log");
    let audit: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("petstore::audit"))
        .collect();
    assert_eq!(audit.len(), 4, "{log}");
    let changes = [
        ("created", format!("key_id={id}")),
        ("revoked", format!("key_id={id}")),
        ("approved", format!("order_id={order_id}")),
        ("delivered", format!("order_id={order_id}")),
    ];
    for (line, (action, which)) in audit.iter().zip(changes) {
        for part in [
            "request_id=",
            "admin_token_id=1",
            "billing-sync",
            &format!("action=\"{action}\""),
            &which,
        ] {
            assert!(line.contains(part), "{part:?} not in {line}");
        }
    }
    assert!(
        !log.contains(&token[4..]),
        "the admin token reached the log"
    );
    assert!(!log.contains(&key[4..]), "the key reached the log");
}

#[test]
fn the_admin_listener_is_never_the_public_one_and_metrics_bind_wins() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let output = petstore(db)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:18099",
            "--admin-bind",
            "127.0.0.1:18099",
        ])
        .output()
        .expect("run petstore");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("never the public one"),
        "{output:?}"
    );
    // An explicit metrics listener wins over the admin one.
    let server = TestServer::start(
        db,
        &[
            "--bootstrap-key=false",
            "--admin-bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ],
    );
    let find = |prefix: &str| {
        server
            .stdout
            .iter()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix:?} in {:?}", server.stdout))
            .to_owned()
    };
    let metrics = find("metrics on ");
    let admin = find("admin on ");
    let status = |url: String| {
        crate::common::agent()
            .get(url)
            .call()
            .expect("GET")
            .status()
            .as_u16()
    };
    assert_eq!(status(metrics), 200);
    assert_eq!(status(admin.replace("/admin/v1", "/metrics")), 404);
    assert_eq!(status(format!("{}/openapi.json", admin)), 200);
    server.stop();
}
