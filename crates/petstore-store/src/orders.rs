//! `OrderRepository` for both backends. Every action reads the order and its pet, applies the
//! domain's [`lifecycle`] and writes both, in one transaction that holds them: SQLite's
//! `BEGIN IMMEDIATE` (the write lock from the start, so concurrent writers queue on it instead
//! of failing to upgrade a read), PostgreSQL's `SELECT ... FOR UPDATE` of both rows.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use petstore_domain::{
    Inventory, Order, OrderAction, OrderError, OrderListQuery, OrderRepository, OrderStatus, Page,
    PetStatus, PlaceOrder, StorageError, lifecycle,
};

use crate::schema::{orders, pets};
use crate::{AnyConnection, Store, StoreError, overfetch, unix_now};

type OrderColumns = (
    orders::id,
    orders::pet_id,
    orders::quantity,
    orders::status,
    orders::created_at,
    orders::owner_key_id,
);
const ORDER_COLUMNS: OrderColumns = (
    orders::id,
    orders::pet_id,
    orders::quantity,
    orders::status,
    orders::created_at,
    orders::owner_key_id,
);

#[derive(Queryable)]
struct OrderRow {
    id: i64,
    pet_id: i64,
    quantity: i32,
    status: String,
    created_at: i64,
    owner_key_id: Option<i64>,
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
            owner: row.owner_key_id,
        })
    }
}

/// How an order transaction ends early: refused by the rules (rolled back, answered to the
/// client), or failed in the store.
enum Failure {
    Refused(OrderError),
    Store(StoreError),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl From<diesel::result::Error> for Failure {
    fn from(error: diesel::result::Error) -> Self {
        Self::Store(error.into())
    }
}

impl From<petstore_domain::LifecycleError> for Failure {
    fn from(error: petstore_domain::LifecycleError) -> Self {
        Self::Refused(OrderError::Refused(error))
    }
}

/// Runs `body` in a transaction that writes: see the module's documentation. Committed only if
/// `body` succeeds; a transaction that cannot be ended cleanly takes its connection out of the
/// pool (reported as the connection lost).
fn write_transaction<T>(
    conn: &mut AnyConnection,
    body: impl FnOnce(&mut AnyConnection) -> Result<T, Failure>,
) -> Result<T, Failure> {
    match conn {
        AnyConnection::Postgresql(_) => conn.transaction(body),
        AnyConnection::Sqlite(_) => {
            conn.batch_execute("BEGIN IMMEDIATE")?;
            let result = body(conn);
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            match conn.batch_execute(end) {
                Ok(()) => result,
                Err(error) => {
                    // A failed COMMIT leaves the transaction open: end it, or give up the
                    // connection.
                    if conn.batch_execute("ROLLBACK").is_err() {
                        return Err(Failure::Store(StoreError::ConnectionLost(error.into())));
                    }
                    Err(Failure::Store(error.into()))
                }
            }
        }
    }
}

/// The pet's status, its row locked for the rest of the transaction (PostgreSQL; SQLite's
/// transaction holds the whole database).
fn locked_pet_status(conn: &mut AnyConnection, id: i64) -> Result<Option<PetStatus>, Failure> {
    let query = pets::table.find(id).select(pets::status);
    let status: Option<String> = match conn {
        AnyConnection::Sqlite(c) => query.first(c).optional()?,
        AnyConnection::Postgresql(c) => query.for_update().first(c).optional()?,
    };
    status
        .map(|text| {
            text.parse().map_err(|_| {
                Failure::Store(StoreError::Corrupt {
                    table: "pets",
                    reason: format!("pet {id} has unknown status {text:?}"),
                })
            })
        })
        .transpose()
}

/// Order `id` (the owner's only, when given), its row locked like [`locked_pet_status`].
fn locked_order(
    conn: &mut AnyConnection,
    id: i64,
    owner: Option<i64>,
) -> Result<Option<Order>, Failure> {
    let query = orders::table.find(id).select(ORDER_COLUMNS);
    let row: Option<OrderRow> = match conn {
        AnyConnection::Sqlite(c) => query.first(c).optional()?,
        AnyConnection::Postgresql(c) => query.for_update().first(c).optional()?,
    };
    Ok(visible_to(row.map(Order::try_from).transpose()?, owner))
}

/// `order`, if `owner` may see it: its own key's, or anyone's for an operator (`None`).
fn visible_to(order: Option<Order>, owner: Option<i64>) -> Option<Order> {
    order.filter(|order| owner.is_none() || order.owner == owner)
}

fn set_pet_status(conn: &mut AnyConnection, id: i64, status: PetStatus) -> Result<(), Failure> {
    diesel::update(pets::table.find(id))
        .set(pets::status.eq(status.as_str()))
        .execute(conn)?;
    Ok(())
}

fn place(conn: &mut AnyConnection, order: &PlaceOrder) -> Result<Order, Failure> {
    let pet = locked_pet_status(conn, order.pet_id)?
        .ok_or(Failure::Refused(OrderError::PetNotFound(order.pet_id)))?;
    let (status, pet_after) = lifecycle(None, pet, OrderAction::Place)?;
    set_pet_status(conn, order.pet_id, pet_after)?;
    let row: OrderRow = diesel::insert_into(orders::table)
        .values((
            orders::pet_id.eq(order.pet_id),
            orders::quantity.eq(1),
            orders::status.eq(status.as_str()),
            orders::created_at.eq(unix_now()),
            orders::owner_key_id.eq(order.owner),
        ))
        .returning(ORDER_COLUMNS)
        .get_result(conn)?;
    let placed = Order::try_from(row)?;
    if let Some(completion) = &order.completion {
        let response = (completion.respond)(&placed);
        if !crate::idempotency::complete(conn, &completion.claim, &response)? {
            return Err(Failure::Store(StoreError::ClaimLost));
        }
    }
    Ok(placed)
}

fn change(
    conn: &mut AnyConnection,
    id: i64,
    owner: Option<i64>,
    action: OrderAction,
) -> Result<Order, Failure> {
    let order =
        locked_order(conn, id, owner)?.ok_or(Failure::Refused(OrderError::OrderNotFound(id)))?;
    let pet = locked_pet_status(conn, order.pet_id)?.ok_or_else(|| {
        Failure::Store(StoreError::Corrupt {
            table: "orders",
            reason: format!(
                "order {id} names pet {}, which does not exist",
                order.pet_id
            ),
        })
    })?;
    let (status, pet_after) = lifecycle(Some(order.status), pet, action)?;
    diesel::update(orders::table.find(id))
        .set(orders::status.eq(status.as_str()))
        .execute(conn)?;
    if pet_after != pet {
        set_pet_status(conn, order.pet_id, pet_after)?;
    }
    Ok(Order { status, ..order })
}

impl Store {
    /// Runs an order transaction on a pooled connection: a refusal comes back as the domain's
    /// error, a store failure as a storage error (and, when it means the connection, without
    /// the connection).
    fn order_call<T>(
        &self,
        f: impl FnOnce(&mut AnyConnection) -> Result<T, Failure>,
    ) -> Result<T, OrderError> {
        let outcome = self.call(|conn| match f(conn) {
            Ok(value) => Ok(Ok(value)),
            Err(Failure::Refused(refusal)) => Ok(Err(refusal)),
            Err(Failure::Store(error)) => Err(error),
        });
        outcome.map_err(OrderError::Storage)?
    }
}

impl OrderRepository for Store {
    fn place_order(&self, order: &PlaceOrder) -> Result<Order, OrderError> {
        self.order_call(|conn| write_transaction(conn, |conn| place(conn, order)))
    }

    fn change_order(
        &self,
        id: i64,
        owner: Option<i64>,
        action: OrderAction,
    ) -> Result<Order, OrderError> {
        self.order_call(|conn| write_transaction(conn, |conn| change(conn, id, owner, action)))
    }

    fn find_order(&self, id: i64, owner: Option<i64>) -> Result<Option<Order>, StorageError> {
        self.call(|conn| {
            let row: Option<OrderRow> = orders::table
                .find(id)
                .select(ORDER_COLUMNS)
                .first(conn)
                .optional()?;
            Ok(visible_to(row.map(Order::try_from).transpose()?, owner))
        })
    }

    fn list_orders(&self, query: &OrderListQuery) -> Result<Page<Order>, StorageError> {
        self.call(|conn| {
            let mut rows = orders::table
                .select(ORDER_COLUMNS)
                .order(orders::id.asc())
                .limit(overfetch(query.page.limit))
                .into_boxed();
            if let Some(after) = query.page.after {
                rows = rows.filter(orders::id.gt(after));
            }
            if let Some(owner) = query.owner {
                rows = rows.filter(orders::owner_key_id.eq(owner));
            }
            let orders = rows
                .load::<OrderRow>(conn)?
                .into_iter()
                .map(Order::try_from)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Page::from_overfetch(orders, query.page.limit, |order| {
                order.id
            }))
        })
    }

    fn inventory(&self) -> Result<Inventory, StorageError> {
        self.call(|conn| {
            let counts: Vec<(String, i64)> = pets::table
                .group_by(pets::status)
                .select((pets::status, diesel::dsl::count_star()))
                .load(conn)?;
            let mut inventory = Inventory::default();
            for (status, count) in counts {
                let count = u64::try_from(count).unwrap_or(0);
                match status.parse::<PetStatus>() {
                    Ok(PetStatus::Available) => inventory.available = count,
                    Ok(PetStatus::Pending) => inventory.pending = count,
                    Ok(PetStatus::Sold) => inventory.sold = count,
                    Err(_) => {
                        return Err(StoreError::Corrupt {
                            table: "pets",
                            reason: format!("{count} pets have the unknown status {status:?}"),
                        });
                    }
                }
            }
            Ok(inventory)
        })
    }
}
