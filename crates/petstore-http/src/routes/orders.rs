//! `GET /store/orders` (experimental).

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use petstore_domain::{Order, OrderListQuery};

use super::respond::json_body;
use crate::error::{ApiError, ErrorObject};
use crate::extract::query_pairs;
use crate::state::AppState;

/// `listOrders`: orders in ascending id order, paged like pets (`limit`, `after`).
#[utoipa::path(
    get,
    path = "/store/orders",
    operation_id = "listOrders",
    tag = "store",
    summary = "List orders (experimental)",
    description = "Orders in ascending id order, paged like pets. Experimental: may change \
        without a new version (`X-API-Stability: experimental`).",
    params(
        ("limit" = Option<u32>, Query,
            description = "How many orders at most: 1 to 100, default 20."),
        ("after" = Option<i64>, Query, minimum = 0,
            description = "Keyset cursor: only orders whose id is greater. Taken from a `next` link."),
    ),
    responses(
        (status = 200, description = "A page of orders.", body = Vec<Order>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when more orders follow."),
        )),
        (status = 400, description = "`invalid_query_parameter` or `unknown_query_parameter`.",
            body = ErrorObject),
    ),
    extensions(("x-stability" = json!("experimental"))),
)]
pub async fn list_orders(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(&req)?;
    let query = OrderListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let page = state
        .db
        .read("list_orders", move |db| db.list_orders(&query))
        .await?;
    let mut response = HttpResponse::Ok();
    if let Some(after) = page.next_after {
        let limit = query.page.limit.get();
        let link = state
            .links
            .next_page(&req, "/store/orders", limit, None, after);
        response.insert_header((header::LINK, link));
    }
    Ok(json_body(response, &page.items, page.items.len()))
}
