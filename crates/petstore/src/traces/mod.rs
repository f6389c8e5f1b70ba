//! Traces: OpenTelemetry spans over OTLP (HTTP/protobuf), off unless an endpoint is given
//! ([`TraceArgs`], `serve`'s trace options: OpenTelemetry's own variables, in `args.rs`). The crates below make their spans with `tracing` under
//! [`petstore_domain::TRACES`]; the bridge (`tracing-opentelemetry`) turns those, and only
//! those, into OpenTelemetry spans, which the SDK samples and batches on a thread of its own.
//!
//! Export never holds a request up: a finished span goes into a bounded queue or, when that is
//! full, is dropped and counted ([`metric::SPANS_DROPPED`]); a collector that is down or slow
//! costs at most the queue's memory.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::resource::TelemetryResourceDetector;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider, Span, SpanData,
    SpanExporter, SpanProcessor,
};
use petstore_http::telemetry::trace::Sampling;

mod args;

pub use args::{SamplerKind, TraceArgs};

/// The largest answer read from a collector (they answer with a few bytes).
const MAX_ANSWER: u64 = 64 * 1024;

/// The metrics of the export.
pub mod metric {
    /// Finished spans dropped because the export queue was full (a collector down or slow).
    pub const SPANS_DROPPED: &str = "petstore_trace_spans_dropped_total";
    /// Spans handed to the collector, by `outcome` (`ok`, `error`: the export failed and the
    /// spans were dropped).
    pub const SPANS_EXPORTED: &str = "petstore_trace_spans_exported_total";

    /// Describes them to the metrics exporter.
    pub fn describe() {
        metrics::describe_counter!(
            SPANS_DROPPED,
            "Finished spans dropped because the trace export queue was full."
        );
        metrics::describe_counter!(
            SPANS_EXPORTED,
            "Spans sent to the OTLP collector, by outcome."
        );
    }
}

/// The trace pipeline while it runs: flushed and stopped by [`Traces::shutdown`].
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl fmt::Debug for Traces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Traces").finish_non_exhaustive()
    }
}

impl Traces {
    /// The pipeline `args` ask for: `Ok(None)` when traces are off. A setting that cannot work
    /// is an error naming it (nothing is started then).
    pub fn start(args: &TraceArgs) -> Result<Option<Self>, String> {
        let Some(endpoint) = endpoint(args)? else {
            return Ok(None);
        };
        let timeout = Duration::from_millis(args.otlp_timeout);
        let client = Client {
            client: reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
                .map_err(|error| format!("the OTLP client: {error}"))?,
            headers: headers(args)?,
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(timeout)
            .build()
            .map_err(|error| format!("the OTLP exporter: {error}"))?;
        let capacity = args.otel_bsp_max_queue_size as usize;
        let queued = Arc::new(AtomicUsize::new(0));
        let batches = BatchSpanProcessor::builder(Counted {
            inner: exporter,
            queued: queued.clone(),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                // The gate in front ([`Bounded`]) keeps fewer than this waiting: the SDK's
                // own queue never fills, so every drop is counted there.
                .with_max_queue_size(capacity + 1)
                .with_scheduled_delay(Duration::from_millis(args.otel_bsp_schedule_delay))
                .build(),
        )
        .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(Bounded {
                inner: batches,
                queued,
                capacity,
            })
            .with_sampler(sampler(
                args.otel_traces_sampler,
                args.otel_traces_sampler_arg,
            ))
            .with_resource(resource(args)?)
            .build();
        let tracer = provider.tracer("petstore");
        // An incoming `traceparent` is read by the global propagator (the server spans' parents).
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self { provider, tracer }))
    }

    /// The tracer the `tracing` bridge hands spans to.
    pub fn tracer(&self) -> SdkTracer {
        self.tracer.clone()
    }

    /// Sends what is queued, waiting at most `within`, and stops the pipeline.
    pub fn shutdown(&self, within: Duration) {
        if let Err(error) = self.provider.shutdown_with_timeout(within) {
            log::warn!("traces: the last spans were not all exported: {error}");
        }
    }
}

/// Where traces go: `None` when they are off (no endpoint, or the SDK disabled).
fn endpoint(args: &TraceArgs) -> Result<Option<String>, String> {
    let endpoint = match (&args.otlp_traces_endpoint, &args.otlp_endpoint) {
        (Some(url), _) if !url.is_empty() => url.clone(),
        (_, Some(base)) if !base.is_empty() => {
            format!("{}/v1/traces", base.trim_end_matches('/'))
        }
        _ => return Ok(None),
    };
    if args.otel_sdk_disabled {
        return Ok(None);
    }
    if args.otlp_protocol != "http/protobuf" {
        return Err(format!(
            "--otlp-protocol (OTEL_EXPORTER_OTLP_PROTOCOL) {:?}: only http/protobuf is built in",
            args.otlp_protocol
        ));
    }
    let uri = endpoint
        .parse::<http::Uri>()
        .ok()
        .filter(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some());
    if uri.is_none() {
        return Err(format!(
            "--otlp-traces-endpoint / --otlp-endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / \
             OTEL_EXPORTER_OTLP_ENDPOINT) {:?}: not an http:// or https:// URL \
             (e.g. http://localhost:4318)",
            petstore_domain::redacted_url(&endpoint)
        ));
    }
    Ok(Some(endpoint))
}

/// The headers every export carries: `--otlp-headers`, then `--otlp-traces-headers` over them.
fn headers(args: &TraceArgs) -> Result<http::HeaderMap, String> {
    let mut headers = http::HeaderMap::new();
    for (setting, text) in [
        (
            "--otlp-headers (OTEL_EXPORTER_OTLP_HEADERS)",
            &args.otlp_headers,
        ),
        (
            "--otlp-traces-headers (OTEL_EXPORTER_OTLP_TRACES_HEADERS)",
            &args.otlp_traces_headers,
        ),
    ] {
        for (name, value) in pairs(setting, text.as_deref())? {
            let name = http::HeaderName::try_from(name.as_str())
                .map_err(|_| format!("{setting}: {name:?} is not a header name"))?;
            let value = http::HeaderValue::try_from(value)
                .map_err(|_| format!("{setting}: the value of {name} is not a header value"))?;
            headers.insert(name, value);
        }
    }
    Ok(headers)
}

/// What the spans say of the service: its name (the flag, else `service.name` among the
/// attributes, else `petstore`), the build's version, the SDK's attributes, and the others given.
fn resource(args: &TraceArgs) -> Result<Resource, String> {
    let mut attributes = pairs(
        "--otel-resource-attributes (OTEL_RESOURCE_ATTRIBUTES)",
        Some(&args.otel_resource_attributes),
    )?;
    let named = attributes
        .iter()
        .position(|(key, _)| key == "service.name")
        .map(|at| attributes.remove(at).1);
    let service = (args.otel_service_name.clone())
        .or(named)
        .unwrap_or_else(|| "petstore".into());
    Ok(Resource::builder_empty()
        .with_detectors(&[Box::new(TelemetryResourceDetector)])
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attributes(
            attributes
                .into_iter()
                .map(|(key, value)| KeyValue::new(key, value)),
        )
        .with_service_name(service)
        .build())
}

/// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name.
fn sampler(kind: SamplerKind, ratio: Option<f64>) -> Sampler {
    let ratio = Sampler::TraceIdRatioBased(ratio.unwrap_or(1.0));
    match kind {
        SamplerKind::AlwaysOn => Sampler::AlwaysOn,
        SamplerKind::AlwaysOff => Sampler::AlwaysOff,
        SamplerKind::Traceidratio => ratio,
        SamplerKind::ParentbasedAlwaysOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        SamplerKind::ParentbasedAlwaysOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        SamplerKind::ParentbasedTraceidratio => Sampler::ParentBased(Box::new(ratio)),
    }
}

/// What the sampler `kind` (of `ratio`) decides before a trace has an id, for the server's
/// requests: a trace that starts here is dropped for certain by `always_off` and by a ratio of
/// 0; a caller's decision is followed by the `parentbased_*` samplers (the SDK's defaults for
/// a remote parent: kept when sampled, dropped when not).
pub fn sampling(kind: SamplerKind, ratio: Option<f64>) -> Sampling {
    let never = ratio.is_some_and(|ratio| ratio <= 0.0);
    let (roots_dropped, follows_caller) = match kind {
        SamplerKind::AlwaysOn => (false, false),
        SamplerKind::AlwaysOff => (true, false),
        SamplerKind::Traceidratio => (never, false),
        SamplerKind::ParentbasedAlwaysOn => (false, true),
        SamplerKind::ParentbasedAlwaysOff => (true, true),
        SamplerKind::ParentbasedTraceidratio => (never, true),
    };
    Sampling {
        roots_dropped,
        follows_caller,
    }
}

/// `key=value,key=value` with percent-encoded values, as OpenTelemetry's variables take them.
fn pairs(setting: &str, text: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for pair in text
        .unwrap_or_default()
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
    {
        let (key, value) = pair
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| format!("{setting}: expected key=value pairs separated by commas"))?;
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| format!("{setting}: a value is not UTF-8 once percent-decoded"))?;
        pairs.push((key.trim().to_owned(), value.into_owned()));
    }
    Ok(pairs)
}

/// The gate in front of the SDK's batch processor: at most `capacity` sampled spans wait for
/// export (or are being exported); one more is dropped here, and counted.
#[derive(Debug)]
struct Bounded {
    inner: BatchSpanProcessor,
    queued: Arc<AtomicUsize>,
    capacity: usize,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, span: &mut Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        // The batch processor keeps sampled spans only; the others never reach the exporter.
        if !span.span_context.is_sampled() {
            return;
        }
        if self.queued.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            metrics::counter!(metric::SPANS_DROPPED).increment(1);
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, telling [`Bounded`] how many spans have left the queue.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    queued: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        self.queued.fetch_sub(spans, Ordering::Relaxed);
        let outcome = if result.is_ok() { "ok" } else { "error" };
        metrics::counter!(metric::SPANS_EXPORTED, "outcome" => outcome).increment(spans as u64);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter's HTTP client: the blocking reqwest client (rustls, the build's one reqwest),
/// on the batch processor's own thread, sending the configured headers (over any of the same
/// name the exporter read from the environment itself: a flag wins over its variable).
struct Client {
    client: reqwest::blocking::Client,
    headers: http::HeaderMap,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the headers: they may hold a token.
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        use std::io::Read;
        let (mut parts, body) = request.into_parts();
        parts.headers.extend(self.headers.clone());
        let answer = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()?;
        let mut response = Response::builder().status(answer.status());
        if let Some(headers) = response.headers_mut() {
            *headers = answer.headers().clone();
        }
        let mut body = Vec::new();
        answer.take(MAX_ANSWER).read_to_end(&mut body)?;
        Ok(response.body(Bytes::from(body))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever `sampling` says is dropped for certain, the SDK's sampler drops, for any trace id;
    /// and a trace that starts here at a ratio of 0 is one of those.
    #[test]
    fn what_sampling_drops_for_certain_the_sampler_drops() {
        use clap::ValueEnum;
        use opentelemetry::Context;
        use opentelemetry::trace::{
            SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
        };
        use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample};
        let parent = |flags| {
            let span = SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                flags,
                true,
                TraceState::default(),
            );
            Context::new().with_remote_span_context(span)
        };
        let parents = [
            Context::new(),
            parent(TraceFlags::SAMPLED),
            parent(TraceFlags::default()),
        ];
        let mut certain = 0;
        for &kind in SamplerKind::value_variants() {
            for ratio in [None, Some(0.0), Some(0.5), Some(1.0)] {
                let sdk = sampler(kind, ratio);
                let sampling = sampling(kind, ratio);
                for context in &parents {
                    if !sampling.drops(context.span().span_context()) {
                        continue;
                    }
                    certain += 1;
                    for id in (0..64u128)
                        .map(|n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1)
                    {
                        let decision = sdk
                            .should_sample(
                                Some(context),
                                TraceId::from(id),
                                "request",
                                &SpanKind::Server,
                                &[],
                                &[],
                            )
                            .decision;
                        assert_eq!(
                            decision,
                            SamplingDecision::Drop,
                            "{kind:?} {ratio:?} {context:?}"
                        );
                    }
                }
            }
        }
        assert!(certain > 0);
        let roots = sampling(SamplerKind::ParentbasedTraceidratio, Some(0.0));
        assert!(roots.drops(parents[0].span().span_context()));
        assert!(!roots.drops(parents[1].span().span_context()));
    }

    #[test]
    fn pairs_are_percent_decoded_and_malformed_ones_named() {
        assert_eq!(
            pairs("x", Some("authorization=Bearer%20abc, tenant = a=b")).expect("pairs"),
            vec![
                ("authorization".to_owned(), "Bearer abc".to_owned()),
                ("tenant".to_owned(), "a=b".to_owned()),
            ]
        );
        assert_eq!(pairs("x", Some("")).expect("none"), vec![]);
        assert!(
            pairs("--otlp-headers", Some("novalue"))
                .expect_err("refused")
                .starts_with("--otlp-headers")
        );
        assert!(pairs("x", Some("=v")).is_err());
    }

    #[test]
    fn traces_are_off_without_an_endpoint_and_a_bad_one_is_named() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            args: TraceArgs,
        }
        let parse = |argv: &[&str]| Wrap::try_parse_from(argv).expect("flags").args;
        assert!(Traces::start(&parse(&["x"])).expect("off").is_none());
        // The error of an export to `endpoint` with the further flags `more`.
        let refused = |endpoint: &str, more: &[&str]| {
            let argv = [&["x", "--otlp-endpoint", endpoint], more].concat();
            Traces::start(&parse(&argv)).expect_err("refused")
        };
        let error = refused("localhost:4318", &[]);
        assert!(error.contains("not an http:// or https:// URL"), "{error}");
        let error = refused("http://localhost:4318", &["--otlp-protocol", "grpc"]);
        assert!(error.contains("only http/protobuf"), "{error}");
        let error = refused("http://localhost:4318", &["--otlp-headers", "bad name=x"]);
        assert!(
            error.starts_with("--otlp-headers (OTEL_EXPORTER_OTLP_HEADERS): \"bad name\""),
            "{error}"
        );
    }
}
