//! `petstore serve`: open the storage, migrate, hand out a first key if there is none, serve.

use std::error::Error;
use std::io::IsTerminal;
use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{HttpServer, web};
use petstore_domain::{KeySpec, Plan, Storage};
use petstore_store::{Backend, Store, StoreConfig};

use crate::sending::Sending;
use crate::{counters, open_store};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use petstore_http::app::{admin_app, app, metrics_app};
use petstore_http::config::Config;
use petstore_http::connection::Connection;
use petstore_http::state::AppState;
use petstore_http::telemetry::metric::{self, Exporter};
use petstore_webhooks::resolve::Resolver;
use petstore_webhooks::{Sender, SenderConfig};

/// What `petstore serve` runs with: the application's settings, and the listeners around it.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The application's settings.
    pub app: Config,
    /// Address to listen on (`host:port`; port 0 picks a free one).
    pub bind: String,
    /// Worker threads; `None` for one per CPU.
    pub workers: Option<usize>,
    /// Create and print a free-plan key when no key exists yet.
    pub bootstrap_key: bool,
    /// Apply pending migrations at start-up; without, refuse to start while any is pending.
    pub migrate: bool,
    /// On SIGTERM/SIGINT, how long to keep serving with `/readyz` answering `503` before the
    /// listener closes, so load balancers stop sending first.
    pub shutdown_delay: Duration,
    /// Then, how long in-flight requests may take to finish.
    pub shutdown_timeout: Duration,
    /// Where `GET /metrics` is served.
    pub metrics: MetricsEndpoint,
    /// Address of the admin listener (`/admin/v1`, and `/metrics` unless they have a listener
    /// of their own); `None`: no admin API.
    pub admin_bind: Option<String>,
    /// How this instance sends webhook deliveries; `None`: it sends none (other instances do).
    pub webhooks: Option<SenderConfig>,
    /// How much lower than the API's workers the webhook sender's thread runs (its niceness
    /// over the process's: 0 to 19).
    pub webhook_sender_nice: u8,
}

impl ServeConfig {
    /// The defaults of `petstore serve` (see `--help`).
    pub fn new() -> Self {
        Self {
            app: Config::new(),
            bind: "127.0.0.1:8080".into(),
            workers: None,
            bootstrap_key: true,
            migrate: true,
            shutdown_delay: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(30),
            metrics: MetricsEndpoint::Main,
            admin_bind: None,
            webhooks: Some(SenderConfig::default()),
            webhook_sender_nice: 10,
        }
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the Prometheus metrics are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsEndpoint {
    /// At `/metrics` on the API's listener.
    Main,
    /// At `/metrics` on a listener of their own, at this address (`host:port`): keeps them off
    /// the public network.
    Separate(String),
    /// At `/metrics` on the admin listener (`--admin-bind`), off the public one.
    Admin,
    /// Not recorded, not served.
    Off,
}

/// Runs the server on the storage `store` names until SIGINT or SIGTERM, then stops accepting,
/// lets in-flight requests finish (up to 30 s) and returns.
pub async fn serve(config: ServeConfig, store: StoreConfig) -> Result<(), Box<dyn Error>> {
    raise_open_files_limit();
    // Explicit, so that the storage divides its connections among as many workers as run.
    let workers = config.workers.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let backend = Backend::from_url(&store.url)?;
    log::info!("database: {}", backend.describe());
    for standby in &store.read_urls {
        log::info!(
            "reads that tolerate a standby may go to: {} (further behind than {:?}: skipped)",
            petstore_domain::redacted_url(standby),
            store.read_max_lag
        );
    }
    // The listeners first: an address that cannot be listened on is said before any database
    // is created or migrated.
    if config.admin_bind.as_deref() == Some(config.bind.as_str()) && !config.bind.ends_with(":0") {
        return Err(format!(
            "--admin-bind (PETSTORE_ADMIN_BIND) {} is the API's own address: the admin listener \
             must be another (e.g. a loopback or private address), never the public one",
            config.bind
        )
        .into());
    }
    let listeners = Listeners::open(&config)?;
    if !config.migrate && !backend.exists() {
        return Err(format!(
            "there is no database at {} and --no-migrate is set: create it with `petstore \
             migrate`",
            backend.describe()
        )
        .into());
    }
    let store = open_store(
        &StoreConfig {
            workers: u32::try_from(workers).unwrap_or(u32::MAX),
            ..store
        },
        true,
    )?;
    if config.migrate {
        let applied = store.migrate().await?;
        log::info!(
            "database ready ({}); {} migration(s) applied",
            store.backend_name(),
            applied.len()
        );
    } else {
        let pending = store.pending_migrations().await?;
        if !pending.is_empty() {
            store.close();
            return Err(format!(
                "the database's schema is behind and --no-migrate is set: {} migration(s) \
                 pending ({}); apply them with `petstore migrate` as a role allowed to change \
                 the schema",
                pending.len(),
                pending.join(", ")
            )
            .into());
        }
        log::info!(
            "database ready ({}); its schema is current (--no-migrate)",
            store.backend_name()
        );
    }
    let exporter = match config.metrics {
        MetricsEndpoint::Off => None,
        MetricsEndpoint::Main | MetricsEndpoint::Separate(_) | MetricsEndpoint::Admin => {
            Some(metrics_exporter(&store)?)
        }
    };
    // The one place that names the backend: from here on it is a `dyn Storage`.
    let storage: Arc<dyn Storage> = Arc::new(store.clone());
    if config.bootstrap_key {
        bootstrap_key(storage.as_ref(), &config).await?;
    }
    let limiter = counters::limiter(&config.app.rate_limit)?;
    let receivers = Arc::new(Resolver::for_registration());
    let documents = petstore_openapi::documents();
    let mut state = AppState::new(&config.app, storage.clone(), limiter, receivers, documents);
    if let (Some(exporter), MetricsEndpoint::Main) = (&exporter, &config.metrics) {
        state = state.with_metrics(exporter.clone());
    }
    match &config.app.rate_limit.redis_url {
        Some(url) => counters::check_redis(&state.limiter, url).await?,
        None => log::info!("rate limits counted in this process"),
    }
    // A worker needs no more blocking threads than the storage runs calls on at once. Without
    // the cap the blocking pool (512 threads by default) started a new thread whenever a call
    // arrived just before a previous one had handed its thread back.
    let blocking_threads = storage.capacity().blocking_calls.max(1) as usize;
    let state = web::Data::new(state);
    let shared = state.clone();
    let server = HttpServer::new(move || app(shared.clone()))
        .on_connect(Connection::record)
        .disable_signals()
        // In whole seconds: rounded up, so that requests get at least the time asked for.
        .shutdown_timeout(config.shutdown_timeout.as_secs_f64().ceil() as u64)
        .worker_max_blocking_threads(blocking_threads)
        .workers(workers);
    let server = listeners
        .api
        .into_iter()
        .try_fold(server, HttpServer::listen)?;
    let metrics_server = match (&exporter, listeners.metrics) {
        (Some(exporter), Some(listeners)) => Some(metrics_server(exporter.clone(), listeners)?),
        _ => None,
    };
    let admin_server = match listeners.admin {
        Some(listener) => {
            let metrics = exporter
                .clone()
                .filter(|_| config.metrics == MetricsEndpoint::Admin);
            Some(admin_server(state.clone(), metrics, listener)?)
        }
        None => None,
    };
    // Sending from before the server says it listens, at its own priority.
    let (stop_sending, sending_stopped) = tokio::sync::oneshot::channel::<()>();
    let sender = match config.webhooks {
        Some(settings) => {
            // Its storage calls on this runtime, at the API's priority (SQLite's writes hold
            // the database while they run), and kept to their share while requests are under
            // way.
            let in_flight = state.in_flight.clone();
            let sender = Sender::new(storage.clone(), settings)?
                .with_storage_runtime(tokio::runtime::Handle::current())
                .giving_way_to(Arc::new(move || in_flight.count() > 0));
            let stop = async {
                let _ = sending_stopped.await;
            };
            Some(Sending::start(sender, config.webhook_sender_nice, stop)?)
        }
        None => None,
    };
    // Watched from before the server says it listens: a signal sent as soon as it does is a
    // graceful stop, not the default action (the process killed).
    let stop = stop_signal();
    // On stdout, so scripts and tests started with port 0 learn the port: the docs page's
    // address, then the listener's, last (what a script waits for; it may stop reading then).
    let docs = docs_page(&config, &server.addrs());
    println!("docs on {docs}");
    log::info!("the docs page: {docs}");
    for addr in server.addrs() {
        println!("listening on http://{addr}");
        log::info!("listening on http://{addr}");
    }
    std::io::stdout().flush()?;
    let server = server.run();
    let handle = server.handle();
    let pruning = prune_idempotency_records(state.clone());
    actix_web::rt::spawn(async move {
        stop.await;
        // No new webhook attempt from now on; those under way finish while the server drains
        // (or are left to their leases, and sent again by another instance).
        drop(stop_sending);
        drain(&state, handle, config.shutdown_delay).await;
    });
    server.await?;
    // The sender has stopped claiming since the signal; it records what it had under way (for
    // at most an attempt's timeout, mostly spent during the drain) before the store closes.
    if let Some(sender) = sender {
        sender.stopped().await;
    }
    for side in [metrics_server, admin_server].into_iter().flatten() {
        side.stop(true).await;
    }
    pruning.abort();
    let _ = pruning.await;
    // Every worker has stopped: SQLite's writer commits what it holds and its thread is
    // joined; PostgreSQL's connections close.
    store.close();
    log::info!("stopped");
    Ok(())
}

/// Latency buckets, in seconds: half a millisecond to ten seconds.
const SECONDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Webhook attempt buckets, in seconds: 5 ms to a minute.
const WEBHOOK_SECONDS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0,
];

/// How often recorded histogram samples are folded into their buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Installs the process-wide Prometheus recorder (histograms in seconds get latency buckets,
/// the storage's others its own), describes every crate's metrics, records the build's
/// information and keeps the histograms folded (every few seconds, on this runtime).
fn metrics_exporter(store: &Store) -> Result<Exporter, Box<dyn Error>> {
    let mut builder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS)?;
    // A webhook attempt may take up to its timeout (15 s by default).
    builder = builder.set_buckets_for_metric(
        Matcher::Full(petstore_webhooks::metric::ATTEMPT_SECONDS.into()),
        &WEBHOOK_SECONDS,
    )?;
    for (name, bounds) in petstore_store::metrics::HISTOGRAM_BUCKETS {
        builder = builder.set_buckets_for_metric(Matcher::Full(name.into()), bounds)?;
    }
    let handle = builder.upkeep_timeout(UPKEEP_EVERY).install_recorder()?;
    metric::describe();
    petstore_webhooks::metric::describe();
    petstore_store::metrics::describe();
    crate::traces::metric::describe();
    metrics::gauge!(
        metric::BUILD_INFO,
        "version" => env!("CARGO_PKG_VERSION"),
        "backend" => store.backend_name()
    )
    .set(1.0);
    let pool = store.clone();
    let exporter = Exporter::new(handle, Arc::new(move || pool.record_pool_state()));
    let upkeep = exporter.clone();
    actix_web::rt::spawn(async move {
        loop {
            actix_web::rt::time::sleep(UPKEEP_EVERY).await;
            upkeep.run_upkeep();
        }
    });
    Ok(exporter)
}

/// The listeners, opened before anything else is: the API's, and the admin and metrics
/// listeners when they have addresses of their own. Each on every address its name resolves
/// to, as actix binds one (`localhost`: `::1` and `127.0.0.1`).
struct Listeners {
    api: Vec<TcpListener>,
    admin: Option<Vec<TcpListener>>,
    metrics: Option<Vec<TcpListener>>,
}

impl Listeners {
    fn open(config: &ServeConfig) -> Result<Self, String> {
        Ok(Self {
            api: listen("--bind", "PETSTORE_BIND", &config.bind)?,
            admin: config
                .admin_bind
                .as_deref()
                .map(|addr| listen("--admin-bind", "PETSTORE_ADMIN_BIND", addr))
                .transpose()?,
            metrics: match &config.metrics {
                MetricsEndpoint::Separate(addr) => {
                    Some(listen("--metrics-bind", "PETSTORE_METRICS_BIND", addr)?)
                }
                _ => None,
            },
        })
    }
}

/// The backlog of pending connections, actix's own default.
const BACKLOG: i32 = 1024;

/// Listeners on every address `addr` resolves to, or why not in words naming the setting
/// (`flag`, `variable`) and the address.
fn listen(flag: &str, variable: &str, addr: &str) -> Result<Vec<TcpListener>, String> {
    let refused = |error: std::io::Error| {
        let why = match error.kind() {
            std::io::ErrorKind::AddrInUse => "the address is in use: another process listens \
                there (stop it, or choose another port)"
                .to_owned(),
            std::io::ErrorKind::PermissionDenied => {
                "not allowed to listen there (a port below 1024 needs privileges)".to_owned()
            }
            std::io::ErrorKind::AddrNotAvailable => {
                "not an address of this machine's interfaces".to_owned()
            }
            _ => format!("cannot listen there: {error}"),
        };
        format!("{flag} ({variable}) {addr}: {why}")
    };
    let addrs: Vec<std::net::SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(addr)
        .map_err(refused)?
        .collect();
    addrs
        .into_iter()
        .map(|addr| {
            let socket = socket2::Socket::new(
                socket2::Domain::for_address(addr),
                socket2::Type::STREAM,
                Some(socket2::Protocol::TCP),
            )?;
            socket.set_reuse_address(true)?;
            socket.bind(&addr.into())?;
            socket.listen(BACKLOG)?;
            Ok(TcpListener::from(socket))
        })
        .collect::<Result<Vec<_>, std::io::Error>>()
        .map_err(refused)
}

/// The docs page's address: at the site of the public base URL, or on the first address
/// listened on (loopback's for a wildcard address).
fn docs_page(config: &ServeConfig, addrs: &[std::net::SocketAddr]) -> String {
    if let Some(base) = config.app.http.public_base_url() {
        return config.app.http.docs_page(base);
    }
    let Some(addr) = addrs.first() else {
        return "/docs/".to_owned();
    };
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    format!("http://{host}:{}/docs/", addr.port())
}

/// Serves `/metrics` alone on `listener` (one worker), and says where on stdout.
fn metrics_server(
    exporter: Exporter,
    listeners: Vec<TcpListener>,
) -> Result<ServerHandle, Box<dyn Error>> {
    let server = HttpServer::new(move || metrics_app(exporter.clone()))
        .workers(1)
        .disable_signals();
    let server = listeners.into_iter().try_fold(server, HttpServer::listen)?;
    for addr in server.addrs() {
        println!("metrics on http://{addr}/metrics");
        log::info!("metrics on http://{addr}/metrics");
    }
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok(handle)
}

/// Serves the admin API (and `metrics`, when given) on `addr` (one worker), and says where on
/// stdout.
fn admin_server(
    state: web::Data<AppState>,
    metrics: Option<Exporter>,
    listeners: Vec<TcpListener>,
) -> Result<ServerHandle, Box<dyn Error>> {
    let server = HttpServer::new(move || admin_app(state.clone(), metrics.clone()))
        .on_connect(Connection::record)
        .workers(1)
        .disable_signals();
    let server = listeners.into_iter().try_fold(server, HttpServer::listen)?;
    for addr in server.addrs() {
        println!("admin on http://{addr}{}", petstore_http::admin::ADMIN_BASE);
        log::info!(
            "admin API on http://{addr}{}",
            petstore_http::admin::ADMIN_BASE
        );
    }
    let server = server.run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    Ok(handle)
}

/// How often expired `Idempotency-Key` records are deleted (by every instance: the delete is
/// cheap when there is nothing to delete).
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// Deletes expired `Idempotency-Key` records now and every [`PRUNE_EVERY`], in the background:
/// no request pays for it.
fn prune_idempotency_records(state: web::Data<AppState>) -> actix_web::rt::task::JoinHandle<()> {
    actix_web::rt::spawn(async move {
        loop {
            let before = state
                .clock
                .unix_seconds()
                .saturating_sub(state.idempotency.retention.as_secs());
            match state
                .db
                .call("prune_idempotency_keys", |storage| {
                    storage.prune_idempotency_keys(before)
                })
                .await
            {
                Ok(0) => {}
                Ok(pruned) => log::info!("pruned {pruned} expired idempotency record(s)"),
                Err(error) => log::warn!(
                    "could not prune idempotency records: {}",
                    petstore_http::error::Chain(&error)
                ),
            }
            actix_web::rt::time::sleep(PRUNE_EVERY).await;
        }
    })
}

/// Resolves on SIGTERM or SIGINT, both watched from this call on (not from the first poll).
fn stop_signal() -> impl Future<Output = ()> {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, name: &str| {
        signal(kind)
            .inspect_err(|error| log::warn!("cannot watch for {name} ({error})"))
            .ok()
    };
    let terminate = watch(SignalKind::terminate(), "SIGTERM");
    let interrupt = watch(SignalKind::interrupt(), "SIGINT");
    async move {
        tokio::select! {
            () = received(terminate) => {}
            () = received(interrupt) => {}
        }
    }
}

/// Once `signal` arrives; never, for a signal that could not be watched.
async fn received(signal: Option<actix_web::rt::signal::unix::Signal>) {
    match signal {
        Some(mut signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// The draining shutdown: `/readyz` answers `503` at once while everything else is still
/// served for `delay` (load balancers take a few probes to notice), then the listener closes and
/// in-flight requests finish (up to the shutdown timeout). Creates queued to SQLite's writer
/// are among them: each is answered once committed.
async fn drain(state: &web::Data<AppState>, server: ServerHandle, delay: Duration) {
    state.draining.store(true, Ordering::Relaxed);
    log::info!(
        "stopping: /readyz answers 503; still serving for {}",
        humantime::format_duration(delay)
    );
    actix_web::rt::time::sleep(delay).await;
    log::info!("stopping: no longer accepting; finishing in-flight requests");
    server.stop(true).await;
}

/// Every connection holds a file descriptor, and the usual soft limit (1,024) is far below what
/// the hard limit allows: raise it, and say what it is.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => log::info!("open files limit: {limit}"),
        Err(error) => log::warn!("could not raise the open files limit: {error}"),
    }
}

/// A newcomer's first key: created only while the key store is empty, and only when standard
/// output is a terminal, where it is printed once with a ready curl line. Anywhere else
/// (a container, a service manager) output is kept in logs, which must never hold a key: no key
/// is created, and the log says how to make one.
async fn bootstrap_key(storage: &dyn Storage, config: &ServeConfig) -> Result<(), Box<dyn Error>> {
    if petstore_domain::key_admin::any(storage).await? {
        return Ok(());
    }
    if !std::io::stdout().is_terminal() {
        log::warn!(
            "no API key exists, and none was created: a new key is shown only on a terminal, and \
             standard output is not one here. Create one with `petstore keys create --plan free` \
             (or set PETSTORE_BOOTSTRAP_KEY=false to silence this)"
        );
        return Ok(());
    }
    let spec = KeySpec::new(Plan::Free, "bootstrap", None)?;
    let (key, secret) = storage.create_key(&spec).await?;
    let base = match config.app.http.public_base_url() {
        Some(url) => url.to_owned(),
        None => format!("http://{}{}", config.bind, config.app.http.base_path()),
    };
    log::info!(
        "no API key existed: created free-plan key {} ({}), shown on the terminal once",
        key.id,
        key.display_prefix
    );
    println!(
        "No API key existed, so a free-plan key (id {}) was created. It is shown only this once:\n\n    {}\n\nTry:  curl -H 'Authorization: Bearer {}' {base}/pets\n(Manage keys with `petstore keys`; turn this off with --bootstrap-key=false.)\n",
        key.id,
        secret.expose(),
        secret.expose(),
    );
    Ok(())
}
