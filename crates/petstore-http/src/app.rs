//! The application: routes, middleware and error handling. Production and every test build it
//! alike, from an [`AppState`].

use actix_cors::Cors;
use actix_web::body::MessageBody;
use actix_web::dev::{HttpServiceFactory, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{Condition, DefaultHeaders, from_fn};
use actix_web::{App, FromRequest, Handler, HttpResponse, Resource, Responder, web};
use utoipa_swagger_ui::{Config as SwaggerConfig, SwaggerUi};

use crate::config::CorsOrigins;
use crate::middleware::Access;

use crate::state::AppState;
use crate::telemetry::metric::Exporter;
use crate::{admin, middleware, routes};

/// The type of each application here: an actix-web `App` whose service actix builds, with the
/// body its middleware makes.
macro_rules! application {
    () => {
        App<
            impl ServiceFactory<
                ServiceRequest,
                Config = (),
                Response = ServiceResponse<impl MessageBody>,
                Error = actix_web::Error,
                InitError = (),
            >,
        >
    };
}

/// The actix-web application over `state`.
pub fn app(state: web::Data<AppState>) -> application!() {
    let base_path = state.links.settings().base_path().to_owned();
    let body_timeout = state.body_timeout;
    let state_cors = state.cors.clone();
    let metrics = state.metrics.clone();
    App::new()
        .app_data(state)
        .app_data(body_timeout)
        // The API first: routes are tried in order (each one passed over costs a match), and
        // the docs page's pattern is a regex. No API path is a health or metrics path (even
        // at a root base path), so the order changes no match.
        .configure(|cfg| routes::configure(cfg, &base_path))
        // Health and metrics have no admission: load balancers and Prometheus poll them,
        // uncounted, whatever the method (another one is answered as an unknown path, and so
        // is `/metrics` where it is not served).
        .configure(|cfg| match metrics {
            Some(exporter) => metrics_route(cfg, exporter),
            None => {
                cfg.service(web::resource("/metrics").default_service(web::to(routes::not_found)));
            }
        })
        .service(unlimited("/healthz", routes::health::healthz))
        .service(unlimited("/readyz", routes::health::readyz))
        .service(docs_page(&base_path))
        // Unknown paths are counted like any request (`429` before `404`).
        .default_service(web::to(routes::not_found).wrap(from_fn(|req, next| {
            middleware::admission(Access::OPEN, req, next)
        })))
        // Outside admission: a preflight needs no key and counts against no limit.
        .wrap(cors(&state_cors))
        // Outermost (wrapped last): every response gets its request id, every error the Error
        // object (CORS's refusals too), and the access log and the metrics see the final
        // response, preflights and error bodies included.
        .wrap(from_fn(middleware::observe))
}

/// The application of a metrics listener of its own (`--metrics-bind`): `/metrics` alone.
pub fn metrics_app(exporter: Exporter) -> application!() {
    App::new()
        .configure(|cfg| metrics_route(cfg, exporter))
        .default_service(web::to(routes::not_found))
        .wrap(from_fn(middleware::observe))
}

/// The application of the admin listener (`--admin-bind`): the admin API over `state`'s
/// storage, and `/metrics` when `metrics` is given. No public route, no rate limit; every
/// request gets its id, access-log line and metrics, and every error the Error object.
pub fn admin_app(state: web::Data<AppState>, metrics: Option<Exporter>) -> application!() {
    let body_timeout = state.body_timeout;
    App::new()
        .app_data(state)
        .app_data(body_timeout)
        .app_data(middleware::AdminListener)
        .configure(|cfg| {
            if let Some(exporter) = metrics {
                metrics_route(cfg, exporter);
            }
        })
        .configure(admin::configure)
        .default_service(web::to(routes::not_found))
        .wrap(from_fn(middleware::observe))
}

/// A resource outside admission: `GET` and `HEAD` to `handler`, and any other method answered
/// as an unknown path.
fn unlimited<F, Args>(path: &str, handler: F) -> Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    routes::read(handler)
        .into_iter()
        .fold(web::resource(path), Resource::route)
        .default_service(web::to(routes::not_found))
}

fn metrics_route(cfg: &mut web::ServiceConfig, exporter: Exporter) {
    cfg.app_data(web::Data::new(exporter)).service(
        web::resource("/metrics")
            .route(web::get().to(routes::metrics::metrics))
            .route(web::head().to(routes::metrics::metrics))
            .default_service(web::to(routes::method_not_allowed("GET, HEAD"))),
    );
}

/// `/docs/`: Swagger UI over `{base}/openapi.json`, every asset embedded in the binary (the
/// `vendored` build of `utoipa-swagger-ui`), and `/docs`, which leads there; open to anyone and
/// counted. The online validator badge is off: the page asks nothing of any other host.
fn docs_page(base_path: &str) -> impl HttpServiceFactory + use<> {
    let config = SwaggerConfig::new([format!("{base_path}/openapi.json")])
        .validator_url("none")
        .try_it_out_enabled(true)
        .display_operation_id(true)
        .show_extensions(true)
        .persist_authorization(false);
    web::scope("/docs")
        .route("", web::get().to(to_docs))
        .service(SwaggerUi::new("/{_:.*}").config(config))
        // Within the scope, so that the request is counted once.
        .default_service(web::to(routes::not_found))
        // Inside admission, which takes a `304` back from the counts.
        .wrap(from_fn(middleware::tag_files))
        .wrap(from_fn(|req, next| {
            middleware::admission(Access::OPEN, req, next)
        }))
        // People paste keys into this page: nothing but its own scripts runs on it, it talks to
        // no other host, no other site may frame it, and no address of it leaks in a Referer.
        .wrap(
            DefaultHeaders::new()
                .add((header::CONTENT_SECURITY_POLICY, DOCS_CSP))
                .add((header::X_FRAME_OPTIONS, "DENY"))
                .add((header::REFERRER_POLICY, "no-referrer")),
        )
}

/// The docs page's Content Security Policy. Swagger UI's scripts and styles are files of its
/// own (no inline script); it sets styles on elements and draws icons from `data:` images;
/// "Try it out" calls the API on the same origin.
pub const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' \
    'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `/docs` -> `/docs/`, where the page's relative asset paths resolve.
async fn to_docs() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((header::LOCATION, "/docs/"))
        .finish()
}

/// The response headers a browser client needs to read (CORS hides all others).
const EXPOSED: [&str; 17] = [
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit",
    "ratelimit-policy",
    "retry-after",
    "link",
    "location",
    "deprecation",
    "sunset",
    "x-api-stability",
    "x-request-id",
    "idempotent-replayed",
    "www-authenticate",
    "allow",
    "etag",
    "vary",
];

/// CORS for the configured origins: off (no CORS header at all) unless some are.
fn cors(origins: &CorsOrigins) -> Condition<Cors> {
    let mut cors = Cors::default()
        .allowed_methods(["GET", "HEAD", "POST", "PATCH", "DELETE"])
        .allowed_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::HeaderName::from_static("idempotency-key"),
            header::IF_NONE_MATCH,
        ])
        .expose_headers(EXPOSED)
        .max_age(3600);
    match origins {
        CorsOrigins::Off => {}
        CorsOrigins::Any => cors = cors.allow_any_origin(),
        CorsOrigins::Only(list) => {
            for origin in list {
                cors = cors.allowed_origin(origin);
            }
        }
    }
    Condition::new(*origins != CorsOrigins::Off, cors)
}
