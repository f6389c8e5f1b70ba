//! Webhooks through the real binary: a receiver of the test's own on loopback (plain std TCP,
//! answering as told: a status, or nothing at all), signatures checked by an independent
//! implementation (Python's `hmac`), the receiver down and then up, a sender killed midway
//! whose delivery another instance sends, and two instances sending a thousand events once each.

use std::collections::HashSet;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::webhook_support::{
    Answer, LOOPBACK, Received, Receiver, call, create_pet, place_order, python_verdicts, register,
};
use crate::common::{TestServer, run, temp_db, unlimited_key};
use petstore_store::testing::TestDatabase;

#[test]
fn events_arrive_signed_retried_logged_and_stop_at_410() {
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &LOOPBACK);
    let base = &server.base;
    let receiver = Receiver::start();
    let (all, secret) = register(
        base,
        &key,
        &receiver.url(),
        &[
            "order.placed",
            "order.approved",
            "order.delivered",
            "order.cancelled",
            "pet.created",
        ],
    );
    // A second endpoint whose receiver is down for now.
    let later = Receiver::reserve();
    let (placed_only, _) = register(
        base,
        &key,
        &format!("http://{later}/hooks"),
        &["order.placed"],
    );

    let (rex, tom) = (create_pet(base, &key, "Rex"), create_pet(base, &key, "Tom"));
    let cancelled = place_order(base, &key, rex);
    let (status, _) = call(
        base,
        "DELETE",
        &format!("/store/orders/{cancelled}"),
        &key,
        None,
    );
    assert_eq!(status, 200);
    let fulfilled = place_order(base, &key, tom);
    run(&db, &["orders", "approve", &fulfilled.to_string()]);
    run(&db, &["orders", "deliver", &fulfilled.to_string()]);

    // Every event, to the endpoint that takes them all.
    let received = receiver.wait_for(Duration::from_secs(20), |r| r.len() >= 7);
    assert_eq!(received.len(), 7, "each event once");
    let mut events: Vec<(String, i64)> = received
        .iter()
        .map(|r| {
            let body = r.json();
            assert!(body["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
            (
                body["type"].as_str().expect("type").to_owned(),
                body["data"]["id"].as_i64().expect("data.id"),
            )
        })
        .collect();
    events.sort();
    let mut expected = vec![
        ("order.approved".to_owned(), fulfilled),
        ("order.cancelled".to_owned(), cancelled),
        ("order.delivered".to_owned(), fulfilled),
        ("order.placed".to_owned(), cancelled),
        ("order.placed".to_owned(), fulfilled),
        ("pet.created".to_owned(), rex),
        ("pet.created".to_owned(), tom),
    ];
    expected.sort();
    assert_eq!(events, expected);
    let ids: HashSet<&str> = received.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 7, "one webhook-id per event");
    assert!(ids.iter().all(|id| id.starts_with("msg_")));

    // Signed: an independent implementation agrees; and it can tell a forgery.
    assert_eq!(python_verdicts(&secret, &received), vec![true; 7]);
    let mut forged = received[0].clone();
    forged.body = forged.body.replace("\"id\":", "\"id\":1");
    let mut replayed = received[1].clone();
    replayed.timestamp = (replayed.timestamp.parse::<u64>().expect("seconds") - 1).to_string();
    assert_eq!(
        python_verdicts(&secret, &[forged, replayed]),
        vec![false, false]
    );

    // The receiver that was down: up now, it gets both orders' events at their first retry.
    thread::sleep(Duration::from_secs(1));
    let up = Receiver::start_on(later);
    let retried = up.wait_for(Duration::from_secs(20), |r| r.len() >= 2);
    let placed: HashSet<i64> = retried
        .iter()
        .map(|r| r.json()["data"]["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(placed, HashSet::from([cancelled, fulfilled]));
    // The log says so: the first order's event, the first to be tried, delivered at the second
    // attempt, the first refused. (The second order's may never have been tried while the
    // receiver was down: an endpoint that did not answer rests before its next attempt.)
    let (status, log) = call(
        base,
        "GET",
        &format!("/webhook_endpoints/{placed_only}/deliveries"),
        &key,
        None,
    );
    assert_eq!(status, 200);
    let log = log.as_array().expect("a page").clone();
    assert_eq!(log.len(), 2, "{log:?}");
    let delivery = log
        .iter()
        .map(|entry| entry["id"].as_i64().expect("delivery id"))
        .min()
        .expect("two deliveries");
    let deadline = Instant::now() + Duration::from_secs(10);
    let record = loop {
        let (_, record) = call(
            base,
            "GET",
            &format!("/webhook_endpoints/{placed_only}/deliveries/{delivery}"),
            &key,
            None,
        );
        if record["state"] == "delivered" || Instant::now() > deadline {
            break record;
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(record["state"], "delivered", "{record}");
    assert_eq!(record["attemptCount"], 2, "{record}");
    assert_eq!(record["attempts"][0]["status"], Value::Null, "{record}");
    assert!(
        record["attempts"][0]["error"].as_str().is_some(),
        "{record}"
    );
    assert_eq!(record["attempts"][1]["status"], 204, "{record}");

    // Redelivered: the same event, the same webhook-id, again.
    let (status, pending) = call(
        base,
        "POST",
        &format!("/webhook_endpoints/{placed_only}/deliveries/{delivery}/redeliver"),
        &key,
        None,
    );
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["state"], "pending");
    let again = up.wait_for(Duration::from_secs(10), |r| r.len() >= 3);
    assert_eq!(again[2].id, record["eventId"].as_str().expect("event id"));

    // 410 Gone: the endpoint is turned off, and says why.
    receiver.answer(Answer::Status(410));
    create_pet(base, &key, "Gone");
    let deadline = Instant::now() + Duration::from_secs(15);
    let endpoint = loop {
        let (_, endpoint) = call(
            base,
            "GET",
            &format!("/webhook_endpoints/{all}"),
            &key,
            None,
        );
        if endpoint["enabled"] == false || Instant::now() > deadline {
            break endpoint;
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(endpoint["enabled"], false, "{endpoint}");
    assert!(
        endpoint["disabledReason"]
            .as_str()
            .is_some_and(|why| why.contains("410")),
        "{endpoint}"
    );
    let (status, refused) = call(
        base,
        "POST",
        &format!("/webhook_endpoints/{all}/deliveries/1/redeliver"),
        &key,
        None,
    );
    assert_eq!(
        (status, &refused["code"]),
        (409, &json!("webhook_endpoint_disabled"))
    );
}

#[test]
fn endpoints_on_this_network_are_refused_without_the_flags() {
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &[]);
    for url in [
        "http://example.com/hooks",
        "https://127.0.0.1/hooks",
        "https://localhost/hooks",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hooks",
        "https://10.1.2.3/hooks",
        "ftp://example.com/hooks",
        "https://user:password@example.com/hooks",
    ] {
        let (status, error) = call(
            &server.base,
            "POST",
            "/webhook_endpoints",
            &key,
            Some(json!({"url": url, "events": ["order.placed"]})),
        );
        assert_eq!(status, 422, "{url}: {error}");
        assert_eq!(error["code"], "webhook_url_refused", "{url}: {error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("`url`")),
            "{error}"
        );
    }
    // Not a URL at all: the field's form, `400`.
    let (status, error) = call(
        &server.base,
        "POST",
        "/webhook_endpoints",
        &key,
        Some(json!({"url": "hooks", "events": ["order.placed"]})),
    );
    assert_eq!(
        (status, &error["code"]),
        (400, &json!("invalid_field")),
        "{error}"
    );
    // A description with a control character: `400`, never stored (PostgreSQL refuses NUL).
    let (status, error) = call(
        &server.base,
        "POST",
        "/webhook_endpoints",
        &key,
        Some(
            json!({"url": "https://example.com/h", "events": ["order.placed"], "description": "a\u{0}b"}),
        ),
    );
    assert_eq!(
        (status, &error["code"]),
        (400, &json!("invalid_field")),
        "{error}"
    );
}

#[test]
fn a_delivery_whose_sender_was_killed_is_sent_by_another_instance() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let url = db.url().to_owned();
    let key = unlimited_key(&url);
    let flags = [&LOOPBACK[..], &["--webhook-timeout", "2s"]].concat();
    let first = TestServer::start(&url, &flags);
    let receiver = Receiver::start();
    receiver.answer(Answer::Silence);
    register(&first.base, &key, &receiver.url(), &["pet.created"]);
    let pet = create_pet(&first.base, &key, "Rex");
    // The first instance is sending it (the receiver holds the request): killed there.
    let held = receiver.wait_for(Duration::from_secs(10), |r| !r.is_empty());
    first.crash();
    receiver.answer(Answer::Status(204));
    let second = TestServer::start(&url, &flags);
    // Its lease (2 × 2 s + 5 s) runs out, and the second instance sends it: the same event.
    let received = receiver.wait_for(Duration::from_secs(30), |r| r.len() >= 2);
    assert_eq!(received[1].id, held[0].id);
    assert_eq!(received[1].json()["data"]["id"], pet);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, log) = call(
            &second.base,
            "GET",
            "/webhook_endpoints/1/deliveries",
            &key,
            None,
        );
        if log[0]["state"] == "delivered" {
            // The killed attempt was never recorded: one attempt, the second instance's.
            assert_eq!(log[0]["attemptCount"], 1, "{log}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never recorded as delivered: {log}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_instances_send_a_thousand_orders_events_once_each() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    const ORDERS: usize = 1_000;
    const CLIENTS: usize = 8;
    let url = db.url().to_owned();
    let key = unlimited_key(&url);
    let servers = [
        TestServer::start(&url, &LOOPBACK),
        TestServer::start(&url, &LOOPBACK),
    ];
    let receiver = Receiver::start();
    register(&servers[0].base, &key, &receiver.url(), &["order.placed"]);
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (bases, key) = (bases.clone(), key.clone());
            thread::spawn(move || {
                let mut orders = Vec::new();
                for n in (client..ORDERS).step_by(CLIENTS) {
                    let base = &bases[n % bases.len()];
                    let pet = create_pet(base, &key, &format!("pet {n}"));
                    orders.push(place_order(base, &key, pet));
                }
                orders
            })
        })
        .collect();
    let placed: HashSet<i64> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("client"))
        .collect();
    assert_eq!(placed.len(), ORDERS);
    receiver.wait_for(Duration::from_secs(60), |r| r.len() >= ORDERS);
    // A little longer: a second copy of any would arrive now.
    thread::sleep(Duration::from_secs(2));
    let received = receiver.received();
    let events: HashSet<i64> = received
        .iter()
        .map(|r| r.json()["data"]["id"].as_i64().expect("order id"))
        .collect();
    assert_eq!(events, placed, "every acknowledged order has its event");
    let ids: HashSet<&str> = received.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), ORDERS);
    assert_eq!(
        received.len(),
        ORDERS,
        "no event sent twice in a normal run"
    );
}

/// The Rust client manages an endpoint through every operation, and verifies what arrives in
/// one call; after a rotation each delivery carries both signatures, and each secret verifies.
#[test]
fn the_client_manages_endpoints_and_verifies_deliveries() {
    use petstore_client::webhooks::WebhookSecret;
    use petstore_client::{Client, EndpointChanges, EventSet, EventType, NewEndpoint};
    use ureq::http::{HeaderMap, HeaderValue};

    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &LOOPBACK);
    let receiver = Receiver::start();
    let client = Client::builder(&server.base, &key).build().expect("client");
    let headers = |delivery: &Received| {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("webhook-id", &delivery.id),
            ("webhook-timestamp", &delivery.timestamp),
            ("webhook-signature", &delivery.signature),
        ] {
            headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
        }
        headers
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let issued = client
                .create_webhook_endpoint(&NewEndpoint {
                    url: receiver.url(),
                    events: EventSet::new([EventType::PetCreated]).expect("events"),
                    description: "the test's".into(),
                })
                .await
                .expect("create");
            let id = issued.endpoint.id;
            let first = WebhookSecret::parse(&issued.secret).expect("a secret");
            assert_eq!(
                client.list_webhook_endpoints().await.expect("list"),
                std::slice::from_ref(&issued.endpoint)
            );
            assert_eq!(
                client.get_webhook_endpoint(id).await.expect("get"),
                issued.endpoint
            );

            create_pet(&server.base, &key, "Rex");
            let received = receiver.wait_for(Duration::from_secs(10), |r| r.len() == 1);
            first
                .verify(&headers(&received[0]), received[0].body.as_bytes())
                .expect("verified in one call");

            let rotated = client
                .rotate_webhook_secret(id, Some(Duration::from_secs(3600)))
                .await
                .expect("rotate");
            let second = WebhookSecret::parse(&rotated.secret).expect("a secret");
            assert!(rotated.endpoint.previous_secret_expires_at.is_some());
            create_pet(&server.base, &key, "Tom");
            let received = receiver.wait_for(Duration::from_secs(10), |r| r.len() == 2);
            assert_eq!(
                received[1].signature.split(' ').count(),
                2,
                "both signatures"
            );
            for secret in [&first, &second] {
                secret
                    .verify(&headers(&received[1]), received[1].body.as_bytes())
                    .expect("each secret verifies");
            }
            let tampered = received[1].body.replace("Tom", "Tim");
            assert!(
                second
                    .verify(&headers(&received[1]), tampered.as_bytes())
                    .is_err()
            );

            let log = client
                .list_webhook_deliveries(id, Some(1), None)
                .await
                .expect("the log");
            assert_eq!(log.items.len(), 1);
            assert!(log.next.is_some(), "a second page");
            let newest = &log.items[0];
            let record = client
                .get_webhook_delivery(id, newest.id)
                .await
                .expect("one delivery");
            assert_eq!(record.delivery.event_id, received[1].id);
            let again = client
                .redeliver_webhook(id, newest.id)
                .await
                .expect("redeliver");
            assert_eq!(again.state, petstore_client::DeliveryState::Pending);
            receiver.wait_for(Duration::from_secs(10), |r| r.len() == 3);

            let off = client
                .update_webhook_endpoint(
                    id,
                    &EndpointChanges {
                        enabled: Some(false),
                        ..EndpointChanges::default()
                    },
                )
                .await
                .expect("update");
            assert!(!off.enabled);
            client.delete_webhook_endpoint(id).await.expect("delete");
            let gone = client.get_webhook_endpoint(id).await.expect_err("deleted");
            assert_eq!(
                gone.code(),
                Some(petstore_client::ErrorCode::WebhookEndpointNotFound)
            );
        });
}
