//! Webhooks between owners, through the real binary: one key's dead receivers hold back no
//! other owner's events, a revoked key's endpoints receive nothing and the operators reach
//! them, the answers and logs around endpoints keep their secrets, and the operators' endpoint
//! gets every key's events (and the address policy holds at delivery); the admin reads answer
//! tags where the admin document says.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::webhook_support::{
    LOOPBACK, Receiver, admin_base, call, create_pet, place_order, python_verdicts, register,
};
use crate::common::{TestServer, agent, run, temp_db, unlimited_key};

/// A receiver that accepts every connection, reads what comes, and never answers: each
/// attempt to it holds a sender's slot for the whole attempt timeout.
struct BlackHole {
    port: u16,
    held: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl BlackHole {
    fn start() -> Self {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let hole = Self {
            port: listener.local_addr().expect("address").port(),
            held: Arc::default(),
            stop: Arc::default(),
        };
        let (held, stop) = (hole.held.clone(), hole.stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        // Read the request (so the sender is waiting for an answer), then hold.
                        stream
                            .set_read_timeout(Some(Duration::from_millis(200)))
                            .expect("timeout");
                        let _ = stream.read(&mut [0; 4096]);
                        held.lock().expect("lock").push(stream);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        hole
    }

    fn url(&self, n: usize) -> String {
        format!("http://127.0.0.1:{}/hooks/{n}", self.port)
    }

    fn connections(&self) -> usize {
        self.held.lock().expect("lock").len()
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A server on `db` for loopback receivers with an admin listener (its log in `log`): the
/// server, the admin API's base address and an admin token.
fn with_admin(db: &str, log: Option<&std::path::Path>) -> (TestServer, String, String) {
    let token = run(db, &["admin-tokens", "create", "--label", "ops"]);
    let flags = [&LOOPBACK[..], &["--admin-bind", "127.0.0.1:0"]].concat();
    let server = TestServer::start_logging(db, &flags, log);
    let admin = admin_base(&server);
    (server, admin, token.trim().to_owned())
}

/// `/v1` of `base` with `key`: the raw answer (status, headers, body).
fn raw(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> RawAnswer {
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .body(body.map(|body| body.to_string()).unwrap_or_default())
        .expect("request");
    let mut response = agent().run(request).expect(method);
    RawAnswer {
        status: response.status().as_u16(),
        cache_control: response
            .headers()
            .get("cache-control")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_str(&response.body_mut().read_to_string().expect("body"))
            .unwrap_or(Value::Null),
    }
}

/// Every read of the admin document (at the path `uri` makes of each) answers a tag, and `304`
/// to it, exactly when the document says it may.
fn tagged_as_documented(admin: &str, token: &str, uri: impl Fn(&str) -> String) {
    let (status, document) = call(admin, "GET", "/openapi.json", token, None);
    assert_eq!(status, 200);
    let paths = document["paths"].as_object().expect("paths");
    let reads: Vec<_> = paths
        .iter()
        .filter(|(_, item)| item.get("get").is_some())
        .collect();
    let mut tagged = 0;
    for (path, item) in &reads {
        let uri = uri(path);
        let get = |tag: Option<&str>| {
            let mut request = agent()
                .get(format!("{admin}{uri}"))
                .header("Authorization", format!("Bearer {token}"));
            if let Some(tag) = tag {
                request = request.header("If-None-Match", tag);
            }
            request.call().expect("GET")
        };
        let answer = get(None);
        assert_eq!(answer.status().as_u16(), 200, "{uri}");
        let tag = answer
            .headers()
            .get("etag")
            .map(|tag| tag.to_str().expect("ASCII"));
        let documented = item["get"]["responses"].get("304").is_some();
        assert_eq!(tag.is_some(), documented, "{uri}");
        if let Some(tag) = tag {
            assert_eq!(get(Some(tag)).status().as_u16(), 304, "{uri}");
            tagged += 1;
        }
    }
    // The keys' and orders' reads untagged, the webhook reads (both front-ends') tagged.
    assert!(
        reads.len() >= 10 && tagged >= 6,
        "{} reads, {tagged} tagged",
        reads.len()
    );
}

struct RawAnswer {
    status: u16,
    cache_control: Option<String>,
    body: Value,
}

/// The situation of the review: a key registers 20 endpoints at a receiver that accepts and
/// never answers, and creates 20 pets (400 deliveries, each holding a slot for the 15 s
/// timeout). Another key's event, and the operators', made 2 s later, arrive within seconds,
/// not after the 400 (about six minutes before owners were taken in turn).
#[test]
fn one_keys_dead_receivers_hold_back_no_other_owners_events() {
    let (_dir, db) = temp_db();
    let (flooder, other) = (unlimited_key(&db), unlimited_key(&db));
    let (server, admin, token) = with_admin(&db, None);
    let base = &server.base;
    let hole = BlackHole::start();
    for n in 0..20 {
        register(base, &flooder, &hole.url(n), &["pet.created"]);
    }
    for n in 0..20 {
        create_pet(base, &flooder, &format!("flood {n}"));
    }
    // The sender is busy with them (it holds at most half its 32 slots for one owner).
    let deadline = Instant::now() + Duration::from_secs(10);
    while hole.connections() < 8 {
        assert!(
            Instant::now() < deadline,
            "the sender never reached the dead receivers"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let (theirs, ops) = (Receiver::start(), Receiver::start());
    register(base, &other, &theirs.url(), &["pet.created"]);
    let (status, created) = call(
        &admin,
        "POST",
        "/webhook_endpoints",
        token.trim(),
        Some(json!({"url": ops.url(), "events": ["pet.created"]})),
    );
    assert_eq!(status, 201, "{created}");
    thread::sleep(Duration::from_secs(2));
    let made = Instant::now();
    create_pet(base, &other, "Rex");
    // Well within the 15 s an attempt to a dead receiver takes: no slot had to come free.
    let got = theirs.wait_for(Duration::from_secs(10), |got| !got.is_empty());
    assert_eq!(got[0].json()["data"]["name"], "Rex");
    ops.wait_for(Duration::from_secs(10), |got| !got.is_empty());
    eprintln!(
        "another owner's event arrived {} ms after it was made, with 400 deliveries to dead \
         receivers under way ({} connections held)",
        made.elapsed().as_millis(),
        hole.connections()
    );
    server.stop();
}

/// A revoked key's events are no longer recorded for its endpoints (an operator moving its
/// order on sends nothing to them), while the operators' endpoint still gets them; the admin
/// API lists the key's endpoints and turns one off, audited.
#[test]
fn a_revoked_keys_endpoints_receive_nothing_and_the_operators_reach_them() {
    let (dir, db) = temp_db();
    let key = unlimited_key(&db);
    let log = dir.path().join("server.log");
    let (server, admin, token) = with_admin(&db, Some(&log));
    let (base, token) = (&server.base, token.as_str());
    let (mine, ops) = (Receiver::start(), Receiver::start());
    let events = ["order.placed", "order.approved", "order.cancelled"];
    let (endpoint, _) = register(base, &key, &mine.url(), &events);
    let (status, _) = call(
        &admin,
        "POST",
        "/webhook_endpoints",
        token,
        Some(json!({"url": ops.url(), "events": events})),
    );
    assert_eq!(status, 201);
    let (_, shown) = call(
        base,
        "GET",
        &format!("/webhook_endpoints/{endpoint}"),
        &key,
        None,
    );
    let key_id = shown["ownerKeyId"].as_i64().expect("the key's id");
    let pet = create_pet(base, &key, "Rex");
    let order = place_order(base, &key, pet);
    mine.wait_for(Duration::from_secs(10), |got| got.len() == 1);

    let (status, _) = call(
        &admin,
        "POST",
        &format!("/keys/{key_id}/revoke"),
        token,
        None,
    );
    assert_eq!(status, 200);
    let (status, approved) = call(
        &admin,
        "POST",
        &format!("/orders/{order}/approve"),
        token,
        None,
    );
    assert_eq!(status, 200, "{approved}");
    ops.wait_for(Duration::from_secs(10), |got| got.len() == 2);
    thread::sleep(Duration::from_secs(2));
    assert_eq!(
        mine.received().len(),
        1,
        "nothing more for a revoked key's endpoint"
    );

    let (status, listed) = call(
        &admin,
        "GET",
        &format!("/keys/{key_id}/webhook_endpoints"),
        token,
        None,
    );
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed[0]["id"], endpoint, "{listed}");
    let (status, off) = call(
        &admin,
        "PATCH",
        &format!("/keys/{key_id}/webhook_endpoints/{endpoint}"),
        token,
        Some(json!({"enabled": false})),
    );
    assert_eq!((status, &off["enabled"]), (200, &json!(false)), "{off}");
    let (status, missing) = call(&admin, "GET", "/keys/999999/webhook_endpoints", token, None);
    assert_eq!((status, &missing["code"]), (404, &json!("key_not_found")));
    server.stop();
    let audit = std::fs::read_to_string(&log).expect("the log");
    assert!(
        audit.contains(&format!(
            "updated webhook endpoint {endpoint} of key {key_id}"
        )),
        "{audit}"
    );
}

/// Answers that show a signing secret are never stored by a cache; one owner registers a URL
/// once; a description may not reorder its text; the audit log leaves an endpoint's query out;
/// a bad delivery cursor and `HEAD /docs/` are answered as they should be.
#[test]
fn endpoints_keep_their_secrets_out_of_caches_logs_and_duplicates() {
    let (dir, db) = temp_db();
    let key = unlimited_key(&db);
    let log = dir.path().join("server.log");
    let (server, admin, token) = with_admin(&db, Some(&log));
    let (base, token) = (&server.base, token.as_str());
    let receiver = Receiver::start();
    let url = format!("{}?token=s3cret-receiver-token", receiver.url());
    for (at, secret) in [(base.as_str(), key.as_str()), (admin.as_str(), token)] {
        let body = json!({"url": url, "events": ["pet.created"]});
        let created = raw(at, "POST", "/webhook_endpoints", secret, Some(body.clone()));
        assert_eq!(created.status, 201, "{}", created.body);
        assert_eq!(created.cache_control.as_deref(), Some("no-store"), "{at}");
        let id = created.body["id"].as_i64().expect("id");
        let rotated = raw(
            at,
            "POST",
            &format!("/webhook_endpoints/{id}/rotate_secret"),
            secret,
            Some(json!({})),
        );
        assert_eq!(rotated.status, 200, "{}", rotated.body);
        assert_eq!(rotated.cache_control.as_deref(), Some("no-store"), "{at}");
        let again = raw(at, "POST", "/webhook_endpoints", secret, Some(body));
        assert_eq!(again.status, 409, "{}", again.body);
        assert_eq!(again.body["code"], "webhook_endpoint_url_taken");
        assert!(
            again.body["message"]
                .as_str()
                .is_some_and(|m| m.contains(&id.to_string()))
        );
        let listed = raw(at, "GET", "/webhook_endpoints", secret, None);
        assert_eq!(
            listed.body.as_array().map(Vec::len),
            Some(1),
            "registered once"
        );

        let cursor = raw(
            at,
            "GET",
            &format!("/webhook_endpoints/{id}/deliveries?after=-5"),
            secret,
            None,
        );
        assert_eq!(cursor.status, 400);
        let message = cursor.body["message"].as_str().expect("a message");
        assert!(
            message.contains("after") && !message.contains("pet"),
            "{message}"
        );
    }
    let spoofed = raw(
        base,
        "POST",
        "/webhook_endpoints",
        &key,
        Some(json!({
            "url": format!("{}/other", receiver.url()),
            "events": ["pet.created"],
            "description": "invoice \u{202E}fdp.exe",
        })),
    );
    assert_eq!(spoofed.status, 400, "{}", spoofed.body);
    assert_eq!(spoofed.body["code"], "invalid_field");

    let head = agent()
        .head(format!("{}/docs/", base.trim_end_matches("/v1")))
        .call()
        .expect("HEAD /docs/");
    assert_eq!(head.status(), 200);
    server.stop();
    let written = std::fs::read_to_string(&log).expect("the log");
    assert!(written.contains("created webhook endpoint"), "{written}");
    assert!(!written.contains("s3cret-receiver-token"), "{written}");
}

/// The operators' endpoint, managed on the admin listener (each change audited), receives the
/// events of every key; the sender's metrics count its attempts. Restarted without
/// `--webhook-allow-private`, the service sends nothing more to it: the policy is checked
/// again at each delivery, not only at registration.
#[test]
fn the_operators_endpoint_gets_every_keys_events_and_the_policy_holds_at_delivery() {
    let (dir, db) = temp_db();
    let (alice, bob) = (unlimited_key(&db), unlimited_key(&db));
    let token = run(&db, &["admin-tokens", "create", "--label", "ops"]);
    let token = token.trim();
    let log = dir.path().join("server.log");
    let flags = [&LOOPBACK[..], &["--admin-bind", "127.0.0.1:0"]].concat();
    let server = TestServer::start_logging(&db, &flags, Some(&log));
    let admin = admin_base(&server);
    let receiver = Receiver::start();
    let (status, issued) = call(
        &admin,
        "POST",
        "/webhook_endpoints",
        token,
        Some(json!({"url": receiver.url(), "events": ["pet.created", "order.placed"]})),
    );
    assert_eq!(status, 201, "{issued}");
    assert_eq!(issued["ownerKeyId"], Value::Null, "the operators'");
    let id = issued["id"].as_i64().expect("id");
    // Not a key's: no key sees it.
    let (status, _) = call(
        &server.base,
        "GET",
        &format!("/webhook_endpoints/{id}"),
        &alice,
        None,
    );
    assert_eq!(status, 404);
    let (status, listed) = call(&admin, "GET", "/webhook_endpoints", token, None);
    assert_eq!((status, listed.as_array().map(Vec::len)), (200, Some(1)));

    let rex = create_pet(&server.base, &alice, "Rex");
    create_pet(&server.base, &bob, "Tom");
    let order = place_order(&server.base, &bob, rex);
    let received = receiver.wait_for(Duration::from_secs(10), |r| r.len() >= 3);
    assert_eq!(received.len(), 3, "both keys' pets, and the order");
    assert_eq!(
        python_verdicts(issued["secret"].as_str().expect("secret"), &received),
        vec![true; 3]
    );
    // Each delivery's state written (the receiver counts a request before it answers it).
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let uri = format!("/webhook_endpoints/{id}/deliveries");
        let (status, page) = call(&admin, "GET", &uri, token, None);
        assert_eq!(status, 200, "{page}");
        let deliveries = page["deliveries"].as_array().cloned().unwrap_or_default();
        if deliveries.len() == 3 && deliveries.iter().all(|d| d["state"] == "delivered") {
            break page;
        }
        assert!(Instant::now() < deadline, "not all delivered: {page}");
        thread::sleep(Duration::from_millis(50));
    };
    // Every admin read, a key's endpoint among them, answers a tag where its document says.
    let (alices, _) = register(&server.base, &alice, &receiver.url(), &["order.placed"]);
    let (_, keys) = call(&admin, "GET", "/keys", token, None);
    let alice_id = keys["keys"]
        .as_array()
        .and_then(|keys| {
            let prefix =
                |key: &&Value| key["prefix"].as_str().is_some_and(|p| alice.starts_with(p));
            keys.iter().find(prefix)
        })
        .and_then(|key| key["id"].as_i64())
        .expect("Alice's key");
    tagged_as_documented(&admin, token, |path| {
        let endpoint = if path.starts_with("/keys/") {
            alices
        } else {
            id
        };
        path.replace("{keyId}", &alice_id.to_string())
            .replace("{endpointId}", &endpoint.to_string())
            .replace("{orderId}", &order.to_string())
            .replace("{deliveryId}", &page["deliveries"][0]["id"].to_string())
    });
    let metrics = agent()
        .get(format!(
            "http://{}/metrics",
            admin
                .trim_start_matches("http://")
                .trim_end_matches("/admin/v1")
        ))
        .call()
        .expect("metrics")
        .body_mut()
        .read_to_string()
        .expect("text");
    assert!(
        metrics.contains("petstore_webhook_attempts_total{result=\"delivered\"} 3"),
        "{metrics}"
    );
    let (status, _) = call(
        &admin,
        "PATCH",
        &format!("/webhook_endpoints/{id}"),
        token,
        Some(json!({"description": "ops feed"})),
    );
    assert_eq!(status, 200);
    server.stop();
    let audit = std::fs::read_to_string(&log).expect("the log");
    for action in ["created webhook endpoint", "updated webhook endpoint"] {
        assert!(audit.contains(action), "audited: {action}\n{audit}");
    }

    // The same endpoint, the service now refusing this network: nothing is sent to it.
    let strict = TestServer::start(
        &db,
        &["--webhook-allow-http", "--admin-bind", "127.0.0.1:0"],
    );
    let admin = admin_base(&strict);
    create_pet(&strict.base, &alice, "Kim");
    let deadline = Instant::now() + Duration::from_secs(10);
    let newest = loop {
        let (_, page) = call(
            &admin,
            "GET",
            &format!("/webhook_endpoints/{id}/deliveries?limit=1"),
            token,
            None,
        );
        let newest = page["deliveries"][0].clone();
        if newest["attemptCount"].as_u64().unwrap_or(0) >= 1 {
            break newest;
        }
        assert!(Instant::now() < deadline, "never attempted: {page}");
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(newest["state"], "pending", "{newest}");
    assert_eq!(newest["lastStatus"], Value::Null, "not sent: {newest}");
    assert!(
        newest["lastError"]
            .as_str()
            .is_some_and(|why| why.contains("127.0.0.1")),
        "{newest}"
    );
    assert_eq!(
        receiver.received().len(),
        3,
        "nothing sent to a private address"
    );
}
