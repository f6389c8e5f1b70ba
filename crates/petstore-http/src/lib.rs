//! The HTTP face of the Animal Store Service: the actix-web application ([`app`]), its
//! middleware (authentication, error bodies, deprecation headers), the `petstore` command line
//! ([`cli`]) and the server start-up ([`serve`]).
//!
//! Handlers stay thin: parse with the domain, call the store through [`db`], map the result.
//! All errors become the interface's Error object in one place, [`error`]. Start reading at
//! [`app`], which production and every test build alike.

pub mod auth;
pub mod cli;
pub mod clock;
pub mod encode;
pub mod error;
pub mod extract;
mod middleware;
pub mod ratelimit;
mod routes;
mod server;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderValue;
use actix_web::middleware::{Condition, Logger, from_fn};
use actix_web::{App, HttpRequest, web};
use petstore_store::{Store, StoreError};

pub use auth::{ApiClient, KeyCache};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{ApiError, ErrorCode};
pub use server::{RateLimitConfig, ServeConfig, serve};

/// The `log` target of the access log (one line per request, at `info`).
pub const ACCESS_LOG: &str = "actix_web::middleware::logger";

/// Settings of the HTTP layer itself.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    base_path: String,
    public_base_url: Option<String>,
    /// The deprecated endpoint's `Link` to its successor.
    successor_link: SuccessorLink,
}

/// How [`HttpSettings::successor_link`] gets its value.
#[derive(Debug, Clone)]
enum SuccessorLink {
    /// Built once from the configured public base URL.
    Fixed(HeaderValue),
    /// Built from each request's scheme and `Host`, keeping the last one built: behind one
    /// public name every request carries the same `Host`, so it is built once, not per request.
    /// Shared by clones of the settings.
    PerHost(Arc<Mutex<Option<HostLink>>>),
}

/// A successor `Link` and what it was built from.
#[derive(Debug)]
struct HostLink {
    secure: bool,
    /// A copy of the request's `Host` value, not a slice of that request's read buffer.
    host: HeaderValue,
    link: HeaderValue,
}

impl HttpSettings {
    /// Normalises `base_path` to `/segment...` without a trailing slash (`""` for the root).
    pub fn new(base_path: &str, public_base_url: Option<String>) -> Self {
        let trimmed = base_path.trim_matches('/');
        let public_base_url = public_base_url.map(|url| url.trim_end_matches('/').to_owned());
        Self {
            base_path: if trimmed.is_empty() {
                String::new()
            } else {
                format!("/{trimmed}")
            },
            successor_link: match public_base_url
                .as_deref()
                .and_then(|base| HeaderValue::from_str(&successor_link(base)).ok())
            {
                Some(link) => SuccessorLink::Fixed(link),
                None => SuccessorLink::PerHost(Arc::default()),
            },
            public_base_url,
        }
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

    /// The `Link` from the deprecated `GET /pets/{petId}` to its successor, `GET /pets`: built
    /// once when the public base URL is configured, else from `req` (see [`Self::public_base`]),
    /// and then again only when the scheme or `Host` differs from the last request's.
    pub fn successor_link(&self, req: &HttpRequest) -> Option<HeaderValue> {
        let last = match &self.successor_link {
            SuccessorLink::Fixed(link) => return Some(link.clone()),
            SuccessorLink::PerHost(last) => last,
        };
        let secure = req.app_config().secure();
        let host = req.headers().get(actix_web::http::header::HOST);
        let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(built), Some(host)) = (last.as_ref(), host)
            && built.secure == secure
            && built.host == host
        {
            return Some(built.link.clone());
        }
        // Anything but the scheme and `Host` that the link depends on is fixed for the server.
        let link = HeaderValue::from_str(&successor_link(&self.public_base(req))).ok()?;
        if let Some(host) = host.and_then(|h| HeaderValue::from_bytes(h.as_bytes()).ok()) {
            *last = Some(HostLink {
                secure,
                host,
                link: link.clone(),
            });
        }
        Some(link)
    }

    /// The base address clients should use, for links in responses to `req`. Without a
    /// configured public base URL it is built from the request's own `Host` header and the
    /// listener's scheme; `X-Forwarded-*`/`Forwarded` are deliberately ignored, since any client
    /// can send them and links must not point where a client chose.
    pub fn public_base(&self, req: &HttpRequest) -> String {
        let mut base = String::new();
        self.write_public_base(req, &mut base);
        base
    }

    /// Appends [`Self::public_base`] to `out` (links are built in one buffer).
    pub fn write_public_base(&self, req: &HttpRequest, out: &mut String) {
        match &self.public_base_url {
            Some(url) => out.push_str(url),
            None => {
                let config = req.app_config();
                let scheme = if config.secure() { "https" } else { "http" };
                let host = req
                    .headers()
                    .get(actix_web::http::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
                    .unwrap_or_else(|| config.host());
                out.push_str(scheme);
                out.push_str("://");
                out.push_str(host);
                out.push_str(&self.base_path);
            }
        }
    }
}

/// `<{base}/pets>; rel="successor-version"` (RFC 8288).
fn successor_link(base: &str) -> String {
    format!("<{base}/pets>; rel=\"successor-version\"")
}

/// Everything the handlers share. Built once, outside `HttpServer::new`, so that every worker
/// sees the same pool and caches.
pub struct AppState {
    /// The database.
    pub store: Store,
    /// Wall-clock time.
    pub clock: Arc<dyn Clock>,
    /// Recent API-key lookups.
    pub keys: KeyCache,
    /// Paths and links.
    pub settings: HttpSettings,
    /// Rate limits and bans.
    pub limiter: ratelimit::Limiter,
    /// Proxies whose forwarding headers name the client address.
    pub trusted_proxies: ratelimit::TrustedProxies,
    /// The store calls [`db`] may have running at once.
    pub db_slots: DbSlots,
}

/// Bounds the blocking store calls in flight to the pool's size: a call beyond it waits here,
/// as a future on the worker, instead of on a blocking thread of its own that would only wait
/// for a connection. Under load that kept dozens of threads (each with its allocator heap, and
/// a context switch per hand-over) for 8 connections. The wait is bounded by the pool's checkout
/// timeout, after which the call answers `503` as an exhausted pool does.
#[derive(Debug)]
pub struct DbSlots {
    permits: tokio::sync::Semaphore,
    wait: Duration,
}

impl DbSlots {
    /// As many slots as `store` has connections, waited for as long as a connection would be.
    pub fn for_store(store: &Store) -> Self {
        Self {
            permits: tokio::sync::Semaphore::new(store.max_connections() as usize),
            wait: store.checkout_timeout(),
        }
    }

    async fn acquire(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ApiError> {
        match actix_web::rt::time::timeout(self.wait, self.permits.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed.
            Ok(Err(closed)) => Err(ApiError::internal(closed)),
            Err(_) => Err(ApiError::Unavailable(format!(
                "no database connection free within {:?}",
                self.wait
            ))),
        }
    }
}

/// Runs a blocking store call on actix's blocking thread pool, once one of the
/// [`AppState::db_slots`] is free. With [`db_read`], the only way handlers and middleware reach
/// the database.
pub async fn db<T, F>(state: &web::Data<AppState>, f: F) -> Result<T, ApiError>
where
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    let _slot = state.db_slots.acquire().await?;
    let state = state.clone();
    web::block(move || f(&state.store))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::from)
}

/// Runs a store read, on the calling worker when the store can answer it without waiting
/// ([`Store::try_inline`]: SQLite with an idle connection), else like [`db`].
pub async fn db_read<T, F>(state: &web::Data<AppState>, f: F) -> Result<T, ApiError>
where
    F: Fn(&Store) -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    match state.store.try_inline(&f) {
        Some(result) => result.map_err(ApiError::from),
        None => db(state, f).await,
    }
}

/// The application: routes, middleware and error handling. Production and tests build it
/// alike.
pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let base_path = state.settings.base_path().to_owned();
    App::new()
        .app_data(state)
        .route("/healthz", web::get().to(routes::health::healthz))
        .route("/readyz", web::get().to(routes::health::readyz))
        .configure(|cfg| routes::configure(cfg, &base_path))
        .default_service(web::to(routes::not_found))
        // Outermost last: the access log sees the final response, error bodies included. It is
        // left out when its lines would be filtered anyway (it renders every request first).
        .wrap(from_fn(middleware::admission))
        .wrap(Condition::new(
            log::log_enabled!(target: ACCESS_LOG, log::Level::Info),
            Logger::new(r#"%a "%r" %s %b %Dms"#).log_target(ACCESS_LOG),
        ))
}
