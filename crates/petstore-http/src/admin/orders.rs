//! `/admin/v1/orders`: fulfilment. Every order, whoever placed it, by status or key; one order;
//! approve, deliver, cancel. Each handler parses, makes one call of
//! [`order_admin`](petstore_domain::order_admin) (the code `petstore orders` runs too) through
//! the storage's bounds, writes one audit line when it changed something, and maps the answer.

use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::order_admin::{self as orders, OrderView};
use petstore_domain::{Order, OrderAction, OrderError, OrderListQuery};
use serde::Serialize;
use utoipa::ToSchema;

use super::AUDIT_LOG;
use super::routes::answer;
use super::token::Admin;
use crate::error::responses::AnyOrderById;
use crate::error::{ApiError, ErrorObject};
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
#[utoipa::path(
    get,
    path = "/orders",
    operation_id = "listAllOrders",
    tag = "orders",
    summary = "List orders",
    description = "Every order, whoever placed it, in id order, with the key that placed it; \
        `nextAfter` is the cursor of the next page. Each filter walks an index of its own, \
        whatever the number of orders.",
    params(
        ("limit" = Option<u32>, Query, description = "How many orders at most: 1 to 100, default 20."),
        ("after" = Option<i64>, Query, minimum = 0, description = "Only orders whose id is greater."),
        ("status" = Option<petstore_domain::OrderStatus>, Query, description = "Only orders with this status."),
        ("key" = Option<i64>, Query, minimum = 1, description = "Only orders placed with this API key (its id)."),
    ),
    responses(
        (status = 200, description = "A page of orders.", body = OrderPage),
        (status = 400, description = "A malformed or unknown query parameter, named.", body = ErrorObject),
    ),
)]
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
#[utoipa::path(
    get,
    path = "/orders/{orderId}",
    operation_id = "getAnyOrder",
    tag = "orders",
    summary = "Show an order",
    params(OrderId),
    responses(
        (status = 200, description = "The order, with the key that placed it.", body = OrderView),
        AnyOrderById,
    ),
)]
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

/// `approveOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/approve",
    operation_id = "approveOrder",
    tag = "orders",
    summary = "Approve a placed order",
    description = "The store accepts the order: `placed` becomes `approved`; its pet stays \
        `pending`.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, approved.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_transition_refused`: the order is not `placed`.",
            body = ErrorObject),
    ),
)]
pub async fn approve(
    state: web::Data<AppState>,
    admin: Admin,
    OrderId(id): OrderId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    change(&state, &admin, id, OrderAction::Approve).await
}

/// `deliverOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/deliver",
    operation_id = "deliverOrder",
    tag = "orders",
    summary = "Deliver an approved order",
    description = "The pet is handed over: `approved` becomes `delivered`, and the pet `sold`, \
        in one transaction.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, delivered.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_transition_refused`: the order is not `approved`.",
            body = ErrorObject),
    ),
)]
pub async fn deliver(
    state: web::Data<AppState>,
    admin: Admin,
    OrderId(id): OrderId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    change(&state, &admin, id, OrderAction::Deliver).await
}

/// `cancelAnyOrder`.
#[utoipa::path(
    post,
    path = "/orders/{orderId}/cancel",
    operation_id = "cancelAnyOrder",
    tag = "orders",
    summary = "Cancel a placed order",
    description = "As its customer can: `placed` becomes `cancelled`, and the pet `available` \
        again, in one transaction.",
    params(OrderId),
    responses(
        (status = 200, description = "The order, cancelled.", body = OrderView),
        AnyOrderById,
        (status = 409, description = "`order_not_cancellable`: the order is not `placed`.",
            body = ErrorObject),
    ),
)]
pub async fn cancel(
    state: web::Data<AppState>,
    admin: Admin,
    OrderId(id): OrderId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    change(&state, &admin, id, OrderAction::Cancel).await
}

/// Order `id` moved by `action`, audited, answered.
async fn change(
    state: &AppState,
    admin: &Admin,
    id: i64,
    action: OrderAction,
) -> Result<HttpResponse, ApiError> {
    let order = state
        .db
        .call("change_order", |storage| {
            Box::pin(async move { split(orders::change(storage, id, action).await) })
        })
        .await?
        .map_err(|error: OrderError| refused(error, 0, Some(id)))?;
    audit(admin, action, &order);
    Ok(answer(HttpResponse::Ok(), &OrderView::of(order)))
}
