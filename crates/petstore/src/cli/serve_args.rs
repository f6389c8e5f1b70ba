//! `serve`'s options ([`ServeArgs`]): listeners, the database's standbys, timeouts, CORS,
//! webhooks, metrics, the admin listener, rate limits and bans, and how they become the
//! server's [`ServeConfig`].

use std::time::Duration;

use clap::{ArgAction, Args};
use petstore_domain::BanPolicy;
use petstore_domain::webhook::UrlPolicy;
use petstore_store::StoreConfig;

use super::{AddressArgs, DatabaseArgs, positive_duration, share};
use crate::serve::{MetricsEndpoint, ServeConfig};
use crate::traces::{self, TraceArgs};
use petstore_http::config::{Config, CorsOrigins, RateLimitConfig};
use petstore_http::ratelimit::{AddressPolicy, FailurePolicy, ForwardedHeader, TrustedProxies};
use petstore_webhooks::SenderConfig;

/// Options of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PETSTORE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Where the API is.
    #[command(flatten)]
    pub addresses: AddressArgs,
    /// Traces (OpenTelemetry).
    #[command(flatten)]
    pub traces: TraceArgs,
    /// Worker threads, 1 to 512 (default: one per CPU).
    #[arg(long, env = "PETSTORE_WORKERS", value_parser = clap::value_parser!(u16).range(1..=512))]
    pub workers: Option<u16>,
    /// Create and print a free-plan key at start-up when no key exists and standard output is
    /// a terminal (elsewhere the log says how to make one).
    #[arg(long, env = "PETSTORE_BOOTSTRAP_KEY", default_value_t = true, action = ArgAction::Set)]
    pub bootstrap_key: bool,
    /// Apply no migration at start-up (for a database role without rights to change the
    /// schema): refuse to start while the schema is behind, naming what is pending.
    #[arg(long, env = "PETSTORE_NO_MIGRATE")]
    pub no_migrate: bool,
    /// A PostgreSQL standby (`postgres://...`) to answer the reads that tolerate one (pet
    /// pages, one pet, the inventory, orders); repeat the option for several (the variable:
    /// URLs separated by spaces). Writes then wait until the synchronous standbys have applied
    /// them (`synchronous_commit = remote_apply`): name these standbys in the primary's
    /// `synchronous_standby_names` for read-your-writes (docs/deploy.md).
    #[arg(long, env = "PETSTORE_DATABASE_READ_URL", value_delimiter = ' ')]
    pub database_read_url: Vec<String>,
    /// A standby further behind the primary than this is not read from until it catches up.
    #[arg(long, env = "PETSTORE_DATABASE_READ_MAX_LAG", default_value = "2s", value_parser = positive_duration)]
    pub database_read_max_lag: Duration,
    /// How long a key lookup is cached; a revoked key stops working within this time.
    #[arg(long, env = "PETSTORE_KEY_CACHE_TTL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub key_cache_ttl: Duration,
    /// How long a request body may take to arrive once its headers have; then `408` and the
    /// connection is closed.
    #[arg(long, env = "PETSTORE_CLIENT_BODY_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub client_body_timeout: Duration,
    /// Browser origins allowed to call the API (CORS): a comma-separated list of origins such as
    /// `https://app.example.com`, or `*` for any. Off when empty.
    #[arg(long, env = "PETSTORE_CORS_ALLOWED_ORIGINS", default_value = "", value_parser = super::values::cors_origins)]
    pub cors_allowed_origins: CorsOrigins,
    /// On SIGTERM or SIGINT, keep serving this long with `/readyz` answering 503, so load
    /// balancers stop sending before the listener closes (`0s`: close at once).
    #[arg(long, env = "PETSTORE_SHUTDOWN_DELAY", default_value = "5s", value_parser = humantime::parse_duration)]
    pub shutdown_delay: Duration,
    /// Then, the longest in-flight requests may take to finish.
    #[arg(long, env = "PETSTORE_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub shutdown_timeout: Duration,
    /// How long `Idempotency-Key` records are kept: a retry within it is answered from the
    /// record; after it the key is free again. Expired records are pruned in the background.
    #[arg(long, env = "PETSTORE_IDEMPOTENCY_RETENTION", default_value = "24h", value_parser = humantime::parse_duration)]
    pub idempotency_retention: Duration,
    /// Accept `http://` webhook endpoints, not only `https://` (for tests and closed
    /// networks).
    #[arg(long, env = "PETSTORE_WEBHOOK_ALLOW_HTTP", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub webhook_allow_http: bool,
    /// Accept webhook endpoints on loopback, private, link-local and other non-public
    /// addresses, and deliver to them (off: no request forgery towards this network).
    #[arg(long, env = "PETSTORE_WEBHOOK_ALLOW_PRIVATE", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub webhook_allow_private: bool,
    /// Send webhook deliveries from this instance (any number of instances may; each delivery
    /// is sent by one at a time).
    #[arg(long, env = "PETSTORE_WEBHOOK_SENDER", default_value_t = true, action = ArgAction::Set)]
    pub webhook_sender: bool,
    /// The longest a webhook attempt may take, connection included.
    #[arg(long, env = "PETSTORE_WEBHOOK_TIMEOUT", default_value = "15s", value_parser = positive_duration)]
    pub webhook_timeout: Duration,
    /// Most webhook deliveries this instance sends at once; one owner (a key, or the
    /// operators) has at most half of them under way.
    #[arg(long, env = "PETSTORE_WEBHOOK_CONCURRENCY", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub webhook_concurrency: u16,
    /// How much lower than the API's the sender's CPU priority is: its thread's niceness over
    /// the process's (Linux), from 0 (the same) to 19. During a burst of writes their events
    /// wait rather than take CPU from them.
    #[arg(long, env = "PETSTORE_WEBHOOK_SENDER_NICE", default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=19))]
    pub webhook_sender_nice: u8,
    /// While API requests are under way, the most of the time the sender's storage calls take
    /// (from 0.01 to 1, which never gives way): each is followed by a wait before its next
    /// claim, so that the database's work for the sender is that much less of what the API
    /// waits for. Events wait meanwhile; the sender claims again at full speed when it has seen
    /// no request under way for a tenth of a second.
    #[arg(long, env = "PETSTORE_WEBHOOK_SENDER_SHARE", default_value_t = 0.25, value_parser = share)]
    pub webhook_sender_share: f64,
    /// Record Prometheus metrics and serve them at `/metrics`.
    #[arg(long, env = "PETSTORE_METRICS", default_value_t = true, action = ArgAction::Set)]
    pub metrics: bool,
    /// Serve `/metrics` on this address (`host:port`) instead of the API's listener, to keep
    /// it off the public network (wins over the admin listener).
    #[arg(long, env = "PETSTORE_METRICS_BIND")]
    pub metrics_bind: Option<String>,
    /// Open the admin listener on this address (`host:port`, never the API's): the admin API
    /// (`/admin/v1/keys`, `/admin/v1/orders`, `/admin/v1/webhook_endpoints`, with admin tokens
    /// from `petstore admin-tokens create`), and `/metrics` unless `--metrics-bind` is set. Off
    /// when unset.
    #[arg(long, env = "PETSTORE_ADMIN_BIND")]
    pub admin_bind: Option<String>,
    /// Where rate-limit counters live: `memory` (this process), or shared by every instance in
    /// Redis: `redis://host:port[/db]` (`rediss://` over TLS), or a Redis Cluster by seed nodes,
    /// `redis+cluster://host:port[,host:port...]` (`rediss+cluster://` over TLS).
    #[arg(long, env = "PETSTORE_RATE_LIMIT_STORE", default_value = "memory")]
    pub rate_limit_store: String,
    /// A certificate authority (PEM) that signs the Redis servers' TLS certificates, for a
    /// private CA; by default the system's authorities are trusted. The server's name is checked
    /// either way.
    #[arg(long, env = "PETSTORE_RATE_LIMIT_CA_FILE")]
    pub rate_limit_ca_file: Option<std::path::PathBuf>,
    /// Prefix of the Redis keys.
    #[arg(long, env = "PETSTORE_RATE_LIMIT_PREFIX", default_value = "petstore")]
    pub rate_limit_prefix: String,
    /// While Redis is unreachable: `open` serves with per-instance counters, `closed` answers 503.
    #[arg(
        long,
        env = "PETSTORE_RATE_LIMIT_ON_FAILURE",
        value_parser = one_of::<FailurePolicy>(&["open", "closed"]),
        default_value = "open"
    )]
    pub rate_limit_on_failure: FailurePolicy,
    /// Longest wait for Redis on one request.
    #[arg(long, env = "PETSTORE_RATE_LIMIT_TIMEOUT", default_value = "100ms", value_parser = positive_duration)]
    pub rate_limit_timeout: Duration,
    /// Refused (429) requests tolerated in one minute before a temporary ban; 0 disables bans.
    #[arg(long, env = "PETSTORE_BAN_THRESHOLD", default_value_t = 60)]
    pub ban_threshold: u32,
    /// Length of a first ban; each repeat doubles it.
    #[arg(long, env = "PETSTORE_BAN_DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    pub ban_duration: Duration,
    /// Longest ban.
    #[arg(long, env = "PETSTORE_BAN_MAX_DURATION", default_value = "24h", value_parser = humantime::parse_duration)]
    pub ban_max_duration: Duration,
    /// IPv6 clients without a key are counted per prefix of this length (64: per /64, what one
    /// host usually owns; 128: per address).
    #[arg(long, env = "PETSTORE_RATE_LIMIT_IPV6_PREFIX", default_value_t = 64, value_parser = clap::value_parser!(u8).range(0..=128))]
    pub rate_limit_ipv6_prefix: u8,
    /// Most client addresses counted in this process's memory at once (about 400 bytes each
    /// under a flood); past it the least recently seen go first, never those over a limit.
    #[arg(
        long,
        env = "PETSTORE_RATE_LIMIT_MAX_CLIENTS",
        default_value_t = 50_000
    )]
    pub rate_limit_max_clients: usize,
    /// Proxies (addresses or CIDR blocks, comma-separated) whose forwarding header
    /// (`--forwarded-header`) names the client address; by default the TCP peer is the client.
    #[arg(long, env = "PETSTORE_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: TrustedProxies,
    /// The header the trusted proxies write the client's address in; the other one is never
    /// read (a client can write it, and a proxy passes it through).
    #[arg(
        long,
        env = "PETSTORE_FORWARDED_HEADER",
        value_parser = one_of::<ForwardedHeader>(&["x-forwarded-for", "forwarded"]),
        default_value = "x-forwarded-for"
    )]
    pub forwarded_header: ForwardedHeader,
}

impl ServeArgs {
    /// The store settings of `database` with the standbys to read from.
    pub fn store_config(&self, database: &DatabaseArgs) -> StoreConfig {
        StoreConfig {
            read_urls: self
                .database_read_url
                .iter()
                .filter(|url| !url.is_empty())
                .cloned()
                .collect(),
            read_max_lag: self.database_read_max_lag,
            ..database.store_config(true)
        }
    }

    /// The server's [`ServeConfig`].
    pub fn into_config(self) -> ServeConfig {
        let app = Config {
            sampling: traces::sampling(
                self.traces.otel_traces_sampler,
                self.traces.otel_traces_sampler_arg,
            ),
            key_cache_ttl: self.key_cache_ttl,
            client_body_timeout: self.client_body_timeout,
            http: self.addresses.settings(),
            cors: self.cors_allowed_origins,
            idempotency_retention: self.idempotency_retention,
            webhook_policy: UrlPolicy {
                allow_http: self.webhook_allow_http,
                allow_private: self.webhook_allow_private,
            },
            rate_limit: RateLimitConfig {
                redis_url: (self.rate_limit_store != "memory").then_some(self.rate_limit_store),
                ca_file: self.rate_limit_ca_file,
                prefix: self.rate_limit_prefix,
                on_failure: self.rate_limit_on_failure,
                timeout: self.rate_limit_timeout,
                bans: BanPolicy {
                    threshold: self.ban_threshold,
                    base_seconds: self.ban_duration.as_secs().max(1),
                    max_seconds: self.ban_max_duration.as_secs().max(1),
                    ..BanPolicy::default()
                },
                trusted_proxies: self.trusted_proxies.with_header(self.forwarded_header),
                addresses: AddressPolicy {
                    ipv6_prefix: self.rate_limit_ipv6_prefix,
                    max_addresses: self.rate_limit_max_clients,
                },
            },
        };
        let app_policy = app.webhook_policy;
        ServeConfig {
            app,
            bind: self.bind,
            workers: self.workers.map(usize::from),
            bootstrap_key: self.bootstrap_key,
            migrate: !self.no_migrate,
            shutdown_delay: self.shutdown_delay,
            shutdown_timeout: self.shutdown_timeout,
            metrics: match (self.metrics, self.metrics_bind, &self.admin_bind) {
                (false, _, _) => MetricsEndpoint::Off,
                (true, Some(addr), _) => MetricsEndpoint::Separate(addr),
                (true, None, Some(_)) => MetricsEndpoint::Admin,
                (true, None, None) => MetricsEndpoint::Main,
            },
            admin_bind: self.admin_bind,
            webhooks: self.webhook_sender.then_some(SenderConfig {
                policy: app_policy,
                timeout: self.webhook_timeout,
                concurrency: usize::from(self.webhook_concurrency),
                share: self.webhook_sender_share,
                ..SenderConfig::default()
            }),
            webhook_sender_nice: self.webhook_sender_nice,
        }
    }
}

/// A parser for a setting whose type (defined where it is used, without clap) reads one of
/// `names`: clap checks the name and lists the names in `--help`, then the type parses it.
fn one_of<T>(names: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<T>())
}
