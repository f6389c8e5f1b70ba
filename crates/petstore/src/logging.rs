//! Logging: `tracing`, with every crate's `log` macros bridged into it, filtered by `RUST_LOG`
//! (default `info`), written to stderr as text or as JSON lines, every line redacted of
//! anything shaped like an API key.
//!
//! Lines written while a request is handled carry its span, `request{request_id=...
//! traceparent=...}`; the access log (target [`petstore_http::telemetry::ACCESS_LOG`]) is one line per request, written
//! by the `observe` middleware once the response is ready.

use std::fmt;
use std::io::{self, Write};

use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::trace::SdkTracer;
use petstore_domain::redact_keys;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::filter::{self, EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::{FmtSpan, JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::layer::{self, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written (`--log-format text|json`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: `time LEVEL span: target: message key=value ...`.
    #[default]
    Text,
    /// One JSON object a line, for collectors.
    Json,
}

/// Installs the process's logger, and with a `tracer` (traces exported) the bridge that hands
/// the spans of targets [`petstore_domain::TRACES`] and [`petstore_domain::TRACE_ROOTS`] to it.
/// Fails if one is installed already.
///
/// Without a tracer the filter is the subscriber's own, as it always was: the trace spans are
/// then disabled where they are made (a check each). With one, the logs and the bridge each
/// filter for themselves (the logs never show the trace spans, whatever `RUST_LOG` says, and
/// the bridge sees nothing else), behind [`Sampled`], which decides whether a trace span is
/// made at all, and turns down what the logs' filter can never let through.
pub fn init(
    format: LogFormat,
    tracer: Option<SdkTracer>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // Both: the more specific of `RUST_LOG`'s directives and these would win.
    let logs = || -> Result<EnvFilter, Box<dyn std::error::Error + Send + Sync>> {
        Ok(EnvFilter::try_from_default_env()
            .or_else(|_| EnvFilter::try_new("info"))?
            .add_directive(format!("{}=off", petstore_domain::TRACES).parse()?)
            .add_directive(format!("{}=off", petstore_domain::TRACE_ROOTS).parse()?))
    };
    let filter = logs()?;
    // The same lines whichever subscriber they go through (a macro: the layer's type names the
    // subscriber it is part of).
    macro_rules! lines {
        () => {
            tracing_subscriber::fmt::layer()
                .with_writer(|| RedactingStderr)
                .with_ansi(false)
                .with_span_events(FmtSpan::NONE)
        };
    }
    let registry = tracing_subscriber::registry();
    match (format, tracer) {
        (LogFormat::Text, None) => registry.with(filter).with(lines!()).try_init()?,
        (LogFormat::Json, None) => registry
            .with(filter)
            .with(
                lines!()
                    .fmt_fields(JsonFields::new())
                    .event_format(JsonLines),
            )
            .try_init()?,
        (LogFormat::Text, Some(tracer)) => registry
            .with(Sampled { logs: logs()? })
            .with(bridge(tracer))
            .with(lines!().with_filter(filter))
            .try_init()?,
        (LogFormat::Json, Some(tracer)) => registry
            .with(Sampled { logs: logs()? })
            .with(bridge(tracer))
            .with(
                lines!()
                    .fmt_fields(JsonFields::new())
                    .event_format(JsonLines)
                    .with_filter(filter),
            )
            .try_init()?,
    }
    Ok(())
}

/// The bridge to `tracer`: the spans of target [`petstore_domain::TRACES`] (and
/// [`petstore_domain::TRACE_ROOTS`], beneath it), and only those, as OpenTelemetry spans (their
/// fields as attributes, nothing of the code's location or thread).
fn bridge<S>(tracer: SdkTracer) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_level(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        // A span's parent is its parent in `tracing` (not a thread's current OpenTelemetry
        // context, which would be set and reset on every poll of every traced future).
        .with_context_activation(false)
        // The trace spans are all made at `INFO`. That level is also the filter's hint: without
        // it every `log::trace!` of every dependency (tokio-postgres writes several per query)
        // would be handed to the subscriber only to be turned down there, measured at a third
        // more instructions per create.
        .with_filter(filter::filter_fn(traced).with_max_level_hint(LevelFilter::INFO))
}

/// Whether a trace span is made at all: only inside a trace the sampler kept, or (a span of
/// [`petstore_domain::TRACE_ROOTS`]) to start one. A span inside a dropped trace would be
/// built, given its attributes and handed to the SDK only to be dropped with its trace: with a
/// sampling ratio of 0 that was most of what traces cost a create (measured:
/// `scripts/bench.sh --traces-cost`). Whether its trace is kept is known from the nearest trace
/// span it is made in (the current span or an ancestor), whose sampler decided when it started.
/// A request whose trace was dropped has none (its server span is let go), nor has a background
/// job: their spans are not made.
///
/// A layer in front of both, not the bridge's own filter: a span that every layer's own filter
/// turns down is still made (tracing-subscriber 0.3 registers it, and looks it up for each of
/// those filters on its every enter, exit and record); one that this layer turns down is not.
///
/// A span that starts a trace (a request's server span; a webhook attempt's, `parent: None`) is
/// judged by the span current where it is made; the service makes those outside any span.
///
/// For the same reason it turns down, once per callsite, what neither layer can want: a span or
/// event of any other target that no directive of the logs' filter (`logs`, a copy of theirs)
/// could let through. Else, with `RUST_LOG=warn`, each request's log span would be made (the
/// bridge's hint lets `INFO` through) only for the logs' filter to turn it down on its every
/// enter and exit.
struct Sampled {
    logs: EnvFilter,
}

/// Whether `meta` is a trace span's (or the storage's question whether it is in a trace).
fn traced(meta: &Metadata<'_>) -> bool {
    meta.target().starts_with(petstore_domain::TRACES)
}

impl<S> Layer<S> for Sampled
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if traced(meta) {
            // Asked for each span: the answer depends on the trace it is made in.
            Interest::sometimes()
        } else if Filter::<S>::callsite_enabled(&self.logs, meta).is_never() {
            // Not the bridge's, and no directive of the logs' (static or dynamic) takes it.
            Interest::never()
        } else {
            // The logs' own filter decides.
            Interest::always()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, cx: layer::Context<'_, S>) -> bool {
        if !traced(meta) {
            return true;
        }
        let root = meta.target() == petstore_domain::TRACE_ROOTS;
        let Some(parent) = cx
            .lookup_current()
            .and_then(|current| current.scope().find(|span| traced(span.metadata())))
        else {
            return root;
        };
        tracing::dispatcher::get_default(|dispatch| {
            tracing_opentelemetry::get_otel_context(&parent.id(), dispatch)
        })
        .is_none_or(|context| context.span().span_context().is_sampled())
    }

    /// It enables nothing of its own, only turns trace spans down: the layers' hints stand.
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::OFF)
    }
}

/// One JSON object a line: `time`, `level`, `target`, the fields of the spans the event is in
/// (`request_id`, `traceparent`), then the event's own (`message`, ...), all at the top level.
/// tracing-subscriber's own JSON format nests span fields and, for events from the `log`
/// macros, adds `log.*` fields of their origin: this one does neither.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        let mut time = String::new();
        SystemTime.format_time(&mut Writer::new(&mut time))?;
        let mut line = Map::new();
        line.insert("time".into(), time.into());
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let fields = extensions
                    .get::<FormattedFields<N>>()
                    .and_then(|fields| serde_json::from_str::<Map<String, Value>>(fields).ok());
                line.extend(fields.into_iter().flatten());
            }
        }
        event.record(&mut JsonVisitor(&mut line));
        // Serialised into bytes and handed over whole (`Value`'s `Display` goes through
        // `fmt::Write` a piece at a time).
        let mut text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        text.push('\n');
        writer.write_str(&text)
    }
}

/// An event's fields into a JSON object, but the `log.*` ones.
struct JsonVisitor<'a>(&'a mut Map<String, Value>);

impl JsonVisitor<'_> {
    fn insert(&mut self, field: &Field, value: Value) {
        if !field.name().starts_with("log.") {
            self.0.insert(field.name().to_owned(), value);
        }
    }
}

impl Visit for JsonVisitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.insert(field, format!("{value:?}").into());
    }
}

/// Stderr, through [`redact_keys`]. The formatter hands over each line whole, in one write.
struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(line);
        io::stderr()
            .lock()
            .write_all(redact_keys(&text).as_bytes())?;
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the logs at `warn`, a request's `INFO` log span is not made at all (no layer can want
    /// it), a `WARN` one is; with the logs at `info`, both are.
    #[test]
    fn a_span_no_layer_can_want_is_not_made() {
        let made = |directives: &str| {
            let lines = tracing_subscriber::fmt::layer()
                .with_writer(io::sink)
                .with_filter(EnvFilter::new(directives));
            let subscriber = tracing_subscriber::registry()
                .with(Sampled {
                    logs: EnvFilter::new(directives),
                })
                .with(lines);
            tracing::subscriber::with_default(subscriber, || {
                let info = tracing::info_span!("request");
                let warn = tracing::warn_span!("request");
                (!info.is_disabled(), !warn.is_disabled())
            })
        };
        assert_eq!(made("warn"), (false, true));
        assert_eq!(made("info"), (true, true));
    }
}
