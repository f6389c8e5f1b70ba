//! The store area (experimental): place, read, list and cancel orders, and the inventory. A key
//! sees its own orders only; another key's order is a `404`, so ids do not leak.

use actix_web::{HttpRequest, HttpResponse, ResponseError, http::header, web};
use petstore_domain::{
    LifecycleError, NewOrder, Order, OrderAction, OrderError, OrderListQuery, StorageError,
};

use super::respond::{conditional, fingerprinted_json, json_body};
use crate::auth::{Caller, Read, Write};
use crate::conditional::{Caching, ETag};
use crate::db::storage_call;
use crate::error::ApiError;
use crate::extract::{NoQuery, OrderId, Query, parse};
use crate::idempotency::{self, CreateRequest};
use crate::state::AppState;

/// `listOrders`: the caller's orders in ascending id order, paged like pets (`limit`, `after`).
pub async fn list_orders(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    Query(mut query): Query<OrderListQuery>,
) -> Result<HttpResponse, ApiError> {
    query.owner = Some(caller.key().id);
    let page = storage_call!(state.db, list_orders(&query)).await?;
    let mut response = HttpResponse::Ok();
    if let Some(after) = page.next_after {
        let limit = query.page.limit.get();
        let link = state
            .links
            .next_page(&req, "/store/orders", limit, None, after);
        response.insert_header((header::LINK, link));
    }
    let items = page.items.as_slice();
    let tag = ETag::of(&(items, page.next_after));
    Ok(conditional(&req, response, tag, Caching::Private, |r| {
        json_body(r, &items, items.len())
    }))
}

/// `placeOrder`: `201`, the order, and its `Location`; the pet becomes `pending`.
pub async fn place_order(
    state: web::Data<AppState>,
    request: CreateRequest,
) -> Result<HttpResponse, ApiError> {
    let owner = Some(request.caller.key().id);
    idempotency::create(&state, &request, "store/placeOrder", |completion| async {
        let order = parse::<NewOrder>(&request.body)?.validate_into(owner, completion)?;
        place(&state, order).await
    })
    .await
}

async fn place(state: &AppState, order: petstore_domain::PlaceOrder) -> Result<Order, ApiError> {
    let pet = order.pet_id;
    state
        .db
        .call("place_order", |storage| {
            Box::pin(async move { split(storage.place_order(&order).await) })
        })
        .await?
        .map_err(|error| refused(error, pet, None))
}

/// `getOrder`: the caller's order, or `404`.
pub async fn get_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller<Read>,
    OrderId(id): OrderId,
) -> Result<HttpResponse, ApiError> {
    let owner = Some(caller.key().id);
    let order = storage_call!(state.db, find_order(id, owner))
        .await?
        .ok_or(ApiError::OrderNotFound(id))?;
    Ok(fingerprinted_json(&req, &order))
}

/// `cancelOrder`: a placed order is cancelled and its pet available again.
pub async fn cancel_order(
    state: web::Data<AppState>,
    caller: Caller<Write>,
    OrderId(id): OrderId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    cancel(&state, &caller, id).await
}

/// `deleteOrder`: [`cancel_order`]'s former address, deprecated (a `DELETE` that leaves the
/// order readable is not what HTTP's `DELETE` means); every answer carries `Deprecation`,
/// `Sunset` and the `Link` to its successor, and from its sunset it is `410`.
#[deprecated = "clients use `cancelOrder`; served until its sunset"]
pub async fn delete_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    // Taken as results, so that a refusal of its input is answered with the marks too.
    caller: Result<Caller<Write>, ApiError>,
    id: Result<OrderId, ApiError>,
) -> HttpResponse {
    let shown = id
        .as_ref()
        .map_or_else(|_| "{orderId}".to_owned(), |OrderId(id)| id.to_string());
    let answered = if state.clock.unix_seconds() >= crate::sunset::DELETE_ORDER_SUNSET_UNIX {
        Err(ApiError::EndpointRemoved {
            sunset: crate::sunset::DELETE_ORDER_SUNSET,
            replacement: "POST /store/orders/{orderId}/cancel",
        })
    } else {
        // (A query string is ignored, as it was before the operation was deprecated.)
        match (caller, id) {
            (Ok(caller), Ok(OrderId(id))) => cancel(&state, &caller, id).await,
            (Err(error), _) | (_, Err(error)) => Err(error),
        }
    };
    let mut response = answered.unwrap_or_else(|error| error.error_response());
    crate::sunset::announce_delete_order(&state.links, &req, &shown, response.headers_mut());
    response
}

/// Cancels order `id`, the caller's.
async fn cancel(
    state: &AppState,
    caller: &Caller<Write>,
    id: i64,
) -> Result<HttpResponse, ApiError> {
    let owner = Some(caller.key().id);
    let order = state
        .db
        .call("cancel_order", |storage| {
            Box::pin(
                async move { split(storage.change_order(id, owner, OrderAction::Cancel).await) },
            )
        })
        .await?
        .map_err(|error| refused(error, 0, Some(id)))?;
    Ok(json_body(HttpResponse::Ok(), &order, 1))
}

/// `getInventory`: how many pets have each status.
pub async fn get_inventory(
    state: web::Data<AppState>,
    req: HttpRequest,
    _caller: Caller<Read>,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let inventory = storage_call!(state.db, inventory()).await?;
    Ok(fingerprinted_json(&req, &inventory))
}

/// An order call's outcome, its storage failure apart (for `Database::call`).
pub(crate) fn split<T>(
    result: Result<T, OrderError>,
) -> Result<Result<T, OrderError>, StorageError> {
    match result {
        Err(OrderError::Storage(error)) => Err(error),
        other => Ok(other),
    }
}

/// The answer to a refusal of the lifecycle (`pet` and `order`: the ids the request named); the
/// admin API's too, whose operators approve and deliver.
pub(crate) fn refused(error: OrderError, pet: i64, order: Option<i64>) -> ApiError {
    match error {
        OrderError::PetNotFound(id) => ApiError::PetNotFound(id),
        OrderError::OrderNotFound(id) => ApiError::OrderNotFound(id),
        OrderError::Refused(LifecycleError::PetNotAvailable(status)) => {
            ApiError::PetNotAvailable { pet, status }
        }
        OrderError::Refused(LifecycleError::Transition {
            from,
            action: OrderAction::Cancel,
        }) => ApiError::OrderNotCancellable {
            order: order.unwrap_or_default(),
            status: from,
        },
        OrderError::Refused(LifecycleError::Transition { from, action }) => {
            ApiError::OrderTransitionRefused {
                order: order.unwrap_or_default(),
                status: from,
                action,
            }
        }
        OrderError::Refused(other) => ApiError::internal(other),
        OrderError::Storage(error) => ApiError::Storage(error),
    }
}
