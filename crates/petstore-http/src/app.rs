//! The application: routes, middleware and error handling. Production and every test build it
//! alike, from an [`AppState`].

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::{Condition, Logger, from_fn};
use actix_web::{App, web};

use crate::state::AppState;
use crate::{middleware, routes};

/// The `log` target of the access log (one line per request, at `info`).
pub const ACCESS_LOG: &str = "actix_web::middleware::logger";

/// The actix-web application over `state`.
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
    let base_path = state.links.settings().base_path().to_owned();
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
