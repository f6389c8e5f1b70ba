//! What an operator can do to orders, written once for both ways of doing it: the command line
//! (`petstore orders ...`) and the admin API (`/admin/v1/orders`). Operators see every order
//! with the key that placed it ([`OrderView`], the same object in the CLI's `--format json` and
//! the admin API's bodies), and move orders through their lifecycle: approve, deliver, cancel
//! (the domain's [`lifecycle`](crate::lifecycle) rules, applied by the storage in one
//! transaction with the pet's status).

use serde::Serialize;

use crate::{Order, OrderAction, OrderError, OrderListQuery, Page, Storage, StorageError};

/// An order as operators see it: as clients do, and the key that placed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    /// The order.
    #[serde(flatten)]
    pub order: Order,
    /// The id of the API key that placed it; `null` for an order placed outside the API.
    pub owner_key_id: Option<i64>,
}

impl OrderView {
    /// How operators see `order`.
    pub fn of(order: Order) -> Self {
        Self {
            owner_key_id: order.owner,
            order,
        }
    }
}

/// A page of every order, or of those `query` filters to (a status, a key), in id order.
pub async fn list(
    storage: &dyn Storage,
    query: &OrderListQuery,
) -> Result<Page<Order>, StorageError> {
    storage.list_orders(query).await
}

/// Order `id`, whoever placed it.
pub async fn get(storage: &dyn Storage, id: i64) -> Result<Order, OrderError> {
    storage
        .find_order(id, None)
        .await?
        .ok_or(OrderError::OrderNotFound(id))
}

/// Order `id` moved by `action` (approve, deliver, cancel), whoever placed it: the order as it
/// now is, or why the lifecycle refuses.
pub async fn change(
    storage: &dyn Storage,
    id: i64,
    action: OrderAction,
) -> Result<Order, OrderError> {
    storage.change_order(id, None, action).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrderStatus;

    #[test]
    fn a_view_is_the_order_and_its_key() {
        let order = Order {
            id: 3,
            pet_id: 5,
            quantity: 1,
            status: OrderStatus::Approved,
            created_at: 1_795_264_440,
            owner: Some(9),
        };
        let json = serde_json::to_value(OrderView::of(order)).expect("JSON");
        assert_eq!(
            json,
            serde_json::json!({
                "id": 3,
                "petId": 5,
                "quantity": 1,
                "status": "approved",
                "createdAt": "2026-11-21T12:34:00Z",
                "ownerKeyId": 9,
            })
        );
    }
}
