//! The `petstore` command line. Every flag can also be set by the environment variable shown
//! in `--help`.

use std::error::Error;
use std::io::Write;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};
use petstore_domain::{ApiKeyRepository, BanPolicy, KeySpec, Plan, RateLimits};
use petstore_store::{Store, StoreConfig};

use crate::ratelimit::{FailurePolicy, TrustedProxies};
use crate::{HttpSettings, RateLimitConfig, ServeConfig};

/// The Animal Store Service.
#[derive(Debug, Parser)]
#[command(name = "petstore", version)]
pub struct Cli {
    /// Where the data lives.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// What to do; `serve` (with its settings from the environment) when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `serve`'s settings when no subcommand is given: environment variables and defaults.
#[derive(Debug, Parser)]
struct ServeFromEnvironment {
    #[command(flatten)]
    args: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API (the default).
    Serve(ServeArgs),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
}

/// `petstore keys ...`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issue a key; prints only the key on stdout.
    Create {
        /// free, pro, business or enterprise.
        #[arg(long, env = "PETSTORE_KEY_PLAN")]
        plan: Plan,
        /// A description, e.g. the customer's name.
        #[arg(long, env = "PETSTORE_KEY_LABEL", default_value = "")]
        label: String,
        /// Requests per minute (enterprise only, with --per-day).
        #[arg(long, env = "PETSTORE_KEY_PER_MINUTE", requires = "per_day")]
        per_minute: Option<u32>,
        /// Requests per day (enterprise only, with --per-minute).
        #[arg(long, env = "PETSTORE_KEY_PER_DAY", requires = "per_minute")]
        per_day: Option<u32>,
    },
    /// List every key (never the secrets).
    List,
    /// Revoke a key by id.
    Revoke {
        /// The key's id, as `keys list` shows it.
        id: i64,
    },
    /// Change a key's plan (and, for enterprise, its limits).
    Update {
        /// The key's id.
        id: i64,
        /// free, pro, business or enterprise.
        #[arg(long, env = "PETSTORE_KEY_PLAN")]
        plan: Plan,
        /// Requests per minute (enterprise only, with --per-day).
        #[arg(long, env = "PETSTORE_KEY_PER_MINUTE", requires = "per_day")]
        per_minute: Option<u32>,
        /// Requests per day (enterprise only, with --per-minute).
        #[arg(long, env = "PETSTORE_KEY_PER_DAY", requires = "per_minute")]
        per_day: Option<u32>,
    },
    /// Lift a key's temporary ban.
    Unban {
        /// The key's id.
        id: i64,
    },
}

/// Database options, shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// `postgres://...`, `sqlite://PATH` or a SQLite file path.
    #[arg(
        long,
        env = "PETSTORE_DATABASE_URL",
        default_value = "petstore.db",
        global = true
    )]
    pub database_url: String,
    /// Most database connections open at once.
    #[arg(
        long,
        env = "PETSTORE_DB_POOL_SIZE",
        default_value_t = 8,
        global = true
    )]
    pub db_pool_size: u32,
    /// Longest wait for a database connection before answering 503 (e.g. `5s`, `500ms`).
    #[arg(long, env = "PETSTORE_DB_CONNECT_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration, global = true)]
    pub db_connect_timeout: Duration,
    /// Longest a statement may run (PostgreSQL) or wait for a lock (SQLite).
    #[arg(long, env = "PETSTORE_DB_STATEMENT_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration, global = true)]
    pub db_statement_timeout: Duration,
}

impl DatabaseArgs {
    fn store_config(&self, keep_warm: bool) -> StoreConfig {
        StoreConfig {
            url: self.database_url.clone(),
            pool_size: self.db_pool_size,
            connect_timeout: self.db_connect_timeout,
            statement_timeout: self.db_statement_timeout,
            keep_warm,
        }
    }
}

/// Options of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PETSTORE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Public base address used in `Link` and `Location` (e.g. `https://api.example.com/v1`);
    /// derived from each request's `Host` when unset.
    #[arg(long, env = "PETSTORE_PUBLIC_BASE_URL")]
    pub public_base_url: Option<String>,
    /// Path prefix of the API.
    #[arg(long, env = "PETSTORE_BASE_PATH", default_value = "/v1")]
    pub base_path: String,
    /// Worker threads (default: one per CPU).
    #[arg(long, env = "PETSTORE_WORKERS")]
    pub workers: Option<usize>,
    /// Create and print a free-plan key at start-up when no key exists.
    #[arg(long, env = "PETSTORE_BOOTSTRAP_KEY", default_value_t = true, action = ArgAction::Set)]
    pub bootstrap_key: bool,
    /// How long a key lookup is cached; a revoked key stops working within this time.
    #[arg(long, env = "PETSTORE_KEY_CACHE_TTL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub key_cache_ttl: Duration,
    /// Where rate-limit counters live: `memory` (this process) or `redis://host:port[/db]`
    /// (shared by every instance).
    #[arg(long, env = "PETSTORE_RATE_LIMIT_STORE", default_value = "memory")]
    pub rate_limit_store: String,
    /// Prefix of the Redis keys.
    #[arg(long, env = "PETSTORE_RATE_LIMIT_PREFIX", default_value = "petstore")]
    pub rate_limit_prefix: String,
    /// While Redis is unreachable: `open` serves with per-instance counters, `closed` answers 503.
    #[arg(
        long,
        env = "PETSTORE_RATE_LIMIT_ON_FAILURE",
        value_enum,
        default_value = "open"
    )]
    pub rate_limit_on_failure: FailurePolicy,
    /// Longest wait for Redis on one request.
    #[arg(long, env = "PETSTORE_RATE_LIMIT_TIMEOUT", default_value = "100ms", value_parser = humantime::parse_duration)]
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
    /// Proxies (addresses or CIDR blocks, comma-separated) whose `Forwarded`/`X-Forwarded-For`
    /// name the client address; by default the TCP peer is the client.
    #[arg(long, env = "PETSTORE_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: TrustedProxies,
}

impl ServeArgs {
    fn config(self, database: &DatabaseArgs) -> ServeConfig {
        ServeConfig {
            bind: self.bind,
            workers: self.workers,
            bootstrap_key: self.bootstrap_key,
            key_cache_ttl: self.key_cache_ttl,
            settings: HttpSettings::new(&self.base_path, self.public_base_url),
            store: database.store_config(true),
            rate_limit: RateLimitConfig {
                redis_url: (self.rate_limit_store != "memory").then_some(self.rate_limit_store),
                prefix: self.rate_limit_prefix,
                on_failure: self.rate_limit_on_failure,
                timeout: self.rate_limit_timeout,
                bans: BanPolicy {
                    threshold: self.ban_threshold,
                    base_seconds: self.ban_duration.as_secs().max(1),
                    max_seconds: self.ban_max_duration.as_secs().max(1),
                    ..BanPolicy::default()
                },
                trusted_proxies: self.trusted_proxies,
            },
        }
    }
}

/// Parses the command line and runs it.
pub fn run() -> Result<(), Box<dyn Error>> {
    let cli = Cli::parse();
    match cli.command {
        None => {
            let serve = ServeFromEnvironment::try_parse_from(["petstore"])?;
            serve_blocking(serve.args.config(&cli.database))
        }
        Some(Command::Serve(args)) => serve_blocking(args.config(&cli.database)),
        Some(Command::Migrate) => {
            let store = Store::open(&cli.database.store_config(false))?;
            let applied = store.migrate()?;
            eprintln!("{} migration(s) applied", applied.len());
            Ok(())
        }
        Some(Command::Keys(command)) => keys(&cli.database, command),
    }
}

fn serve_blocking(config: ServeConfig) -> Result<(), Box<dyn Error>> {
    actix_web::rt::System::new().block_on(crate::serve(config))
}

fn keys(database: &DatabaseArgs, command: KeysCommand) -> Result<(), Box<dyn Error>> {
    let store = Store::open(&database.store_config(false))?;
    store.migrate()?;
    let mut out = std::io::stdout().lock();
    match command {
        KeysCommand::Create {
            plan,
            label,
            per_minute,
            per_day,
        } => {
            let custom = match (per_minute, per_day) {
                (Some(per_minute), Some(per_day)) => Some(RateLimits::custom(per_minute, per_day)?),
                _ => None,
            };
            let (key, secret) = store.create_key(&KeySpec::new(plan, label, custom)?)?;
            writeln!(out, "{}", secret.expose())?;
            eprintln!("created key {} ({} plan)", key.id, key.plan);
        }
        KeysCommand::List => {
            writeln!(
                out,
                "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<20}  {:<20}  {:<20}  LABEL",
                "ID", "PREFIX", "PLAN", "PER_MIN", "PER_DAY", "CREATED", "REVOKED", "BANNED_UNTIL"
            )?;
            let now = crate::clock::Clock::unix_seconds(&crate::SystemClock);
            for key in store.list_keys()? {
                let limits = key.limits();
                writeln!(
                    out,
                    "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<20}  {:<20}  {:<20}  {}",
                    key.id,
                    key.display_prefix,
                    key.plan,
                    limits.per_minute,
                    limits.per_day,
                    timestamp(Some(key.created_at)),
                    timestamp(key.revoked_at),
                    timestamp(
                        key.ban_at(now)
                            .and_then(|ban| i64::try_from(ban.until).ok())
                    ),
                    key.label
                )?;
            }
        }
        KeysCommand::Revoke { id } => {
            if !store.revoke_key(id)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("revoked key {id}");
        }
        KeysCommand::Update {
            id,
            plan,
            per_minute,
            per_day,
        } => {
            let custom = custom_limits(per_minute, per_day)?;
            KeySpec::new(plan, "", custom)?;
            if !store.update_key_plan(id, plan, custom)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("key {id} is now on the {plan} plan");
        }
        KeysCommand::Unban { id } => {
            if !store.unban_key(id)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("lifted any ban of key {id}");
        }
    }
    Ok(())
}

fn custom_limits(
    per_minute: Option<u32>,
    per_day: Option<u32>,
) -> Result<Option<RateLimits>, Box<dyn Error>> {
    Ok(match (per_minute, per_day) {
        (Some(per_minute), Some(per_day)) => Some(RateLimits::custom(per_minute, per_day)?),
        _ => None,
    })
}

fn timestamp(unix: Option<i64>) -> String {
    unix.and_then(|secs| u64::try_from(secs).ok())
        .map(|secs| {
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(secs))
                .to_string()
        })
        .unwrap_or_else(|| "-".into())
}
