//! Typed configuration: what the HTTP server runs with, parsed and checked once. The program's
//! command line (the `petstore` crate's `cli` module) fills it from flags and environment
//! variables; tests build it directly with [`Config::new`] and change the fields they need. The
//! storage's own settings are not here: they belong to the backend, which the program opens.

use std::time::Duration;

use petstore_domain::{BanPolicy, Plan, RateLimits};

use crate::ratelimit::{AddressPolicy, FailurePolicy, Limiter, TrustedProxies};
use crate::telemetry::trace::Sampling;

/// Everything the application needs but its storage. Where it listens, with how many workers,
/// and how it starts and stops are the program's (`petstore`'s `ServeConfig`).
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a key lookup is trusted (revocations take effect within this).
    pub key_cache_ttl: Duration,
    /// How long a request body may take to arrive once its headers have (then `408`).
    pub client_body_timeout: Duration,
    /// Paths and links.
    pub http: HttpSettings,
    /// Browser origins allowed to call the API (CORS); empty: CORS off.
    pub cors: CorsOrigins,
    /// Rate limiting.
    pub rate_limit: RateLimitConfig,
    /// How long `Idempotency-Key` records are kept (and a key cannot be reused for another
    /// request).
    pub idempotency_retention: Duration,
    /// What a webhook endpoint's URL may be (`--webhook-allow-http`, `--webhook-allow-private`).
    pub webhook_policy: petstore_domain::webhook::UrlPolicy,
    /// What the trace sampler decides before a trace has an id (when traces are exported).
    pub sampling: Sampling,
}

impl Config {
    /// The defaults of `petstore serve` (see `--help`).
    pub fn new() -> Self {
        Self {
            key_cache_ttl: Duration::from_secs(5),
            client_body_timeout: Duration::from_secs(10),
            http: HttpSettings::new("/v1", None),
            cors: CorsOrigins::default(),
            rate_limit: RateLimitConfig::default(),
            idempotency_retention: Duration::from_secs(24 * 3600),
            webhook_policy: petstore_domain::webhook::UrlPolicy::default(),
            // OpenTelemetry's default sampler, `parentbased_always_on`.
            sampling: Sampling {
                roots_dropped: false,
                follows_caller: true,
            },
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

/// How long records are kept, and how long a claim may stay unfinished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencySettings {
    /// Records older than this are expired (treated as absent) and pruned.
    pub retention: Duration,
    /// A claim not completed within this was abandoned (its process died before answering):
    /// a retry may take it over. Longer than any request runs (a storage call's deadline is a
    /// few seconds).
    pub lease: Duration,
}

impl Default for IdempotencySettings {
    /// 24 hours; one minute.
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(24 * 3600),
            lease: Duration::from_secs(60),
        }
    }
}

/// The browser origins allowed to call the API (`--cors-allowed-origins`, which the program
/// parses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// CORS off: browsers on other origins cannot read the API's responses.
    #[default]
    Off,
    /// Any origin.
    Any,
    /// These origins only.
    Only(Vec<String>),
}

/// Where the API lives and how it names itself in links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    base_path: String,
    public_base_url: Option<String>,
    servers: NamedServers,
}

/// The servers the OpenAPI document lists (`--openapi-servers`, which the program parses): each
/// a description and a base address. Empty: the document lists this instance's own base address
/// alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedServers(pub Vec<(String, String)>);

impl HttpSettings {
    /// Normalises `base_path` to `/segment...` without a trailing slash (`""` for the root), and
    /// `public_base_url` without a trailing slash.
    pub fn new(base_path: &str, public_base_url: Option<String>) -> Self {
        let trimmed = base_path.trim_matches('/');
        Self {
            base_path: if trimmed.is_empty() {
                String::new()
            } else {
                format!("/{trimmed}")
            },
            public_base_url: public_base_url.map(|url| url.trim_end_matches('/').to_owned()),
            servers: NamedServers::default(),
        }
    }

    /// The same settings, the OpenAPI document listing `servers`.
    pub fn with_servers(self, servers: NamedServers) -> Self {
        Self { servers, ..self }
    }

    /// The servers the OpenAPI document lists, when the operator named them.
    pub fn servers(&self) -> &[(String, String)] {
        &self.servers.0
    }

    /// Path prefix of the API, e.g. `/v1`: a leading slash and no trailing one.
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// The public base address (e.g. `https://api.example.com/v1`) used in `Link` and
    /// `Location`. When `None`, it is derived from each request's scheme and `Host`.
    pub fn public_base_url(&self) -> Option<&str> {
        self.public_base_url.as_deref()
    }

    /// The site the API is part of, from a public base URL: that URL without the base path
    /// (`https://api.example.com` of `https://api.example.com/v1`), where `/docs/` is. A base
    /// URL that does not end with the base path (a proxy that maps it elsewhere) is taken
    /// whole.
    pub fn site_of<'a>(&self, base: &'a str) -> &'a str {
        base.strip_suffix(self.base_path.as_str()).unwrap_or(base)
    }

    /// The docs page's address for a public base address `base`.
    pub fn docs_page(&self, base: &str) -> String {
        format!("{}/docs/", self.site_of(base))
    }
}

/// Where rate-limit counters live and how clients are treated.
#[derive(Debug, Clone)]
pub struct RateLimitConfig {
    /// `None`: in this process; `Some(url)`: in Redis (one server or a cluster), shared by
    /// every instance.
    pub redis_url: Option<String>,
    /// A certificate authority (PEM file) the Redis server's TLS certificate must be signed by,
    /// instead of the system's.
    pub ca_file: Option<std::path::PathBuf>,
    /// Prefix of every Redis key, so several deployments can share one Redis.
    pub prefix: String,
    /// What to do while Redis is unreachable.
    pub on_failure: FailurePolicy,
    /// Longest wait for Redis on one request.
    pub timeout: Duration,
    /// Bans.
    pub bans: BanPolicy,
    /// Proxies whose forwarding headers are believed.
    pub trusted_proxies: TrustedProxies,
    /// How anonymous clients are told apart and how many are counted in memory.
    pub addresses: AddressPolicy,
}

impl RateLimitConfig {
    /// The limits of requests without a valid key: the free plan's, per client address.
    pub fn anonymous_limits(&self) -> RateLimits {
        Plan::Free
            .standard_limits()
            .expect("BUG: the free plan has standard limits")
    }

    /// A limiter counting in this process with these bans and address policy (the program
    /// builds the one counting in Redis when `redis_url` is set).
    pub fn in_memory_limiter(&self) -> Limiter {
        Limiter::in_memory(self.bans, self.anonymous_limits(), self.addresses)
    }
}

impl Default for RateLimitConfig {
    /// Counters in memory, the `--rate-limit-*` and `--ban-*` defaults.
    fn default() -> Self {
        Self {
            redis_url: None,
            ca_file: None,
            prefix: "petstore".into(),
            on_failure: FailurePolicy::Open,
            timeout: Duration::from_millis(100),
            bans: BanPolicy::default(),
            trusted_proxies: TrustedProxies::default(),
            addresses: AddressPolicy::default(),
        }
    }
}
