//! Black-box: traces. The binary exports OTLP (HTTP/protobuf) to a collector of the test's own
//! that decodes every export with OpenTelemetry's protobuf definitions (`otlp_collector.rs`):
//! the spans a request makes and their place in
//! the caller's trace, a webhook attempt's span and its link, what must never be exported, the
//! samplers, a collector that never answers, the flush at shutdown, and a storage call on
//! PostgreSQL.
//! Skipped loudly without the virtualenv, except under CI, where that fails.

use std::thread;
use std::time::Duration;

use petstore_store::testing::TestDatabase;
use serde_json::Value;

use crate::common::{TestServer, agent, unlimited_key};
use crate::otlp_collector::Collector;
use crate::telemetry::scrape;
use crate::webhook_support::{LOOPBACK, Received, Receiver, create_pet, register};

/// The caller's trace: a sampled `traceparent`.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// OTLP's span kinds.
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

/// The spans of `trace`.
fn in_trace<'a>(spans: &'a [Value], trace: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|span| span["trace_id"] == trace)
        .collect()
}

/// The span named `name` among `spans`.
fn named<'a>(spans: &[&'a Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|span| span["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

/// The span of the attempt that made `delivery` (named by the `traceparent` the receiver got),
/// once it is exported, with every span exported by then: also once a span of trace `change` is
/// (empty: none awaited).
fn attempt_span(collector: &Collector, delivery: &Received, change: &str) -> (Vec<Value>, Value) {
    let sent = delivery.traceparent.clone().expect("a traceparent");
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    let (trace, span) = (parts[1], parts[2]);
    let spans = collector.wait_for("the attempt's span", |spans| {
        spans.iter().any(|one| one["span_id"] == span)
            && (change.is_empty() || !in_trace(spans, change).is_empty())
    });
    let attempt = spans
        .iter()
        .find(|one| one["span_id"] == span)
        .expect("the attempt")
        .clone();
    assert_eq!(attempt["trace_id"], trace);
    (spans, attempt)
}

/// The access log lines of a server's JSON log at `log`.
fn access_lines(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("log")
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["target"] == "petstore::access")
        .collect()
}

/// `GET {url}` with `key` and, when given, a `traceparent`: the status.
fn get(url: &str, key: &str, traceparent: Option<&str>) -> u16 {
    // Every request claims `https`: with no public base URL, a server span's scheme is the
    // listener's all the same.
    let mut request = agent()
        .get(url)
        .header("Authorization", format!("Bearer {key}"))
        .header("X-Forwarded-Proto", "https");
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent);
    }
    request.call().expect("GET").status().as_u16()
}

/// A server on `db` exporting to `collector` every 100 ms (unless `extra` says otherwise), with
/// `extra` flags (its log in `log` when given).
fn exporting_to(
    collector: &Collector,
    db: &str,
    extra: &[&str],
    log: Option<&std::path::Path>,
) -> TestServer {
    let endpoint = collector.endpoint();
    let mut flags = vec!["--bootstrap-key=false", "--otlp-endpoint", &endpoint];
    if !extra.contains(&"--otel-bsp-schedule-delay") {
        flags.extend(["--otel-bsp-schedule-delay", "100"]);
    }
    flags.extend(extra);
    TestServer::start_logging(db, &flags, log)
}

/// A collector and a server exporting to it, on a SQLite database of its own with an unlimited
/// key; `None` (after a loud skip) without the collector's virtualenv, outside CI.
struct Traced {
    collector: Collector,
    server: TestServer,
    key: String,
    _dir: tempfile::TempDir,
}

fn traced(hang: bool, extra: &[&str]) -> Option<Traced> {
    let collector = Collector::start(hang)?;
    let (dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let server = exporting_to(&collector, &db, extra, None);
    Some(Traced {
        collector,
        server,
        key,
        _dir: dir,
    })
}

#[test]
fn a_request_is_a_server_span_in_its_callers_trace_with_its_storage_and_limiter_spans() {
    let Some(collector) = Collector::start(false) else {
        return;
    };
    let (dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let receiver = Receiver::start();
    let log = dir.path().join("log");
    let server = exporting_to(
        &collector,
        &db,
        &[
            "--log-format",
            "json",
            "--otel-service-name",
            "petstore-traces-test",
            "--otel-resource-attributes",
            "deployment.environment.name=test%20one",
            "--otlp-headers",
            "authorization=Bearer%20collector-token",
            LOOPBACK[0],
            LOOPBACK[1],
        ],
        Some(&log),
    );
    let base = &server.base;
    // A receiver's tokens, in its path and its query.
    let hook = format!("{}/path-t0ken?token=query-t0ken", receiver.url());
    let (_, secret) = register(base, &key, &hook, &["pet.created"]);

    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let list = format!("{base}/pets?limit=1&status=available");
    assert_eq!(get(&list, &key, Some(&traceparent)), 200);
    let spans = collector.wait_for("the list's spans", |spans| {
        let trace = in_trace(spans, TRACE);
        ["GET /v1/pets", "list_pets pets", "rate limit"]
            .iter()
            .all(|name| trace.iter().any(|span| span["name"] == *name))
    });
    let trace = in_trace(&spans, TRACE);
    let server_span = named(&trace, "GET /v1/pets");
    assert_eq!(server_span["kind"], SERVER);
    assert_eq!(server_span["parent_span_id"], PARENT, "the caller's span");
    let attributes = &server_span["attributes"];
    assert_eq!(attributes["http.request.method"], "GET");
    assert_eq!(attributes["http.route"], "/v1/pets");
    assert_eq!(attributes["url.path"], "/v1/pets");
    assert_eq!(
        attributes["url.scheme"], "http",
        "not the client's `X-Forwarded-Proto`"
    );
    assert_eq!(attributes["http.response.status_code"], 200);
    assert_eq!(attributes["client.address"], "127.0.0.1");
    assert_eq!(attributes["petstore.plan"], "enterprise");
    assert!(attributes["petstore.key.id"].is_i64(), "{attributes}");
    let resource = &server_span["resource"];
    assert_eq!(resource["service.name"], "petstore-traces-test");
    assert_eq!(resource["deployment.environment.name"], "test one");
    assert_eq!(resource["service.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(resource["telemetry.sdk.language"], "rust");
    let sent = collector.headers.lock().expect("lock").clone();
    assert!(
        sent.iter().all(|headers| {
            headers["authorization"] == "Bearer collector-token"
                && headers["content-type"] == "application/x-protobuf"
        }),
        "every export with the configured headers: {sent:#?}"
    );
    let storage = named(&trace, "list_pets pets");
    assert_eq!(storage["kind"], CLIENT);
    assert_eq!(storage["parent_span_id"], server_span["span_id"]);
    assert_eq!(storage["attributes"]["db.system.name"], "sqlite");
    assert_eq!(storage["attributes"]["db.operation.name"], "list_pets");
    assert_eq!(storage["attributes"]["db.collection.name"], "pets");
    let limiter = named(&trace, "rate limit");
    assert_eq!(limiter["parent_span_id"], server_span["span_id"]);
    assert_eq!(
        limiter["attributes"]["petstore.ratelimit.outcome"],
        "allowed"
    );
    assert_eq!(limiter["attributes"]["petstore.ratelimit.subject"], "key");

    // The access log line joins its trace.
    let line = access_lines(&log)
        .into_iter()
        .find(|line| line["route"] == "/v1/pets")
        .expect("the list's access log line");
    assert_eq!(line["trace_id"], TRACE);
    assert_eq!(line["span_id"], server_span["span_id"]);

    // A change's webhook attempt: a client span of a trace of its own, linked to the change,
    // its context sent to the receiver.
    let changed = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let pet = agent()
        .post(format!("{base}/pets"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("traceparent", format!("00-{changed}-{PARENT}-01"))
        .send(r#"{"name":"Traced","categoryId":1}"#)
        .expect("POST");
    assert_eq!(pet.status().as_u16(), 201);
    let delivered = receiver.wait_for(Duration::from_secs(20), |received| !received.is_empty());
    let (spans, attempt) = attempt_span(&collector, &delivered[0], changed);
    assert_ne!(attempt["trace_id"], changed, "a trace of its own");
    assert_eq!(attempt["kind"], CLIENT);
    assert_eq!(attempt["parent_span_id"], "");
    assert_eq!(attempt["attributes"]["http.response.status_code"], 204);
    assert_eq!(
        attempt["attributes"]["petstore.webhook.event_type"],
        "pet.created"
    );
    // As the logs name it: the path's first segment only.
    assert_eq!(
        attempt["attributes"]["url.full"],
        format!("{}/…", receiver.url())
    );
    let link = &attempt["links"][0];
    assert_eq!(link["trace_id"], changed, "linked to the change's trace");
    let change = in_trace(&spans, changed);
    assert!(
        change.iter().any(|span| span["span_id"] == link["span_id"]),
        "the link names a span of the change: {change:#?}"
    );
    // A change in a trace the sampler dropped (the caller's decision, parent-based) leaves
    // nothing to link to: its attempt, in a trace of its own that is kept, has no link.
    let dropped = "dddddddddddddddddddddddddddddddd";
    let pet = agent()
        .post(format!("{base}/pets"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("traceparent", format!("00-{dropped}-{PARENT}-00"))
        .send(r#"{"name":"Dropped","categoryId":1}"#)
        .expect("POST");
    assert_eq!(pet.status().as_u16(), 201);
    let delivered = receiver.wait_for(Duration::from_secs(20), |received| {
        received.iter().any(|one| one.body.contains("Dropped"))
    });
    let sent = delivered
        .iter()
        .find(|one| one.body.contains("Dropped"))
        .expect("the dropped trace's delivery");
    let (spans, attempt) = attempt_span(&collector, sent, "");
    assert_eq!(attempt["links"], serde_json::json!([]), "{attempt:#}");
    assert!(
        in_trace(&spans, dropped).is_empty(),
        "the caller's decision holds"
    );
    assert!(create_pet(base, &key, "Untraced") > 0);

    // Nothing secret, nothing of a query string, in any export.
    let exports = collector.exports();
    assert!(!exports.is_empty());
    for export in exports {
        let text = String::from_utf8_lossy(&export);
        for secret in [
            key.as_str(),
            secret.as_str(),
            "limit=1",
            "status=available",
            "t0ken",
        ] {
            assert!(!text.contains(secret), "{secret:?} was exported");
        }
    }
}

#[test]
fn parent_based_sampling_follows_the_caller_and_samples_the_rest_by_ratio() {
    let Some(Traced {
        collector,
        server,
        key,
        _dir,
    }) = traced(
        false,
        &[
            "--otel-traces-sampler",
            "parentbased_traceidratio",
            "--otel-traces-sampler-arg",
            "0",
        ],
    )
    else {
        return;
    };
    let pets = format!("{}/pets", server.base);
    for _ in 0..20 {
        assert_eq!(get(&pets, &key, None), 200);
    }
    let unsampled = "cccccccccccccccccccccccccccccccc";
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{unsampled}-{PARENT}-00"))),
        200
    );
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{TRACE}-{PARENT}-01"))),
        200
    );
    let spans = collector.wait_for("the sampled caller's spans", |spans| {
        in_trace(spans, TRACE).len() >= 2
    });
    // Ratio 0 keeps none of the traces that start here, and a caller's decision holds.
    assert!(
        spans.iter().all(|span| span["trace_id"] == TRACE),
        "only the sampled caller's trace: {spans:#?}"
    );
}

#[test]
fn a_request_in_a_trace_the_caller_dropped_makes_no_span_at_all() {
    let Some(collector) = Collector::start(false) else {
        return;
    };
    let (dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let log = dir.path().join("log");
    // The default sampler: parent-based, keeping every trace that starts here. A span beneath
    // the dropped request's would start one.
    let server = exporting_to(&collector, &db, &["--log-format", "json"], Some(&log));
    let pets = format!("{}/pets", server.base);
    let dropped = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{dropped}-{PARENT}-00"))),
        200
    );
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{TRACE}-{PARENT}-01"))),
        200
    );
    let spans = collector.wait_for("the sampled request's spans", |spans| {
        in_trace(spans, TRACE).len() >= 3
    });
    assert!(
        spans.iter().all(|span| span["trace_id"] == TRACE),
        "neither the dropped request's storage call nor its limiter's decision starts a trace: \
         {spans:#?}"
    );
    // Its access line shows the caller's `traceparent`, and no ids of a trace nobody keeps.
    let line = access_lines(&log)
        .into_iter()
        .find(|line| {
            line["traceparent"]
                .as_str()
                .is_some_and(|text| text.contains(dropped))
        })
        .expect("the dropped request's access line");
    assert!(line["trace_id"].is_null(), "{line:#}");
    assert!(line["span_id"].is_null(), "{line:#}");
}

#[test]
fn a_collector_that_never_answers_changes_no_answer_and_what_does_not_fit_is_dropped() {
    let Some(Traced {
        collector: _hanging,
        mut server,
        key,
        _dir,
    }) = traced(
        true,
        &[
            "--otel-bsp-max-queue-size",
            "16",
            "--otlp-timeout",
            "60000",
            "--shutdown-timeout",
            "2s",
        ],
    )
    else {
        return;
    };
    let pets = format!("{}/pets", server.base);
    for _ in 0..200 {
        assert_eq!(get(&pets, &key, None), 200);
    }
    let metrics = scrape(&server.base);
    let dropped = metrics
        .value("petstore_trace_spans_dropped_total", &[])
        .unwrap_or(0.0);
    // Three spans a request (the request, the limiter, the list), 16 at most waiting.
    assert!(
        dropped >= 600.0 - 16.0 - 16.0,
        "spans beyond the queue are dropped, not kept: {dropped} dropped"
    );
    // It still stops when told to, its last export given up on within the drain time.
    server.terminate();
    server.wait_for_exit();
}

#[test]
fn the_shared_limiters_redis_round_trip_is_a_client_span_under_the_limiters() {
    let Some(redis) = crate::common::redis_support::TestRedis::new() else {
        return;
    };
    let Some(Traced {
        collector,
        server,
        key,
        _dir,
    }) = traced(
        false,
        &[
            "--rate-limit-store",
            &redis.url,
            "--rate-limit-prefix",
            &redis.prefix,
        ],
    )
    else {
        return;
    };
    let pets = format!("{}/pets", server.base);
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{TRACE}-{PARENT}-01"))),
        200
    );
    let spans = collector.wait_for("the Redis round trip", |spans| {
        in_trace(spans, TRACE)
            .iter()
            .any(|span| span["name"] == "EVALSHA hit")
    });
    let trace = in_trace(&spans, TRACE);
    let limiter = named(&trace, "rate limit");
    let round_trip = named(&trace, "EVALSHA hit");
    assert_eq!(round_trip["kind"], CLIENT);
    assert_eq!(round_trip["parent_span_id"], limiter["span_id"]);
    assert_eq!(round_trip["attributes"]["db.system.name"], "redis");
    assert_eq!(round_trip["attributes"]["db.operation.name"], "EVALSHA");
    assert_eq!(round_trip["status"], 0, "unset: it succeeded");
    assert_eq!(
        limiter["attributes"]["petstore.ratelimit.outcome"],
        "allowed"
    );
}

#[test]
fn what_is_queued_at_shutdown_is_exported_before_the_process_exits() {
    // Exports once a minute: only the shutdown sends the request's spans in time.
    let Some(Traced {
        collector,
        mut server,
        key,
        _dir,
    }) = traced(false, &["--otel-bsp-schedule-delay", "60000"])
    else {
        return;
    };
    let pets = format!("{}/pets", server.base);
    assert_eq!(
        get(&pets, &key, Some(&format!("00-{TRACE}-{PARENT}-01"))),
        200
    );
    thread::sleep(Duration::from_millis(300));
    assert!(
        in_trace(&collector.spans.lock().expect("lock"), TRACE).is_empty(),
        "nothing exported before the schedule or the shutdown"
    );
    server.terminate();
    server.wait_for_exit();
    let spans = collector.wait_for("the request's spans, flushed at shutdown", |spans| {
        !in_trace(spans, TRACE).is_empty()
    });
    named(&in_trace(&spans, TRACE), "GET /v1/pets");
}

#[test]
fn on_postgresql_a_create_traces_its_storage_call_and_the_wait_for_a_connection() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let Some(collector) = Collector::start(false) else {
        return;
    };
    let key = crate::common::enterprise_key(db.direct_url(), 1_000_000, 100_000_000);
    let server = exporting_to(&collector, db.url(), &[], None);
    let pet = agent()
        .post(format!("{}/pets", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .send(r#"{"name":"Traced","categoryId":1}"#)
        .expect("POST");
    assert_eq!(pet.status().as_u16(), 201);
    let spans = collector.wait_for("the create's spans", |spans| {
        let trace = in_trace(spans, TRACE);
        ["POST /v1/pets", "create_pet pets", "wait for a connection"]
            .iter()
            .all(|name| trace.iter().any(|span| span["name"] == *name))
    });
    let trace = in_trace(&spans, TRACE);
    let request = named(&trace, "POST /v1/pets");
    let storage = named(&trace, "create_pet pets");
    assert_eq!(storage["parent_span_id"], request["span_id"]);
    assert_eq!(storage["kind"], CLIENT);
    assert_eq!(storage["attributes"]["db.system.name"], "postgresql");
    assert_eq!(storage["attributes"]["db.operation.name"], "create_pet");
    assert!(
        trace
            .iter()
            .any(|span| span["name"] == "wait for a connection"
                && span["parent_span_id"] == storage["span_id"]),
        "the create's checkout under its storage call: {trace:#?}"
    );
}
