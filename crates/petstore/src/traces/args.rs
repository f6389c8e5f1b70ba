//! `serve`'s trace options ([`TraceArgs`]): OpenTelemetry's own environment variables, each
//! with a flag of the same meaning. Traces are off unless an OTLP endpoint is given.

use clap::{ArgAction, Args, ValueEnum};

/// Where traces go and which are kept (the OpenTelemetry SDK's environment variables).
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Export traces over OTLP (HTTP/protobuf) to this collector: its base URL, to which
    /// `/v1/traces` is added (`http://localhost:4318`). Traces are off when neither this nor
    /// `--otlp-traces-endpoint` is set.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// The full URL traces are sent to, used as it is (overrides `--otlp-endpoint`).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")]
    pub otlp_traces_endpoint: Option<String>,
    /// Headers sent with every export, `name=value` pairs separated by commas, values
    /// percent-encoded (`authorization=Bearer%20abc`). Never logged.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_HEADERS", hide_env_values = true)]
    pub otlp_headers: Option<String>,
    /// Headers for trace exports only, added to (and overriding) `--otlp-headers`.
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        hide_env_values = true
    )]
    pub otlp_traces_headers: Option<String>,
    /// The wire format: only `http/protobuf` is built in.
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_PROTOCOL",
        default_value = "http/protobuf"
    )]
    pub otlp_protocol: String,
    /// How long one export may take, in milliseconds.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_TIMEOUT", default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub otlp_timeout: u64,
    /// The service's name in its traces (default: the `service.name` of
    /// `--otel-resource-attributes`, else `petstore`).
    #[arg(long, env = "OTEL_SERVICE_NAME")]
    pub otel_service_name: Option<String>,
    /// More resource attributes: `key=value` pairs separated by commas, values
    /// percent-encoded (`deployment.environment.name=production,service.version=1.4`).
    #[arg(long, env = "OTEL_RESOURCE_ATTRIBUTES", default_value = "")]
    pub otel_resource_attributes: String,
    /// Which traces are kept. The `parentbased_*` samplers follow an incoming sampled
    /// `traceparent` and decide only for traces that start here.
    #[arg(
        long,
        env = "OTEL_TRACES_SAMPLER",
        value_enum,
        default_value = "parentbased_always_on"
    )]
    pub otel_traces_sampler: SamplerKind,
    /// The ratio of the `*traceidratio` samplers, 0 to 1 (default 1).
    #[arg(long, env = "OTEL_TRACES_SAMPLER_ARG", value_parser = ratio)]
    pub otel_traces_sampler_arg: Option<f64>,
    /// How many finished spans may wait for export; past that they are dropped (and counted in
    /// `petstore_trace_spans_dropped_total`), never waited for.
    #[arg(long, env = "OTEL_BSP_MAX_QUEUE_SIZE", default_value_t = 2048,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub otel_bsp_max_queue_size: u32,
    /// How often the queue is sent, in milliseconds.
    #[arg(long, env = "OTEL_BSP_SCHEDULE_DELAY", default_value_t = 5000,
        value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub otel_bsp_schedule_delay: u64,
    /// Turns traces off whatever else is set.
    #[arg(long, env = "OTEL_SDK_DISABLED", default_value_t = false, action = ArgAction::Set)]
    pub otel_sdk_disabled: bool,
}

/// `OTEL_TRACES_SAMPLER`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum SamplerKind {
    /// Every trace.
    AlwaysOn,
    /// None.
    AlwaysOff,
    /// A ratio of traces, by trace id, whatever the caller decided.
    Traceidratio,
    /// As the caller decided; every trace that starts here.
    ParentbasedAlwaysOn,
    /// As the caller decided; none that start here.
    ParentbasedAlwaysOff,
    /// As the caller decided; a ratio of those that start here.
    ParentbasedTraceidratio,
}

fn ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
        _ => Err("a number from 0 to 1 (the share of traces kept)".into()),
    }
}
