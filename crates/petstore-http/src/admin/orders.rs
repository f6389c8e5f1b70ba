//! `/admin/v1/orders`: fulfilment. Every order, whoever placed it, by status or key; one order;
//! approve, deliver, cancel. Each handler parses, makes one call of
//! [`order_admin`](petstore_domain::order_admin) (the code `petstore orders` runs too) through
//! the storage's bounds, writes one audit line when it changed something, and maps the answer.

use actix_web::{HttpRequest, HttpResponse, Route, web};
use petstore_domain::order_admin::{self as orders, OrderView};
use petstore_domain::{Order, OrderAction, OrderError, OrderListQuery};
use serde::Serialize;
use utoipa::ToSchema;

use super::AUDIT_LOG;
use super::routes::answer;
use super::token::Admin;
use crate::error::ApiError;
use crate::extract::{FromQuery, NoQuery, OrderId, Query, as_strs};
use crate::routes::orders::{refused, split};
use crate::state::AppState;

/// A page of orders.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderPage {
    /// The orders, in id order.
    orders: Vec<OrderView>,
    /// The cursor of the next page (`after`), or `null` on the last page.
    next_after: Option<i64>,
}

/// `GET /orders`'s parameters: paging, `status`, `key`.
pub struct AdminOrderQuery(OrderListQuery);

impl FromQuery for AdminOrderQuery {
    fn from_query(pairs: &[(String, String)], _: &HttpRequest) -> Result<Self, ApiError> {
        Ok(Self(OrderListQuery::from_admin_pairs(as_strs(pairs))?))
    }
}

/// One audit line: who (the admin token), what, which order; the request id comes with the
/// request's span.
fn audit(admin: &Admin, action: OrderAction, order: &Order) {
    let action = action.past_tense();
    tracing::info!(
        target: AUDIT_LOG,
        admin_token_id = admin.0.id,
        admin_token_label = %admin.0.label,
        action,
        order_id = order.id,
        pet_id = order.pet_id,
        status = order.status.as_str(),
        "admin token {} ({}) {action} order {}",
        admin.0.id,
        admin.0.label,
        order.id,
    );
}

/// `listAllOrders`.
pub async fn list_orders(
    state: web::Data<AppState>,
    _admin: Admin,
    Query(AdminOrderQuery(query)): Query<AdminOrderQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .db
        .call("list_orders", |storage| {
            Box::pin(orders::list(storage, &query))
        })
        .await?;
    let body = OrderPage {
        orders: page.items.into_iter().map(OrderView::of).collect(),
        next_after: page.next_after,
    };
    Ok(answer(HttpResponse::Ok(), &body))
}

/// `getAnyOrder`.
pub async fn get_order(
    state: web::Data<AppState>,
    _admin: Admin,
    OrderId(id): OrderId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let order = state
        .db
        .call("find_order", |storage| {
            Box::pin(async move { split(orders::get(storage, id).await) })
        })
        .await?
        .map_err(|error| refused(error, 0, Some(id)))?;
    Ok(answer(HttpResponse::Ok(), &OrderView::of(order)))
}

/// `approveOrder`, `deliverOrder` and `cancelAnyOrder`: the route that moves an order by
/// `action`, audits the change and answers the order.
pub fn change(action: OrderAction) -> Route {
    web::post().to(
        move |state: web::Data<AppState>, admin: Admin, OrderId(id): OrderId, _: NoQuery| async move {
            let order = state
                .db
                .call("change_order", |storage| {
                    Box::pin(async move { split(orders::change(storage, id, action).await) })
                })
                .await?
                .map_err(|error: OrderError| refused(error, 0, Some(id)))?;
            audit(&admin, action, &order);
            Ok::<_, ApiError>(answer(HttpResponse::Ok(), &OrderView::of(order)))
        },
    )
}
