//! The server span as exported: its attributes from the request and from its answer, its status
//! an error for a `5xx` only (what the bridge hands the SDK, read by a span processor of the
//! test's own).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::test::TestRequest;
use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
use petstore_http::HttpSettings;
use petstore_http::links::Links;
use petstore_http::telemetry::trace::{Answered, Sampling, record, server_span};
use tracing_subscriber::layer::SubscriberExt;

use crate::helpers::TestApp;

/// The spans the SDK ended, as they would be exported.
#[derive(Debug, Clone, Default)]
struct Ended(Arc<Mutex<Vec<SpanData>>>);

impl SpanProcessor for Ended {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        self.0
            .lock()
            .expect("BUG: no test panics holding it")
            .push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// A tracer provider whose ended spans the returned [`Ended`] collects.
fn collecting() -> (SdkTracerProvider, Ended) {
    let ended = Ended::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(ended.clone())
        .build();
    (provider, ended)
}

/// A dispatcher kept alive beside a test's own. `tracing` keeps, process-wide, whether a
/// callsite is wanted, worked out when a thread first reaches it: when the last dispatcher made
/// left at most one alive, by that thread's default alone, which on another test's thread is
/// none (the test's spans would then never be made: tokio-rs/tracing#3611). With a second one
/// alive it asks every live dispatcher, the test's among them. (A callsite first reached on
/// another thread at the very moment the test's own dispatcher is made can still be missed.)
fn second_dispatcher() -> tracing::Dispatch {
    tracing::Dispatch::new(tracing_subscriber::registry())
}

/// The server span of a request to `path` answered with `answered`, as exported, with the
/// scheme the links of a server at `public_base_url` (if any) would use.
fn exported(path: &str, public_base_url: Option<&str>, answered: Answered) -> SpanData {
    let links = Links::new(HttpSettings::new("/v1", public_base_url.map(str::to_owned)));
    let (provider, ended) = collecting();
    let bridge = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let subscriber = tracing_subscriber::registry().with(bridge);
    let _second = second_dispatcher();
    tracing::subscriber::with_default(subscriber, || {
        let req = TestRequest::get()
            .uri(path)
            .insert_header(("X-Forwarded-Proto", "https"))
            .to_srv_request();
        let scheme = links.scheme(req.request());
        let span = server_span("GET", || scheme, &req, Sampling::default());
        record(&span, answered);
    });
    let mut spans = ended.0.lock().expect("BUG: no test panics holding it");
    assert_eq!(spans.len(), 1, "{spans:#?}");
    spans.remove(0)
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.clone())
}

#[test]
fn a_server_error_is_the_spans_error_and_who_called_its_attributes() {
    let span = exported(
        "/v1/pets?limit=5",
        None,
        Answered {
            status: StatusCode::SERVICE_UNAVAILABLE,
            client: Some("192.0.2.7".to_owned()),
            key: Some((42, "pro")),
        },
    );
    assert_eq!(span.status, Status::error(""));
    let expected = [
        ("http.request.method", Value::from("GET")),
        ("url.path", Value::from("/v1/pets")),
        // With no public base URL, the listener's (plain HTTP), never the client's
        // `X-Forwarded-Proto`.
        ("url.scheme", Value::from("http")),
        ("http.response.status_code", Value::I64(503)),
        ("error.type", Value::from("503")),
        ("client.address", Value::from("192.0.2.7")),
        ("petstore.key.id", Value::I64(42)),
        ("petstore.plan", Value::from("pro")),
    ];
    for (key, value) in expected {
        assert_eq!(attribute(&span, key), Some(value), "{key}: {span:#?}");
    }
}

#[test]
fn a_clients_error_is_not_the_spans_and_the_scheme_is_the_public_base_urls() {
    let span = exported(
        "/v1/pets",
        Some("https://api.example.com/v1"),
        Answered {
            status: StatusCode::UNAUTHORIZED,
            client: None,
            key: None,
        },
    );
    assert_eq!(span.status, Status::Unset);
    // The public base URL's: what clients are told to use (behind a proxy that ends TLS).
    assert_eq!(attribute(&span, "url.scheme"), Some(Value::from("https")));
    assert_eq!(
        attribute(&span, "http.response.status_code"),
        Some(Value::I64(401))
    );
    for absent in [
        "error.type",
        "client.address",
        "petstore.key.id",
        "petstore.plan",
    ] {
        assert_eq!(attribute(&span, absent), None, "{absent}");
    }
}

/// A client that puts its key (or an admin token) in the path does not have it exported: the
/// path is redacted as the logs redact it, escaped or not.
#[test]
fn a_secret_in_the_path_is_not_exported() {
    let secret = "ab12".repeat(16);
    for (path, shown) in [
        (format!("/v1/pets/pst_{secret}"), "/v1/pets/pst_[redacted]"),
        (format!("/v1/pst%5F{secret}/x"), "/v1/pst_[redacted]/x"),
        (format!("/v1/psa_{secret}"), "/v1/psa_[redacted]"),
        (format!("/v1/pets/{secret}"), "/v1/pets/[redacted]"),
        ("/v1/pets/500".to_owned(), "/v1/pets/500"),
    ] {
        let span = exported(
            &path,
            None,
            Answered {
                status: StatusCode::NOT_FOUND,
                client: None,
                key: None,
            },
        );
        assert_eq!(
            attribute(&span, "url.path"),
            Some(Value::from(shown)),
            "{path}"
        );
    }
}

/// The public base URL names the public listener: the admin listener, which shares its state,
/// says its own scheme (plain HTTP), through `observe` as the service runs it.
#[actix_web::test]
async fn the_admin_listeners_spans_say_its_own_scheme() {
    let public = Some("https://api.example.com/v1".to_owned());
    let app = TestApp::with_settings(HttpSettings::new("/v1", public)).await;
    let (provider, ended) = collecting();
    let bridge = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let _second = second_dispatcher();
    // The test's runtime runs every request on this thread.
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(bridge));
    app.send(TestRequest::get().uri("/healthz")).await;
    // A path the admin listener does not serve: its `404` is a request like any other.
    app.send_admin(TestRequest::get().uri("/healthz")).await;
    let spans = ended.0.lock().expect("BUG: no test panics holding it");
    let schemes: Vec<_> = spans
        .iter()
        .filter(|span| span.span_kind == SpanKind::Server)
        .map(|span| attribute(span, "url.scheme"))
        .collect();
    assert_eq!(
        schemes,
        [Some(Value::from("https")), Some(Value::from("http"))],
        "{spans:#?}"
    );
}
