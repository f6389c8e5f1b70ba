//! The delivery log: an endpoint's deliveries (newest first), one delivery with its latest
//! attempts, and a delivery made pending again (redelivered), each behind its endpoint's owner.

use diesel::prelude::*;
use petstore_domain::webhook::{Attempt, Delivery, DeliveryState, EndpointOwner};
use petstore_domain::{Page, PageRequest};

use super::DeliveryRow;
use super::endpoints::endpoint_row;
use crate::conn::Conn;
use crate::queries::{Result, columns, overfetch};
use crate::schema::{webhook_attempts, webhook_deliveries};

/// The most attempts a delivery's record shows (the latest).
const MAX_ATTEMPTS_SHOWN: i64 = 100;

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
struct AttemptRow {
    attempted_at: i64,
    status: Option<i32>,
    latency_ms: i32,
    error: Option<String>,
}

impl From<AttemptRow> for Attempt {
    fn from(row: AttemptRow) -> Self {
        Self {
            attempted_at: row.attempted_at,
            status: row.status.and_then(|status| u16::try_from(status).ok()),
            latency_ms: u32::try_from(row.latency_ms).unwrap_or(0),
            error: row.error,
        }
    }
}

/// A page of endpoint `endpoint`'s deliveries, newest first (`after`: older than that id).
pub(crate) async fn list_deliveries(
    mut conn: Conn<'_>,
    endpoint: i64,
    owner: EndpointOwner,
    page: PageRequest,
) -> Result<Option<Page<Delivery>>> {
    if endpoint_row(&mut conn, endpoint, owner).await?.is_none() {
        return Ok(None);
    }
    let query = webhook_deliveries::table
        .filter(webhook_deliveries::endpoint_id.eq(endpoint))
        .filter(webhook_deliveries::id.lt(page.after.unwrap_or(i64::MAX)))
        .order(webhook_deliveries::id.desc())
        .limit(overfetch(page.limit))
        .select(columns::<DeliveryRow>());
    let rows: Vec<DeliveryRow> = run!(&mut conn, load, query)?;
    let deliveries = rows
        .into_iter()
        .map(DeliveryRow::delivery)
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Page::from_overfetch(
        deliveries,
        page.limit,
        |delivery| delivery.id,
    )))
}

/// Delivery `delivery` of endpoint `endpoint` (`owner`'s), with its latest attempts in order.
pub(crate) async fn find_delivery(
    mut conn: Conn<'_>,
    endpoint: i64,
    delivery: i64,
    owner: EndpointOwner,
) -> Result<Option<(Delivery, Vec<Attempt>)>> {
    if endpoint_row(&mut conn, endpoint, owner).await?.is_none() {
        return Ok(None);
    }
    let Some(found) = delivery_row(&mut conn, endpoint, delivery).await? else {
        return Ok(None);
    };
    let query = webhook_attempts::table
        .filter(webhook_attempts::delivery_id.eq(delivery))
        .order(webhook_attempts::id.desc())
        .limit(MAX_ATTEMPTS_SHOWN)
        .select(columns::<AttemptRow>());
    let rows: Vec<AttemptRow> = run!(&mut conn, load, query)?;
    let mut attempts: Vec<Attempt> = rows.into_iter().map(Attempt::from).collect();
    attempts.reverse();
    Ok(Some((found.delivery()?, attempts)))
}

async fn delivery_row(
    conn: &mut Conn<'_>,
    endpoint: i64,
    delivery: i64,
) -> Result<Option<DeliveryRow>> {
    let query = webhook_deliveries::table
        .find(delivery)
        .filter(webhook_deliveries::endpoint_id.eq(endpoint))
        .select(columns::<DeliveryRow>());
    Ok(run!(conn, first, query).optional()?)
}

/// Makes delivery `delivery` of endpoint `endpoint` (`owner`'s) pending again from `now`, its
/// schedule from the start.
pub(crate) async fn redeliver(
    mut conn: Conn<'_>,
    endpoint: i64,
    delivery: i64,
    owner: EndpointOwner,
    now: i64,
) -> Result<Option<Delivery>> {
    if endpoint_row(&mut conn, endpoint, owner).await?.is_none() {
        return Ok(None);
    }
    let write = diesel::update(
        webhook_deliveries::table
            .find(delivery)
            .filter(webhook_deliveries::endpoint_id.eq(endpoint)),
    )
    .set((
        webhook_deliveries::state.eq(DeliveryState::Pending.as_str()),
        webhook_deliveries::tries.eq(0),
        webhook_deliveries::next_attempt_at.eq(now),
        // A sender still holding an earlier claim records nothing on it.
        webhook_deliveries::lease_token.eq(0),
        webhook_deliveries::lease_until.eq(0),
        webhook_deliveries::ended_at.eq(None::<i64>),
    ));
    if run!(&mut conn, execute, write)? == 0 {
        return Ok(None);
    }
    delivery_row(&mut conn, endpoint, delivery)
        .await?
        .map(DeliveryRow::delivery)
        .transpose()
}
