//! The outermost layer: every request gets an id (`X-Request-Id`, on every response), a span
//! that the log lines written while handling it carry, one access-log line and its metrics;
//! and every error answer the Error object ([`json_errors`]: the safety net).

use std::time::Instant;

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, web};
use tracing::Instrument;

use super::json_errors::json_errors;
use crate::auth::ApiClient;
use crate::connection::{BodyRead, Connection};
use crate::error::ErrorCode;
use crate::links::Links;
use crate::ratelimit::client_address;
use crate::state::AppState;
use crate::telemetry::metric::RequestMetrics;
use crate::telemetry::request_id::{X_REQUEST_ID, traceparent};
use crate::telemetry::trace;
use crate::telemetry::{ACCESS_LOG, RequestId};

/// The `route` label of requests that matched no route (a path is never a label: unbounded).
const UNMATCHED: &str = "unmatched";

/// Marks the admin listener's application (`admin_app`), which shares the public one's state:
/// its spans' `url.scheme` is its own listener's, not the public base URL's.
#[derive(Debug, Clone, Copy)]
pub struct AdminListener;

/// Runs the request inside its span, then makes any error answer the Error object (and stops
/// reading a chunked body such an answer leaves unread: see `connection`), stamps the request's
/// id on the response, counts it and writes its access-log line.
pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let id = RequestId::of(req.headers());
    let state = req.app_data::<web::Data<AppState>>();
    let sampling = state.map(|state| state.sampling).unwrap_or_default();
    // The public base URL names the public listener: the admin and metrics listeners' own.
    let scheme = || match state {
        Some(state) if req.app_data::<AdminListener>().is_none() => {
            state.links.scheme(req.request())
        }
        _ => Links::listener_scheme(req.request()),
    };
    let server = trace::server_span(method_label(req.method()), scheme, &req, sampling);
    // The log's span, inside the server span: what the request's code traces is the server
    // span's (its nearest traced ancestor).
    let span = tracing::info_span!(
        parent: &server,
        "request",
        request_id = %id,
        traceparent = tracing::field::Empty
    );
    let traceparent = traceparent(req.headers()).map(str::to_owned);
    if let Some(traceparent) = &traceparent {
        span.record("traceparent", traceparent.as_str());
    }
    // Worked out before the request is handed on, and only when the line or the span will
    // show it.
    let logged = tracing::enabled!(target: ACCESS_LOG, tracing::Level::INFO);
    let client = (logged || !server.is_disabled())
        .then(|| state.map(|state| client_address(&state.trusted_proxies, &req)))
        .flatten();
    // Inner layers answer every error as a response (the request is theirs until then: routing
    // needs it unshared, so no copy of it can be kept here for an `Err`).
    let connection = Connection::of_chunked(&req);
    let response = next
        .call(req)
        .instrument(span)
        .instrument(server.clone())
        .await?
        .map_into_boxed_body();
    if let Some(connection) = connection {
        let body_read = response.request().extensions().contains::<BodyRead>();
        connection.answered(response.status(), body_read);
    }
    let mut response = json_errors(response);
    let headers = response.headers_mut();
    headers.insert(X_REQUEST_ID, id.header_value());
    // No answer is to be read as another type than it says (a JSON error as HTML, say).
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let elapsed = started.elapsed();
    let request = response.request();
    let route = request.match_pattern();
    let route = route.as_deref().unwrap_or(UNMATCHED);
    let method = method_label(request.method());
    let status = response.status();
    match request.app_data::<web::Data<AppState>>() {
        Some(state) => {
            state
                .request_metrics
                .request(route, method, status.as_u16(), elapsed.as_secs_f64())
        }
        // The metrics listener's own app: no state of its own, nothing to keep.
        None => {
            RequestMetrics::default().request(route, method, status.as_u16(), elapsed.as_secs_f64())
        }
    }
    let extensions = request.extensions();
    let key = extensions.get::<ApiClient>().map(ApiClient::key);
    trace::record(
        &server,
        trace::Answered {
            status,
            client: client.map(|client| client.to_string()),
            key: key.map(|key| (key.id, key.plan.as_str())),
        },
    );
    let (trace_id, span_id) = logged.then(|| trace::ids(&server)).flatten().unzip();
    tracing::info!(
        target: ACCESS_LOG,
        request_id = %id,
        traceparent,
        trace_id,
        span_id,
        method = request.method().as_str(),
        route,
        path = request.path(),
        status = status.as_u16(),
        code = response.response().extensions().get::<ErrorCode>().map(|code| code.as_str()),
        key_id = key.map(|key| key.id),
        plan = key.map(|key| key.plan.as_str()),
        client = client.map(tracing::field::display),
        // Milliseconds to the microsecond.
        latency_ms = elapsed.as_micros() as f64 / 1000.0,
        bytes = match response.response().body().size() {
            BodySize::Sized(bytes) => Some(bytes),
            BodySize::None => Some(0),
            BodySize::Stream => None,
        },
        "{} {} {}",
        request.method(),
        request.uri(),
        status.as_u16(),
    );
    drop(extensions);
    Ok(response)
}

/// The `method` label: the standard methods, anything else as `other` (bounded).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}
