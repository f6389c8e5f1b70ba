//! The `petstore` command line, defined with clap (the only module that uses it). Every flag
//! can also be set by the environment variable shown in `--help`. `serve`'s options
//! ([`ServeArgs`]) are in `serve_args` (its traces' with the trace set-up, `crate::traces`).

mod serve_args;
mod values;

use std::time::{Duration, SystemTime};

use clap::{Args, Parser, Subcommand, ValueEnum};
use petstore_domain::{Plan, Scope};
use petstore_store::StoreConfig;

use crate::logging::LogFormat;
use petstore_http::config::{HttpSettings, NamedServers};
use petstore_webhooks::MIN_SHARE;

pub use serve_args::ServeArgs;

/// The Animal Store Service.
#[derive(Debug, Parser)]
#[command(name = "petstore", version)]
pub struct Cli {
    /// Where the data lives.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Log lines: `text` (for people) or `json` (one object a line, for collectors). What is
    /// logged is chosen with `RUST_LOG` (default `info`).
    #[arg(
        long,
        env = "PETSTORE_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,
    /// What to do; `serve` (with its settings from the environment) when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `serve`'s settings when no subcommand is given: environment variables and defaults.
#[derive(Debug, Parser)]
pub struct ServeFromEnvironment {
    /// The settings.
    #[command(flatten)]
    pub args: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once at start-up: its size does not matter
pub enum Command {
    /// Serve the API (the default).
    Serve(ServeArgs),
    /// Apply pending database migrations and exit (creating a SQLite file that does not exist
    /// yet); `migrate status` lists them instead.
    Migrate(MigrateArgs),
    /// Print the OpenAPI document (JSON) on stdout, for code generators and CI.
    Openapi(OpenapiArgs),
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage admin tokens, what operators' tooling authenticates with on the admin listener
    /// (`--admin-bind`). They are not API keys and work nowhere else.
    #[command(subcommand)]
    AdminTokens(AdminTokensCommand),
    /// Operate the store: list every order, approve and deliver them.
    #[command(subcommand)]
    Orders(OrdersCommand),
    /// Ask a running server whether it is up (`/healthz`) or ready (`/readyz`, with
    /// `--ready`): exits 0 when it answers 200, 1 otherwise. For container and systemd health
    /// checks on hosts without curl.
    Health(HealthArgs),
}

/// Options of `health`.
#[derive(Debug, Clone, Args)]
pub struct HealthArgs {
    /// Ask `/readyz` (database reachable and migrated, not draining) instead of `/healthz`.
    #[arg(long)]
    pub ready: bool,
    /// The server's address, e.g. `http://127.0.0.1:8080` (plain HTTP); by default the one
    /// `PETSTORE_BIND` names, a wildcard address asked on loopback.
    #[arg(long)]
    pub url: Option<String>,
    /// The server's listen address, as `serve` reads it: where to ask without `--url`.
    #[arg(
        long,
        env = "PETSTORE_BIND",
        default_value = "127.0.0.1:8080",
        hide = true
    )]
    pub bind: String,
    /// Longest wait for the answer.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

impl HealthArgs {
    /// The address to ask: `--url`'s path, or `/healthz` or `/readyz` on the bind address.
    pub fn target(&self) -> String {
        let path = if self.ready { "/readyz" } else { "/healthz" };
        let base = match &self.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let bind = match self.bind.rsplit_once(':') {
                    Some(("0.0.0.0", port)) => format!("127.0.0.1:{port}"),
                    Some(("[::]", port)) => format!("[::1]:{port}"),
                    _ => self.bind.clone(),
                };
                format!("http://{bind}")
            }
        };
        format!("{base}{path}")
    }
}

/// `petstore migrate [status]`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// `status`: list the applied and pending migrations, changing nothing.
    #[command(subcommand)]
    pub action: Option<MigrateCommand>,
}

/// What `petstore migrate` does besides applying.
#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// List the migrations the database has applied and those it has not; exits 1 when some
    /// are pending.
    Status,
}

/// `petstore orders ...`: the operator's side of the order lifecycle (placed -> approved ->
/// delivered; customers place and cancel through the API).
#[derive(Debug, Subcommand)]
pub enum OrdersCommand {
    /// List every order (all keys'), in id order.
    List {
        /// Only orders with this status: placed, approved, delivered or cancelled.
        #[arg(long)]
        status: Option<petstore_domain::OrderStatus>,
        /// Only orders placed with this API key (its id).
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
        key: Option<i64>,
        /// `text` (a table) or `json` (an array of objects, for scripts: the admin API's).
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Approve a placed order (its pet stays pending).
    Approve {
        /// The order's id.
        id: i64,
    },
    /// Deliver an approved order: its pet is sold.
    Deliver {
        /// The order's id.
        id: i64,
    },
    /// Cancel a placed order on the customer's behalf: its pet is available again.
    Cancel {
        /// The order's id.
        id: i64,
    },
}

/// `petstore keys ...`. A key's own attributes (plan, limits, label, scope, expiry, grace) are
/// flags only, never environment variables: a variable exported for one command would
/// otherwise silently rewrite keys in the next (`update` shares `create`'s flags).
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issue a key; prints only the key on stdout.
    Create {
        /// free, pro, business or enterprise.
        #[arg(long)]
        plan: Plan,
        /// A description, e.g. the customer's name.
        #[arg(long, default_value = "")]
        label: String,
        /// Requests per minute (enterprise only, with --per-day).
        #[arg(long, requires = "per_day")]
        per_minute: Option<u32>,
        /// Requests per day (enterprise only, with --per-minute).
        #[arg(long, requires = "per_minute")]
        per_day: Option<u32>,
        /// read-write (the default) or read-only: a read-only key gets 403
        /// `insufficient_scope` on writes (POST).
        #[arg(long, default_value = "read-write")]
        scope: Scope,
        /// The key stops working this long from now (e.g. `90d`, `12h`); an expired key is
        /// refused like an unknown one.
        #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "expires_at")]
        expires_in: Option<Duration>,
        /// The key stops working at this time (RFC 3339, e.g. `2027-03-01T00:00:00Z`).
        #[arg(long, value_parser = humantime::parse_rfc3339_weak)]
        expires_at: Option<SystemTime>,
        /// `text` (only the key on stdout) or `json` (`{id, key, ...}`: the key with every
        /// attribute `keys show` gives).
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Show one key (never its secret): what `keys list` shows of it.
    Show {
        /// The key's id.
        id: i64,
        /// `text` or `json`.
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Tell which key a secret is: reads the secret from standard input (never an argument,
    /// which other users of the machine can see) and prints the key's id, plan and state. Exits
    /// 0 when the secret works now, 3 when no active key has it (unknown, revoked, or not a key
    /// at all), 4 when it is a key's but does not work now (expired, or rotated out and past
    /// its grace).
    Verify {
        /// `text` or `json`.
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// List every key (never the secrets): plan, limits, scope, state (active, expired or
    /// revoked), expiry, last use (recorded at most once a minute per instance), ban, and the
    /// end of a rotation's grace period.
    List {
        /// `text` (a table) or `json` (an array of objects, for scripts).
        #[arg(long, default_value = "text")]
        format: Format,
        /// Every column in the table (times of creation, last use, ban and grace), however
        /// wide; without, the table fits 100 columns.
        #[arg(long)]
        wide: bool,
    },
    /// Revoke a key by id.
    Revoke {
        /// The key's id, as `keys list` shows it.
        id: i64,
    },
    /// Give a key a new secret, printed once on stdout. The key keeps its id, plan, limits,
    /// label, scope, expiry, usage counters and any ban; the old secret keeps working until
    /// the grace period ends (on every instance within the key-cache TTL), then is refused.
    /// Rotating again ends the previous grace period at once.
    Rotate {
        /// The key's id.
        id: i64,
        /// How long the old secret keeps working (`0s`: not at all, e.g. after a leak).
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        grace: Duration,
        /// `text` (only the new secret on stdout) or `json` (`{id, key, ...}`).
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Change a key's plan (and, for enterprise, its limits), its scope, its label, or several.
    #[command(group = clap::ArgGroup::new("change").required(true).multiple(true).args(["plan", "scope", "label"]))]
    Update {
        /// The key's id.
        id: i64,
        /// free, pro, business or enterprise.
        #[arg(long)]
        plan: Option<Plan>,
        /// Requests per minute (enterprise only, with --per-day).
        #[arg(long, requires_all = ["per_day", "plan"])]
        per_minute: Option<u32>,
        /// Requests per day (enterprise only, with --per-minute).
        #[arg(long, requires_all = ["per_minute", "plan"])]
        per_day: Option<u32>,
        /// read-write or read-only.
        #[arg(long)]
        scope: Option<Scope>,
        /// A new description.
        #[arg(long)]
        label: Option<String>,
    },
    /// Lift a key's temporary ban.
    Unban {
        /// The key's id.
        id: i64,
    },
}

/// `petstore admin-tokens ...`.
#[derive(Debug, Subcommand)]
pub enum AdminTokensCommand {
    /// Issue a token; prints only the token on stdout (shown this once; only its hash is
    /// stored).
    Create {
        /// Who or what holds it (named in every audit line of its changes), e.g.
        /// `billing-sync`.
        #[arg(long)]
        label: String,
        /// `text` (only the token on stdout) or `json` (`{id, token, label, ...}`).
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// List every token (never the secrets): id, prefix, label, created, revoked.
    List {
        /// `text` (a table) or `json` (an array of objects, for scripts).
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Revoke a token by id: it stops working at once, on every instance.
    Revoke {
        /// The token's id, as `admin-tokens list` shows it.
        id: i64,
    },
}

/// How a command prints what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text (a table for listings), for people.
    Text,
    /// JSON (an object, or an array for listings), for scripts.
    Json,
}

/// Where the API is, as `serve` and `openapi` take it: what links, `Location` and the
/// document's `servers` name.
#[derive(Debug, Clone, Args)]
pub struct AddressArgs {
    /// Public base address used in `Link` and `Location` and as the document's server (e.g.
    /// `https://api.example.com/v1`); derived from each request's `Host` when unset (`openapi`:
    /// the base path alone).
    #[arg(long, env = "PETSTORE_PUBLIC_BASE_URL")]
    pub public_base_url: Option<String>,
    /// Path prefix of the API.
    #[arg(long, env = "PETSTORE_BASE_PATH", default_value = "/v1")]
    pub base_path: String,
    /// The servers the OpenAPI document lists, as `NAME=URL` pairs separated by commas (e.g.
    /// `Production=https://api.example.com/v1,Staging=https://staging.example.com/v1`); the
    /// document served lists this instance's own base address alone when unset.
    #[arg(long, env = "PETSTORE_OPENAPI_SERVERS", default_value = "", value_parser = values::openapi_servers)]
    pub openapi_servers: NamedServers,
}

impl AddressArgs {
    /// The application's paths and links.
    pub fn settings(self) -> HttpSettings {
        HttpSettings::new(&self.base_path, self.public_base_url).with_servers(self.openapi_servers)
    }
}

/// Options of `openapi`.
#[derive(Debug, Clone, Args)]
pub struct OpenapiArgs {
    /// Where the API is.
    #[command(flatten)]
    pub addresses: AddressArgs,
    /// Print the admin API's document (`/admin/v1/openapi.json`) instead.
    #[arg(long)]
    pub admin: bool,
}

impl OpenapiArgs {
    /// The `servers` URL these options give.
    pub fn server(&self) -> String {
        let http = self.addresses.clone().settings();
        match http.public_base_url() {
            Some(url) => url.to_owned(),
            None => http.base_path().to_owned(),
        }
    }
}

/// Database options, shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// The database: `postgres://` (or `postgresql://`) for PostgreSQL, `mysql://` (or
    /// `mariadb://`) for MariaDB or MySQL, `sqlite://PATH` or a plain file path for SQLite (the
    /// file and its tables are created when missing; its folder must exist).
    #[arg(
        long,
        env = "PETSTORE_DATABASE_URL",
        default_value = "petstore.db",
        global = true
    )]
    pub database_url: String,
    /// Most database connections open at once (PostgreSQL: shared out among the HTTP workers,
    /// each with a pool of its own).
    #[arg(
        long,
        env = "PETSTORE_DB_POOL_SIZE",
        default_value_t = 8,
        global = true
    )]
    pub db_pool_size: u32,
    /// Longest wait for a database connection before answering 503 (e.g. `5s`, `500ms`).
    #[arg(long, env = "PETSTORE_DB_CONNECT_TIMEOUT", default_value = "5s", value_parser = positive_duration, global = true)]
    pub db_connect_timeout: Duration,
    /// Longest a statement may run (PostgreSQL) or wait for a lock (SQLite).
    #[arg(long, env = "PETSTORE_DB_STATEMENT_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration, global = true)]
    pub db_statement_timeout: Duration,
}

impl DatabaseArgs {
    /// The store settings, for one worker (`serve` sets its own count); `keep_warm` for a
    /// server (see [`StoreConfig::keep_warm`]).
    pub fn store_config(&self, keep_warm: bool) -> StoreConfig {
        StoreConfig {
            url: self.database_url.clone(),
            pool_size: self.db_pool_size,
            workers: 1,
            connect_timeout: self.db_connect_timeout,
            statement_timeout: self.db_statement_timeout,
            keep_warm,
            read_urls: Vec::new(),
            read_max_lag: petstore_store::DEFAULT_READ_MAX_LAG,
        }
    }
}

/// A duration above zero (`5s`, `100ms`): for a wait that zero would make fail every time.
fn positive_duration(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(duration) if duration.is_zero() => Err("must be more than 0".to_owned()),
        Ok(duration) => Ok(duration),
        Err(error) => Err(error.to_string()),
    }
}

/// A share of the webhook sender's time: a number from its least ([`MIN_SHARE`]) to 1.
fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (MIN_SHARE..=1.0).contains(&share) => Ok(share),
        Ok(_) => Err(format!(
            "must be from {MIN_SHARE} to 1 (a share of the time)"
        )),
        Err(_) => Err(format!(
            "must be a number from {MIN_SHARE} to 1, such as 0.25"
        )),
    }
}

#[cfg(test)]
mod tests {
    use petstore_http::ratelimit::FailurePolicy;

    use super::*;
    use crate::serve::ServeConfig;

    #[test]
    fn the_command_line_defaults_are_the_config_defaults() {
        let cli = Cli::try_parse_from(["petstore", "serve"]).expect("parses");
        let Some(Command::Serve(args)) = cli.command else {
            panic!("serve");
        };
        // Debug output, since the configs hold types without `PartialEq` (the proxies' list).
        assert_eq!(
            format!("{:?}", args.into_config()),
            format!("{:?}", ServeConfig::new())
        );
        assert_eq!(
            format!("{:?}", cli.database.store_config(true)),
            format!("{:?}", StoreConfig::new("petstore.db"))
        );
    }

    #[test]
    fn the_senders_share_takes_its_bounds() {
        for (share, taken) in [("0.01", 0.01), ("1", 1.0), ("0.5", 0.5)] {
            let cli = Cli::try_parse_from(["petstore", "serve", "--webhook-sender-share", share])
                .expect("parses");
            let Some(Command::Serve(args)) = cli.command else {
                panic!("serve");
            };
            assert_eq!(args.webhook_sender_share, taken, "{share}");
        }
    }

    #[test]
    fn a_failure_policy_is_open_or_closed() {
        let cli = Cli::try_parse_from(["petstore", "serve", "--rate-limit-on-failure", "closed"])
            .expect("parses");
        let Some(Command::Serve(args)) = cli.command else {
            panic!("serve");
        };
        assert_eq!(args.rate_limit_on_failure, FailurePolicy::Closed);
        assert!(
            Cli::try_parse_from(["petstore", "serve", "--rate-limit-on-failure", "ajar"]).is_err()
        );
    }
}
