//! Server start-up: open the store, migrate, hand out a first key if there is none, serve.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpServer, web};
use petstore_domain::{ApiKeyRepository, BanPolicy, KeySpec, Plan};
use petstore_store::{Store, StoreConfig};

use crate::ratelimit::{FailurePolicy, Limiter, RedisCounters, TrustedProxies};
use crate::{AppState, DbSlots, HttpSettings, KeyCache, SystemClock, app};

/// How many key lookups the cache holds at most.
const KEY_CACHE_CAPACITY: usize = 100_000;

/// Everything `serve` needs, parsed and checked.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on (`host:port`; port 0 picks a free one).
    pub bind: String,
    /// Worker threads; `None` for one per CPU.
    pub workers: Option<usize>,
    /// Create and print a free-plan key when no key exists yet.
    pub bootstrap_key: bool,
    /// How long a key lookup is trusted (revocations take effect within this).
    pub key_cache_ttl: Duration,
    /// Paths and links.
    pub settings: HttpSettings,
    /// The database.
    pub store: StoreConfig,
    /// Rate limiting.
    pub rate_limit: RateLimitConfig,
}

/// Where rate-limit counters live and how clients are treated.
#[derive(Debug, Clone)]
pub struct RateLimitConfig {
    /// `None`: in this process; `Some(url)`: in Redis, shared by every instance.
    pub redis_url: Option<String>,
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
}

impl RateLimitConfig {
    /// Builds the limiter. Must run inside the async runtime (the Redis client lives there).
    pub fn limiter(&self) -> Result<Limiter, Box<dyn Error>> {
        let anonymous = Plan::Free
            .standard_limits()
            .expect("BUG: the free plan has standard limits");
        Ok(match &self.redis_url {
            None => Limiter::in_memory(self.bans, anonymous),
            Some(url) => Limiter::shared(
                Box::new(RedisCounters::new(
                    url,
                    &self.prefix,
                    self.timeout,
                    self.bans.forgive_after_seconds,
                )?),
                self.on_failure,
                self.bans,
                anonymous,
            ),
        })
    }
}

/// Runs the server until SIGINT or SIGTERM, then stops accepting, lets in-flight requests
/// finish (up to 30 s) and returns.
pub async fn serve(config: ServeConfig) -> Result<(), Box<dyn Error>> {
    let store = Store::open(&config.store)?;
    let applied = store.migrate()?;
    log::info!(
        "database ready ({}); {} migration(s) applied",
        store.backend_name(),
        applied.len()
    );
    if config.bootstrap_key {
        bootstrap_key(&store, &config)?;
    }
    let limiter = config.rate_limit.limiter()?;
    log::info!(
        "rate limits counted {}",
        match &config.rate_limit.redis_url {
            Some(_) => "in Redis (shared by every instance)",
            None => "in this process",
        }
    );
    // `db` never has more calls running than the pool has connections (`DbSlots`), so a worker
    // needs no more blocking threads than that. Without the cap the blocking pool (512 threads
    // by default) started a new thread whenever a call arrived just before a previous one had
    // handed its thread back: 31 threads under 32 connections on a pool of 8.
    let blocking_threads = store.max_connections() as usize;
    let state = web::Data::new(AppState {
        db_slots: DbSlots::for_store(&store),
        store,
        clock: Arc::new(SystemClock),
        keys: KeyCache::new(config.key_cache_ttl, KEY_CACHE_CAPACITY),
        settings: config.settings,
        limiter,
        trusted_proxies: config.rate_limit.trusted_proxies,
    });
    let mut server = HttpServer::new(move || app(state.clone()))
        .shutdown_timeout(30)
        .worker_max_blocking_threads(blocking_threads)
        .bind(&config.bind)?;
    if let Some(workers) = config.workers {
        server = server.workers(workers);
    }
    for addr in server.addrs() {
        // On stdout, so scripts and tests started with port 0 learn the port.
        println!("listening on http://{addr}");
        log::info!("listening on http://{addr}");
    }
    std::io::stdout().flush()?;
    server.run().await?;
    log::info!("stopped");
    Ok(())
}

/// A newcomer's first key: created only while the key store is empty, printed once.
fn bootstrap_key(store: &Store, config: &ServeConfig) -> Result<(), Box<dyn Error>> {
    if !store.list_keys()?.is_empty() {
        return Ok(());
    }
    let spec = KeySpec::new(Plan::Free, "bootstrap", None)?;
    let (key, secret) = store.create_key(&spec)?;
    let base = match config.settings.public_base_url() {
        Some(url) => url.to_owned(),
        None => format!("http://{}{}", config.bind, config.settings.base_path()),
    };
    println!(
        "No API key existed, so a free-plan key (id {}) was created. It is shown only this once:\n\n    {}\n\nTry:  curl -H 'Authorization: Bearer {}' {base}/pets\n(Manage keys with `petstore keys`; turn this off with --bootstrap-key=false.)\n",
        key.id,
        secret.expose(),
        secret.expose(),
    );
    Ok(())
}
