//! Each attempt's span: an HTTP client span in a trace of its own (a delivery outlives the
//! request that recorded it, and may be retried for days), linked to that request's span when
//! the change was made in a trace; the receiver gets the attempt's `traceparent`. A disabled
//! span (a check, nothing more) while traces are off.

use opentelemetry::trace::TraceContextExt;
use petstore_domain::webhook::{DueDelivery, loggable_url};
use petstore_domain::{TRACE_ROOTS, TraceParent};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of the next attempt at `delivery`: its URL as the logs name it (scheme, host, port
/// and the path's first segment: a receiver's token may be in the rest, or in the query).
pub(crate) fn attempt_span(delivery: &DueDelivery) -> Span {
    let span = tracing::info_span!(
        target: TRACE_ROOTS,
        parent: None,
        "POST",
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = "POST",
        url.full = Empty,
        server.address = Empty,
        server.port = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
        petstore.webhook.delivery_id = delivery.id,
        petstore.webhook.event_id = delivery.event_id.as_str(),
        petstore.webhook.event_type = delivery.event_type.as_str(),
        petstore.webhook.endpoint_id = delivery.endpoint_id,
        petstore.webhook.attempt = i64::from(delivery.tries) + 1,
    );
    if span.is_disabled() {
        return span;
    }
    if let Ok(url) = url::Url::parse(&delivery.url) {
        // As the logs name it: receivers carry tokens in the path and the query.
        span.record("url.full", loggable_url(&delivery.url));
        span.record("server.address", url.host_str().unwrap_or_default());
        if let Some(port) = url.port_or_known_default() {
            span.record("server.port", i64::from(port));
        }
    }
    if let Some(change) = delivery.trace {
        span.add_link(change.remote());
    }
    span
}

/// What the attempt's answer adds to its span: the status, or why there was none.
pub(crate) fn record(span: &Span, answer: &Result<(u16, Option<u64>), String>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Ok((status, _)) => {
            span.record("http.response.status_code", i64::from(*status));
            if *status >= 400 {
                span.record("otel.status_code", "error");
                span.record("error.type", status.to_string());
            }
        }
        Err(_) => {
            span.record("otel.status_code", "error");
            span.record("error.type", "no_answer");
        }
    }
}

/// The `traceparent` the receiver gets: the attempt span's, when it is exported.
pub(crate) fn traceparent(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    TraceParent::of(span.context().span().span_context()).map(|parent| parent.to_string())
}
