//! `GET /metrics`: the Prometheus text format, outside the base path and without a key (keep it
//! off the public network: `--metrics-bind` serves it on an address of its own).

use actix_web::{HttpResponse, web};

use crate::telemetry::metric::Exporter;

/// The Prometheus exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric, rendered now.
pub async fn metrics(exporter: web::Data<Exporter>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(CONTENT_TYPE)
        .body(exporter.render())
}
