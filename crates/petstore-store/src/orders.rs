//! `OrderRepository` for both backends.

use diesel::prelude::*;
use petstore_domain::{
    NewOrder, Order, OrderListQuery, OrderRepository, OrderStatus, Page, StorageError,
};

use crate::schema::orders;
use crate::{Store, StoreError, overfetch, unix_now};

type OrderColumns = (
    orders::id,
    orders::pet_id,
    orders::quantity,
    orders::status,
    orders::created_at,
);
const ORDER_COLUMNS: OrderColumns = (
    orders::id,
    orders::pet_id,
    orders::quantity,
    orders::status,
    orders::created_at,
);

#[derive(Queryable)]
struct OrderRow {
    id: i64,
    pet_id: i64,
    quantity: i32,
    status: String,
    created_at: i64,
}

impl TryFrom<OrderRow> for Order {
    type Error = StoreError;

    fn try_from(row: OrderRow) -> Result<Self, StoreError> {
        let status: OrderStatus = row.status.parse().map_err(|_| StoreError::Corrupt {
            table: "orders",
            reason: format!("order {} has unknown status {:?}", row.id, row.status),
        })?;
        Ok(Order {
            id: row.id,
            pet_id: row.pet_id,
            quantity: row.quantity,
            status,
            created_at: row.created_at,
        })
    }
}

impl OrderRepository for Store {
    fn create_order(&self, order: &NewOrder) -> Result<Order, StorageError> {
        self.call(|conn| {
            let row: OrderRow = diesel::insert_into(orders::table)
                .values((
                    orders::pet_id.eq(order.pet_id()),
                    orders::quantity.eq(order.quantity()),
                    orders::status.eq(order.status().as_str()),
                    orders::created_at.eq(unix_now()),
                ))
                .returning(ORDER_COLUMNS)
                .get_result(conn)?;
            row.try_into()
        })
    }

    fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        self.call(|conn| {
            let all = orders::table
                .select(ORDER_COLUMNS)
                .order(orders::id.asc())
                .limit(overfetch(query.page.limit));
            let rows: Vec<OrderRow> = match query.page.after {
                None => all.load(conn)?,
                Some(after) => all.filter(orders::id.gt(after)).load(conn)?,
            };
            let orders = rows
                .into_iter()
                .map(Order::try_from)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Page::from_overfetch(orders, query.page.limit, |order| {
                order.id
            }))
        })
    }
}
