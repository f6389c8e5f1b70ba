//! `GET {base}/`: where things are. The base address itself (the OpenAPI document's `servers`
//! URL) answers with the address of the docs page, of the OpenAPI document and of each
//! resource, as GitHub's API root does, so that every address the service hands out leads
//! somewhere. Open to anyone (counted per client address, as the document is).

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::respond::json_body;
use crate::error::ApiError;
use crate::extract::NoQuery;
use crate::state::AppState;

/// Where things are, as absolute addresses.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiIndex {
    /// The docs page (Swagger UI over the OpenAPI document).
    #[schema(examples("https://api.example.com/docs/"))]
    docs_url: String,
    /// The OpenAPI document (3.1).
    #[schema(examples("https://api.example.com/v1/openapi.json"))]
    openapi_url: String,
    /// The catalogue: `GET` to list, `POST` to create.
    #[schema(examples("https://api.example.com/v1/pets"))]
    pets_url: String,
    /// Your orders (experimental).
    #[schema(examples("https://api.example.com/v1/store/orders"))]
    orders_url: String,
    /// The pets by status (experimental).
    #[schema(examples("https://api.example.com/v1/store/inventory"))]
    inventory_url: String,
    /// Your webhook endpoints (experimental).
    #[schema(examples("https://api.example.com/v1/webhook_endpoints"))]
    webhook_endpoints_url: String,
    /// Your standing against your plan's limits.
    #[schema(examples("https://api.example.com/v1/rate_limit"))]
    rate_limit_url: String,
}

/// `getApiIndex`.
pub async fn get_index(
    state: web::Data<AppState>,
    req: HttpRequest,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let base = state.links.public_base(&req);
    let index = ApiIndex {
        docs_url: state.links.docs_page(&req),
        openapi_url: format!("{base}/openapi.json"),
        pets_url: format!("{base}/pets"),
        orders_url: format!("{base}/store/orders"),
        inventory_url: format!("{base}/store/inventory"),
        webhook_endpoints_url: format!("{base}/webhook_endpoints"),
        rate_limit_url: format!("{base}/rate_limit"),
    };
    Ok(json_body(HttpResponse::Ok(), &index, 1))
}
