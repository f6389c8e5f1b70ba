//! The request's server span, under [`TRACE_ROOTS`]: what becomes an OpenTelemetry span when the
//! program exports traces and the sampler keeps the request's trace, and a disabled span (a
//! check, nothing more) when it does not. Its attributes follow the HTTP semantic conventions;
//! the key's id and plan are the service's own (`petstore.key.id`, `petstore.plan`). Never the
//! key, never the query string.

use actix_web::dev::ServiceRequest;
use actix_web::http::StatusCode;
use actix_web::http::header::HeaderMap;
use opentelemetry::KeyValue;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{SpanContext, Status, TraceContextExt};
use petstore_domain::{TRACE_ROOTS, redact_keys};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// What the program's sampler decides before a trace has an id: whether a trace that would
/// start here is dropped whatever its id, and whether the caller's decision is followed. A
/// request whose trace is dropped for certain makes no span at all, not even one begun to ask
/// the sampler (5% more instructions at a ratio of 0: `scripts/bench.sh --traces-cost`). The
/// sampler decides every other trace; by default, every trace (the metrics listener's app).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sampling {
    /// A trace that starts here is dropped whatever its id (`always_off`, a ratio of 0).
    pub roots_dropped: bool,
    /// The caller's decision is followed (`parentbased_*`): the trace of a caller who dropped
    /// it is dropped here.
    pub follows_caller: bool,
}

impl Sampling {
    /// Whether the sampler drops, whatever the trace id, the trace of a request whose caller
    /// sent `parent` (not valid when it sent none).
    pub fn drops(self, parent: &SpanContext) -> bool {
        if self.follows_caller && parent.is_valid() {
            return !parent.is_sampled();
        }
        self.roots_dropped
    }
}

/// A server span for `req` (`method` its method's label, `scheme` the one clients use, asked only
/// for a kept trace), named by the route it matches (semantic conventions: `GET /v1/pets/{petId}`;
/// the method alone when none matches), a child of the caller's trace when its headers carry one
/// (`traceparent`, read by the propagator the program installs).
///
/// A disabled span when the trace is dropped: for certain by `sampling` (no span is begun), or
/// by the sampler (the span is begun to ask it, and let go). The request then makes no span at
/// all, since the spans beneath a server span are made only inside a kept trace; kept, it and
/// its children would cost an unsampled request most of what a sampled one costs (measured:
/// `scripts/bench.sh --traces-cost`).
pub fn server_span(
    method: &'static str,
    scheme: impl FnOnce() -> &'static str,
    req: &ServiceRequest,
    sampling: Sampling,
) -> Span {
    if !tracing::enabled!(target: TRACE_ROOTS, tracing::Level::INFO) {
        return Span::none();
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Headers(req.headers()))
    });
    if sampling.drops(parent.span().span_context()) {
        return Span::none();
    }
    let span = tracing::info_span!(
        target: TRACE_ROOTS,
        "request",
        otel.kind = "server",
        http.request.method = method,
    );
    if span.is_disabled() {
        return span;
    }
    // Fails only when the span has started already: it has not.
    let _ = span.set_parent(parent);
    // Starts it: the sampler decides (from the parent and the trace id; not the name, given
    // below), before anything else is worked out for a trace it drops.
    let context = span.context();
    let started = context.span();
    if !started.span_context().is_sampled() {
        return Span::none();
    }
    // On the started span itself: a field recorded through `tracing` would also be offered to
    // the logs' layer, to be turned down there.
    started.set_attributes([
        // As the logs show it: a client that puts its key in the path does not have it
        // exported.
        KeyValue::new("url.path", redact_keys(req.path()).into_owned()),
        KeyValue::new("url.scheme", scheme()),
    ]);
    match req.match_pattern() {
        Some(route) => {
            started.update_name(format!("{method} {route}"));
            started.set_attribute(KeyValue::new("http.route", route));
        }
        None => started.update_name(method),
    }
    span
}

/// What the answer adds to the server span: its status, and who called.
pub struct Answered {
    /// The answer's status.
    pub status: StatusCode,
    /// The client's address, as the limiter sees it.
    pub client: Option<String>,
    /// The key's id and plan, when a valid key called.
    pub key: Option<(i64, &'static str)>,
}

/// Records `answered` on the started OpenTelemetry span directly (a field recorded through
/// `tracing` would be a dispatch of its own, to every layer).
pub fn record(span: &Span, answered: Answered) {
    if span.is_disabled() {
        return;
    }
    let (context, status) = (span.context(), answered.status);
    let (started, code) = (context.span(), i64::from(status.as_u16()));
    started.set_attribute(KeyValue::new("http.response.status_code", code));
    // A server span is in error for a 5xx only: a 4xx is the client's.
    if status.is_server_error() {
        started.set_status(Status::error(""));
        started.set_attribute(KeyValue::new("error.type", status.as_str().to_owned()));
    }
    if let Some(client) = answered.client {
        started.set_attribute(KeyValue::new("client.address", client));
    }
    if let Some((id, plan)) = answered.key {
        started.set_attribute(KeyValue::new("petstore.key.id", id));
        started.set_attribute(KeyValue::new("petstore.plan", plan));
    }
}

/// The trace and span ids of `span` for the access log (lowercase hex), when it is exported.
pub fn ids(span: &Span) -> Option<(String, String)> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let ids = context.span().span_context().clone();
    let (trace, id) = (ids.trace_id(), ids.span_id());
    ids.is_valid().then(|| (trace.to_string(), id.to_string()))
}

/// A request's headers, as the propagator reads them.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}
