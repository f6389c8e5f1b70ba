//! Black-box: what operators see. Request ids on every response, the access log in both
//! formats, request-scoped log lines, and the Prometheus metrics scraped from the real endpoint
//! after known traffic.

use std::collections::HashMap;
use std::path::Path;

use crate::common::{TestServer, agent, unlimited_key};
use serde_json::Value;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Sends `GET {url}` with `headers`; returns the status and the `X-Request-Id` it came back with.
fn request_id_of(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = agent().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.call().expect("GET");
    let id = response
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_else(|| panic!("no X-Request-Id on {url}"))
        .to_owned();
    (response.status().as_u16(), id)
}

fn is_uuid_v7(id: &str) -> bool {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    id.len() == 36
        && hex.len() == 32
        && hex.chars().all(|c| c.is_ascii_hexdigit())
        && id.as_bytes()[14] == b'7'
}

/// The log's JSON lines.
fn json_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

#[test]
fn every_response_carries_a_request_id_kept_from_the_proxy_when_well_formed() {
    let (_dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let limited = crate::common::enterprise_key(&db, 1, 1000);
    let server = TestServer::start(&db, &["--bootstrap-key=false", "--ban-threshold", "0"]);
    let base = &server.base;
    let bearer = format!("Bearer {key}");
    let limited = format!("Bearer {limited}");
    let root = base.trim_end_matches("/v1");
    let mut seen = Vec::new();
    for (url, auth, status) in [
        (format!("{base}/pets"), bearer.as_str(), 200),
        (format!("{base}/pets"), "Bearer pst_wrong", 401),
        (format!("{base}/nothing"), bearer.as_str(), 404),
        (format!("{base}/pets?limit=0"), bearer.as_str(), 400),
        (format!("{root}/healthz"), "", 200),
        (format!("{root}/metrics"), "", 200),
        (format!("{base}/pets"), limited.as_str(), 200),
        (format!("{base}/pets"), limited.as_str(), 429),
    ] {
        let (got, id) = request_id_of(&url, &[("Authorization", auth)]);
        assert_eq!(got, status, "{url}");
        assert!(is_uuid_v7(&id), "{url}: {id}");
        seen.push(id);
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "generated ids are time-ordered");

    let url = format!("{base}/pets");
    let longest = "x".repeat(40);
    for kept in ["proxy-id-42", "a1b2:c3/d4+e5=", longest.as_str()] {
        let (_, id) = request_id_of(&url, &[("Authorization", &bearer), ("X-Request-Id", kept)]);
        assert_eq!(id, kept);
    }
    // Too long to be anything but a secret (an API key is 68 characters), or with characters
    // no id form has.
    let too_long = "x".repeat(41);
    let key_as_id = format!("pst_{}", "ab12".repeat(16));
    for replaced in [
        "has a space",
        too_long.as_str(),
        key_as_id.as_str(),
        "a%20b",
        "a~b",
    ] {
        let (_, id) = request_id_of(
            &url,
            &[("Authorization", &bearer), ("X-Request-Id", replaced)],
        );
        assert!(is_uuid_v7(&id), "{replaced:?} was replaced: {id}");
    }
}

#[test]
fn the_json_access_log_has_one_line_per_request_with_every_field_and_no_key() {
    let (dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        &db,
        &["--bootstrap-key=false", "--log-format", "json"],
        Some(&log),
    );
    let bearer = format!("Bearer {key}");
    let url = format!("{}/pets?limit=5", server.base);
    let headers = [
        ("Authorization", bearer.as_str()),
        ("X-Request-Id", "from-the-proxy-1"),
        ("traceparent", TRACEPARENT),
    ];
    assert_eq!(request_id_of(&url, &headers).0, 200);
    let (status, failed) = request_id_of(
        &format!("{}/pets?limit=1000", server.base),
        &[("Authorization", &bearer)],
    );
    assert_eq!(status, 400);
    server.stop();

    let lines = json_lines(&log);
    for line in &lines {
        for field in ["time", "level", "target"] {
            assert!(line.get(field).is_some(), "{field} missing: {line}");
        }
        assert!(
            !line.to_string().contains(&key[4..]),
            "a key was logged: {line}"
        );
    }
    let access: Vec<&Value> = lines
        .iter()
        .filter(|line| line["target"] == "petstore::access")
        .collect();
    assert_eq!(access.len(), 2, "one line per request: {access:?}");
    let ok = access
        .iter()
        .find(|line| line["request_id"] == "from-the-proxy-1")
        .expect("the proxy's id is logged");
    assert_eq!(ok["traceparent"], TRACEPARENT);
    assert_eq!(ok["method"], "GET");
    assert_eq!(ok["route"], "/v1/pets");
    assert_eq!(ok["path"], "/v1/pets");
    assert_eq!(ok["status"], 200);
    assert_eq!(ok["plan"], "enterprise");
    assert!(ok["key_id"].as_i64().is_some(), "{ok}");
    assert_eq!(ok["client"], "127.0.0.1");
    assert!(
        ok["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{ok}"
    );
    assert_eq!(ok["bytes"], 2, "an empty list: []");
    assert!(ok.get("code").is_none(), "no error code on a 200: {ok}");
    let bad = access
        .iter()
        .find(|line| line["request_id"] == failed.as_str())
        .expect("the generated id is logged");
    assert_eq!(bad["status"], 400);
    assert_eq!(bad["code"], "invalid_query_parameter");
}

#[test]
fn the_text_access_log_is_one_readable_line_per_request() {
    let (dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(&db, &["--bootstrap-key=false"], Some(&log));
    let (_, id) = request_id_of(
        &format!("{}/nothing", server.base),
        &[("Authorization", &format!("Bearer {key}"))],
    );
    server.stop();
    let text = std::fs::read_to_string(&log).expect("log");
    let line = text
        .lines()
        .find(|line| line.contains(&id))
        .unwrap_or_else(|| panic!("no line with {id}:\n{text}"));
    for part in [
        "INFO petstore::access: GET /v1/nothing 404",
        "route=\"unmatched\"",
        "status=404",
        "code=\"route_not_found\"",
        "plan=\"enterprise\"",
        "client=127.0.0.1",
    ] {
        assert!(line.contains(part), "{part} missing: {line}");
    }
}

#[test]
fn lines_logged_while_handling_a_request_carry_its_id_and_traceparent() {
    let (dir, db) = crate::common::temp_db();
    let key = crate::common::enterprise_key(&db, 1, 1000);
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        &db,
        &[
            "--bootstrap-key=false",
            "--log-format",
            "json",
            "--ban-threshold",
            "1",
        ],
        Some(&log),
    );
    let bearer = format!("Bearer {key}");
    let url = format!("{}/pets", server.base);
    // Allowed, refused, refused again: the second refusal crosses the threshold and bans the key
    // (a warning logged while that request is handled).
    let mut ids = Vec::new();
    for expected in [200, 429, 429] {
        let (status, id) = request_id_of(
            &url,
            &[("Authorization", &bearer), ("traceparent", TRACEPARENT)],
        );
        assert_eq!(status, expected);
        ids.push(id);
    }
    let metrics = scrape(&server.base);
    server.stop();
    let lines = json_lines(&log);
    let ban = lines
        .iter()
        .find(|line| {
            line["level"] == "WARN"
                && line["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("banned"))
        })
        .expect("the ban was logged");
    assert_eq!(ban["request_id"], ids[2].as_str(), "{ban}");
    assert_eq!(ban["traceparent"], TRACEPARENT, "{ban}");

    let decisions = |outcome: &str| {
        metrics.value(
            "petstore_rate_limit_decisions_total",
            &[
                ("outcome", outcome),
                ("plan", "enterprise"),
                ("subject", "key"),
            ],
        )
    };
    assert_eq!(decisions("allowed"), Some(1.0));
    assert_eq!(decisions("limited"), Some(1.0));
    assert_eq!(decisions("banned"), Some(1.0));
    assert_eq!(
        metrics.value("petstore_rate_limit_bans_total", &[("subject", "key")]),
        Some(1.0)
    );
}

/// A scrape of `/metrics`, parsed: each sample's name and labels, and its value.
pub(crate) struct Scrape(HashMap<(String, Vec<(String, String)>), f64>);

impl Scrape {
    fn parse(text: &str) -> Self {
        let mut samples = HashMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (series, value) = line.rsplit_once(' ').expect("name value");
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let mut labels: Vec<(String, String)> = labels
                .split("\",")
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("label");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            labels.sort();
            samples.insert((name.to_owned(), labels), value.parse().expect("a number"));
        }
        Self(samples)
    }

    /// The value of the sample `name` with exactly `labels`.
    pub(crate) fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.0.get(&(name.to_owned(), labels)).copied()
    }

    /// The sum of every sample `name` whose labels include `labels`.
    pub(crate) fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|((n, l), _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, value)| value)
            .sum()
    }
}

fn scrape_url(url: &str) -> Scrape {
    let mut response = agent().get(url).call().expect("scrape");
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    Scrape::parse(&response.body_mut().read_to_string().expect("body"))
}

pub(crate) fn scrape(base: &str) -> Scrape {
    scrape_url(&format!("{}/metrics", base.trim_end_matches("/v1")))
}

#[test]
fn metrics_count_known_traffic() {
    let (_dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let base = &server.base;
    for _ in 0..3 {
        assert_eq!(crate::common::get(base, "/pets", &key).0, 200);
    }
    for _ in 0..2 {
        assert_eq!(crate::common::get(base, "/pets", "pst_unknown").0, 401);
    }
    assert_eq!(crate::common::get(base, "/nothing", &key).0, 404);
    let (status, _) = crate::common::post(base, &key, r#"{"name":"Rex","categoryId":1}"#);
    assert_eq!(status, 201);
    let (status, _) = crate::common::post(base, &key, r#"{"name":"Rex"}"#);
    assert_eq!(status, 400);
    let metrics = scrape(base);

    let requests = |route: &str, method: &str, status: &str| {
        metrics.value(
            "petstore_http_requests_total",
            &[("route", route), ("method", method), ("status", status)],
        )
    };
    assert_eq!(requests("/v1/pets", "GET", "200"), Some(3.0));
    assert_eq!(requests("/v1/pets", "GET", "401"), Some(2.0));
    assert_eq!(requests("unmatched", "GET", "404"), Some(1.0));
    assert_eq!(requests("/v1/pets", "POST", "201"), Some(1.0));
    assert_eq!(requests("/v1/pets", "POST", "400"), Some(1.0));
    assert_eq!(
        metrics.value(
            "petstore_http_request_duration_seconds_count",
            &[("route", "/v1/pets"), ("method", "GET")]
        ),
        Some(5.0)
    );
    assert_eq!(
        metrics.value(
            "petstore_http_request_duration_seconds_bucket",
            &[("route", "/v1/pets"), ("method", "GET"), ("le", "+Inf")]
        ),
        Some(5.0)
    );
    // Six requests with the key (three lists, the 404, two creates); two without a valid one.
    assert_eq!(
        metrics.value(
            "petstore_rate_limit_decisions_total",
            &[
                ("outcome", "allowed"),
                ("plan", "enterprise"),
                ("subject", "key")
            ]
        ),
        Some(6.0)
    );
    assert_eq!(
        metrics.value(
            "petstore_rate_limit_decisions_total",
            &[
                ("outcome", "allowed"),
                ("plan", "anonymous"),
                ("subject", "address")
            ]
        ),
        Some(2.0)
    );
    // Every request with a token looks it up; the first of each token misses.
    assert_eq!(metrics.sum("petstore_key_cache_lookups_total", &[]), 8.0);
    assert!(metrics.sum("petstore_key_cache_lookups_total", &[("result", "miss")]) >= 2.0);
    assert_eq!(
        metrics.value(
            "petstore_store_call_duration_seconds_count",
            &[("operation", "list_pets"), ("outcome", "ok")]
        ),
        Some(3.0)
    );
    assert_eq!(
        metrics.value(
            "petstore_store_call_duration_seconds_count",
            &[("operation", "create_pet"), ("outcome", "ok")]
        ),
        Some(1.0)
    );
    // SQLite: the create went through the writer, in a batch of one.
    assert_eq!(
        metrics.value("petstore_sqlite_writer_batch_size_sum", &[]),
        Some(1.0)
    );
    assert_eq!(
        metrics.value(
            "petstore_db_pool_connections",
            &[("state", "max"), ("backend", "sqlite")]
        ),
        Some(8.0)
    );
    assert!(
        metrics
            .value(
                "petstore_db_pool_connections",
                &[("state", "open"), ("backend", "sqlite")]
            )
            .is_some_and(|open| open >= 1.0)
    );
    assert_eq!(
        metrics.value(
            "petstore_build_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("backend", "sqlite")
            ]
        ),
        Some(1.0)
    );
}

#[test]
fn metrics_can_have_a_listener_of_their_own_or_be_off() {
    let (_dir, db) = crate::common::temp_db();
    let server = TestServer::start(
        &db,
        &["--bootstrap-key=false", "--metrics-bind", "127.0.0.1:0"],
    );
    let url = server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("metrics on "))
        .expect("the metrics address is printed")
        .to_owned();
    let metrics = scrape_url(&url);
    assert_eq!(metrics.sum("petstore_build_info", &[]), 1.0);
    let root = server.base.trim_end_matches("/v1");
    let (status, body) = crate::common::get(root, "/metrics", "");
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("route_not_found"))
    );
    server.stop();

    let server = TestServer::start(&db, &["--bootstrap-key=false", "--metrics=false"]);
    let root = server.base.trim_end_matches("/v1");
    assert_eq!(crate::common::get(root, "/metrics", "").0, 404);
}

#[test]
fn redis_errors_and_the_local_fallback_are_counted() {
    let (_dir, db) = crate::common::temp_db();
    let key = unlimited_key(&db);
    // Nothing listens on port 1: every call to the shared counters fails, and `open` falls back.
    let server = TestServer::start(
        &db,
        &[
            "--bootstrap-key=false",
            "--rate-limit-store",
            "redis://127.0.0.1:1",
            "--rate-limit-on-failure",
            "open",
        ],
    );
    for _ in 0..3 {
        assert_eq!(server.list_pets("", &key).0, 200);
    }
    let metrics = scrape(&server.base);
    // Three counts, and the address's standing read once first: the key was not yet cached,
    // and a banned or limited address's key is not looked up.
    assert_eq!(
        metrics.value("petstore_rate_limit_redis_errors_total", &[]),
        Some(4.0)
    );
    assert_eq!(
        metrics.value("petstore_rate_limit_fallbacks_total", &[]),
        Some(3.0)
    );
}
