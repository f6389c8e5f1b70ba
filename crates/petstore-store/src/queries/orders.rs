//! Store orders. Every action reads the order and its pet, applies the domain's [`lifecycle`]
//! and writes both, in one transaction that holds them: SQLite's `BEGIN IMMEDIATE` (the write
//! lock from the start, so concurrent writers queue on it instead of failing to upgrade a read),
//! PostgreSQL's `SELECT ... FOR UPDATE` of both rows. Each change records the event the domain
//! says it emits (`NewEvent::order_changed`: `order.placed`, `order.approved`, ...) in the same
//! transaction (`webhooks::record`).
//!
//! An action's outcome is `Ok(Err(refusal))` when the rules refuse it (nothing written, the
//! client told why) and `Err` when the store failed.

use diesel::prelude::*;
use petstore_domain::{
    Inventory, Order, OrderAction, OrderError, OrderListQuery, OrderStatus, Page, PetStatus,
    PlaceOrder, StoredResponse, lifecycle,
};

use petstore_domain::webhook::NewEvent;

use super::pets::UnknownStatus;
use super::{Now, Result, columns, overfetch};
use crate::StoreError;
use crate::conn::Conn;
use crate::schema::{orders, pet_status_counts, pets};

#[derive(Queryable, Selectable)]
#[diesel(table_name = orders)]
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

    fn try_from(row: OrderRow) -> Result<Self> {
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

/// The pet's status, its row locked for the rest of the transaction (PostgreSQL; SQLite's
/// transaction holds the whole database).
async fn locked_pet_status(conn: &mut Conn<'_>, id: i64) -> Result<Option<PetStatus>, Failure> {
    let query = pets::table.find(id).select(pets::status);
    let status: Option<String> = run!(conn, locked first, query).optional()?;
    status
        .map(|text| {
            text.parse()
                .map_err(|_| Failure::Store(UnknownStatus { id, text }.corrupt()))
        })
        .transpose()
}

/// Order `id` (the owner's only, when given), its row locked like [`locked_pet_status`].
async fn locked_order(
    conn: &mut Conn<'_>,
    id: i64,
    owner: Option<i64>,
) -> Result<Option<Order>, Failure> {
    let query = orders::table.find(id).select(columns::<OrderRow>());
    let row: Option<OrderRow> = run!(conn, locked first, query).optional()?;
    Ok(visible_to(row.map(Order::try_from).transpose()?, owner))
}

/// `order`, if `owner` may see it: its own key's, or anyone's for an operator (`None`).
fn visible_to(order: Option<Order>, owner: Option<i64>) -> Option<Order> {
    order.filter(|order| owner.is_none() || order.owner == owner)
}

async fn set_pet_status(conn: &mut Conn<'_>, id: i64, status: PetStatus) -> Result<(), Failure> {
    let update = diesel::update(pets::table.find(id)).set(pets::status.eq(status.as_str()));
    run!(conn, execute, update)?;
    Ok(())
}

async fn place_in(conn: &mut Conn<'_>, order: &PlaceOrder, now: Now) -> Result<Order, Failure> {
    let pet = locked_pet_status(conn, order.pet_id)
        .await?
        .ok_or(Failure::Refused(OrderError::PetNotFound(order.pet_id)))?;
    let (status, pet_after) = lifecycle(None, pet, OrderAction::Place)?;
    set_pet_status(conn, order.pet_id, pet_after).await?;
    let insert = diesel::insert_into(orders::table).values((
        orders::pet_id.eq(order.pet_id),
        orders::quantity.eq(1),
        orders::status.eq(status.as_str()),
        orders::created_at.eq(now.unix()),
        orders::owner_key_id.eq(order.owner),
    ));
    let row: OrderRow = run_returning!(conn, get_result, insert.returning(columns::<OrderRow>()),
        mysql(c) => mysql_inserted!(c, insert, orders::table, OrderRow))?;
    let placed = Order::try_from(row)?;
    let event = NewEvent::order_changed(now.at, OrderAction::Place, &placed).in_trace(now.trace);
    super::webhooks::record(conn, &event, now).await?;
    if let Some(completion) = &order.completion {
        let response = StoredResponse::created(&placed, &completion.base);
        if !super::idempotency::complete(conn.reborrow(), &completion.claim, &response).await? {
            return Err(Failure::Store(StoreError::ClaimLost));
        }
    }
    Ok(placed)
}

async fn change_in(
    conn: &mut Conn<'_>,
    id: i64,
    owner: Option<i64>,
    action: OrderAction,
    now: Now,
) -> Result<Order, Failure> {
    let order = locked_order(conn, id, owner)
        .await?
        .ok_or(Failure::Refused(OrderError::OrderNotFound(id)))?;
    let pet = locked_pet_status(conn, order.pet_id)
        .await?
        .ok_or_else(|| {
            Failure::Store(StoreError::Corrupt {
                table: "orders",
                reason: format!(
                    "order {id} names pet {}, which does not exist",
                    order.pet_id
                ),
            })
        })?;
    let (status, pet_after) = lifecycle(Some(order.status), pet, action)?;
    let update = diesel::update(orders::table.find(id)).set(orders::status.eq(status.as_str()));
    run!(conn, execute, update)?;
    if pet_after != pet {
        set_pet_status(conn, order.pet_id, pet_after).await?;
    }
    let changed = Order { status, ..order };
    let event = NewEvent::order_changed(now.at, action, &changed).in_trace(now.trace);
    super::webhooks::record(conn, &event, now).await?;
    Ok(changed)
}

/// Ends a transaction that `body` ran in, and sorts its outcome: a refusal comes back as the
/// domain's error (rolled back), a store failure as the store's.
async fn in_transaction<T>(
    conn: &mut Conn<'_>,
    body: Result<T, Failure>,
) -> Result<Result<T, OrderError>> {
    match conn.finish(body).await {
        Ok(value) => Ok(Ok(value)),
        Err(Failure::Refused(refusal)) => Ok(Err(refusal)),
        Err(Failure::Store(error)) => Err(error),
    }
}

/// Places an order for an available pet: the order `placed` and the pet `pending`, together.
pub(crate) async fn place(
    mut conn: Conn<'_>,
    order: PlaceOrder,
    now: Now,
) -> Result<Result<Order, OrderError>> {
    conn.begin().await?;
    let placed = place_in(&mut conn, &order, now).await;
    in_transaction(&mut conn, placed).await
}

/// Applies `action` to order `id` (the owner's only, when given) and to its pet.
pub(crate) async fn change(
    mut conn: Conn<'_>,
    id: i64,
    owner: Option<i64>,
    action: OrderAction,
    now: Now,
) -> Result<Result<Order, OrderError>> {
    conn.begin().await?;
    let changed = change_in(&mut conn, id, owner, action, now).await;
    in_transaction(&mut conn, changed).await
}

/// Order `id`; with an owner, only if that key placed it.
pub(crate) async fn find(mut conn: Conn<'_>, id: i64, owner: Option<i64>) -> Result<Option<Order>> {
    let query = orders::table.find(id).select(columns::<OrderRow>());
    let row: Option<OrderRow> = run!(&mut conn, first, query).optional()?;
    Ok(visible_to(row.map(Order::try_from).transpose()?, owner))
}

/// A page of orders in ascending id order (the query's owner's only, of its status only, when
/// it names them).
pub(crate) async fn list(mut conn: Conn<'_>, query: OrderListQuery) -> Result<Page<Order>> {
    let all = orders::table
        .select(columns::<OrderRow>())
        .order(orders::id.asc())
        .limit(overfetch(query.page.limit))
        .filter(orders::id.gt(query.page.after.unwrap_or(0)));
    let conn = &mut conn;
    // Each page walks an index from `after` on, whatever the number of orders: a key's
    // `(owner_key_id, id)`, a status's `(status, id)`, both `(owner_key_id, status, id)`
    // (`migrations/*/..._order_page_indexes`). On PostgreSQL the fixed columns are stated as
    // ranges, ordered by, for its generic plans, as a page of pets with one status is, for the
    // same reasons (see `pets::list`).
    let rows: Vec<OrderRow> = match (query.owner, query.status.map(OrderStatus::as_str)) {
        (None, None) => run!(conn, load, all)?,
        (Some(owner), None) => run!(
            conn,
            load,
            sqlite: all.filter(orders::owner_key_id.eq(owner)),
            servers: all
                .filter(orders::owner_key_id.between(owner, owner))
                .order((orders::owner_key_id.asc(), orders::id.asc()))
        )?,
        (None, Some(status)) => run!(
            conn,
            load,
            sqlite: all.filter(orders::status.eq(status)),
            servers: all
                .filter(orders::status.between(status, status))
                .order((orders::status.asc(), orders::id.asc()))
        )?,
        (Some(owner), Some(status)) => run!(
            conn,
            load,
            sqlite: all
                .filter(orders::owner_key_id.eq(owner))
                .filter(orders::status.eq(status)),
            servers: all
                .filter(orders::owner_key_id.between(owner, owner))
                .filter(orders::status.between(status, status))
                .order((
                    orders::owner_key_id.asc(),
                    orders::status.asc(),
                    orders::id.asc()
                ))
        )?,
    };
    let orders = rows
        .into_iter()
        .map(Order::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_overfetch(orders, query.page.limit, |order| {
        order.id
    }))
}

/// How many pets have each status: the sums of the counters the database's triggers keep in
/// the transaction of every change to a pet (`migrations/*/..._pet_status_counts`), a few rows
/// whatever the size of the catalogue.
pub(crate) async fn inventory(mut conn: Conn<'_>) -> Result<Inventory> {
    let query =
        pet_status_counts::table.select((pet_status_counts::status, pet_status_counts::pets));
    let slots: Vec<(String, i64)> = run!(&mut conn, load, query)?;
    // Sums per status: available, pending, sold.
    let mut sums = [0_i64; 3];
    for (status, pets) in slots {
        let index = match status.parse::<PetStatus>() {
            Ok(PetStatus::Available) => 0,
            Ok(PetStatus::Pending) => 1,
            Ok(PetStatus::Sold) => 2,
            Err(_) => {
                return Err(corrupt_count(format!(
                    "a count of unknown status {status:?}"
                )));
            }
        };
        sums[index] = sums[index].saturating_add(pets);
    }
    let [available, pending, sold] = sums.map(|sum| {
        u64::try_from(sum).map_err(|_| corrupt_count(format!("a negative count ({sum})")))
    });
    Ok(Inventory {
        available: available?,
        pending: pending?,
        sold: sold?,
    })
}

/// The store's error for counts that cannot be right.
fn corrupt_count(reason: String) -> StoreError {
    StoreError::Corrupt {
        table: "pet_status_counts",
        reason,
    }
}
