//! `GET /store/orders` (experimental).

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use petstore_domain::OrderListQuery;

use super::respond::json_body;
use crate::error::ApiError;
use crate::extract::query_pairs;
use crate::state::AppState;

/// `listOrders`: orders in ascending id order, paged like pets (`limit`, `after`).
pub async fn list_orders(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(&req)?;
    let query = OrderListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let page = state.db.read(move |db| db.list_orders(&query)).await?;
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
