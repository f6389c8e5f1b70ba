//! Attempts: each recorded by the claim that made it, with what becomes of its delivery; and
//! the endpoint turned off when the domain's rule says so
//! ([`turns_endpoint_off`]: a `410`, or a delivery given up on with nothing delivered to the
//! endpoint since its event), carried out here. The usual attempt (delivered, or to be retried,
//! on a delivery still pending and held) is written without its row read first: one statement
//! on PostgreSQL, two elsewhere. Any other attempt, and one whose write matched nothing (its
//! delivery claimed again, or ended meanwhile), reads and locks its delivery's row first, as
//! every attempt did before.

use diesel::prelude::*;
use petstore_domain::webhook::{
    AttemptRecord, AttemptResult, DeliveryState, TurnOff, turns_endpoint_off,
};

use super::endpoints::disable;
use crate::conn::Conn;
#[cfg(feature = "postgres")]
use crate::conn::{FirstId, Then};
use crate::queries::Result;
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_endpoints};

/// Records attempts (see [`AttemptRecord`]) in one transaction, each as if alone, their
/// deliveries' rows locked in id order: what became of each, in the order given. An attempt
/// whose claim no longer holds its delivery records nothing. An endpoint to turn off
/// ([`Recorded::turn_off`]) is turned off afterwards, by [`turn_off`] in a transaction of its
/// own, which locks the endpoint's row and then its deliveries', as every such transaction
/// does.
///
/// Several deliveries' rows held at once can meet a transaction that locks an endpoint's
/// deliveries in another order (the endpoint turned off, deleted): the database ends one of
/// the two as a deadlock, a conflict. The caller then records each attempt alone (one row
/// held, no cycle).
pub(crate) async fn record_attempts(
    mut conn: Conn<'_>,
    records: Vec<AttemptRecord>,
) -> Result<Vec<Recorded>> {
    conn.begin().await?;
    let held = record_in_order(&mut conn, &records).await;
    let held = conn.finish(held).await?;
    Ok(held
        .into_iter()
        .zip(&records)
        .map(|(held, record)| match held {
            Held::Not => Recorded {
                held: false,
                turn_off: None,
            },
            // Its delivery ended while it was under way (the endpoint turned off): it decides
            // nothing more (the endpoint may have been turned on again since). Or it delivered,
            // or will be retried: it decides nothing about its endpoint.
            Held::AfterItEnded | Held::Usual => Recorded {
                held: true,
                turn_off: None,
            },
            Held::Pending {
                endpoint,
                created_at,
            } => Recorded {
                held: true,
                turn_off: turns_endpoint_off(record, created_at).map(|turn_off| EndpointOff {
                    endpoint,
                    turn_off,
                    at: record.attempted_at,
                }),
            },
        })
        .collect())
}

/// What became of an attempt given to [`record_attempts`].
#[derive(Debug)]
pub(crate) struct Recorded {
    /// Whether it was recorded (`false`: the claim no longer holds the delivery).
    pub(crate) held: bool,
    /// The endpoint it turns off, when the domain's rule says so.
    pub(crate) turn_off: Option<EndpointOff>,
}

/// An endpoint to turn off, as an attempt made at `at` decided.
#[derive(Debug)]
pub(crate) struct EndpointOff {
    endpoint: i64,
    turn_off: TurnOff,
    at: i64,
}

/// Turns the endpoint off, in a transaction of its own (see [`record_attempts`]).
pub(crate) async fn turn_off(mut conn: Conn<'_>, off: EndpointOff) -> Result<()> {
    conn.begin().await?;
    let disabled = disable_after(&mut conn, off.endpoint, &off.turn_off, off.at).await;
    conn.finish(disabled).await
}

/// Turns the endpoint off as `turn_off` says: at once, or only if nothing was delivered to it
/// since the time it names (the event of the delivery given up on), which is read here with
/// the endpoint's row locked; `at`, the attempt's time, is when its pending deliveries end.
async fn disable_after(
    conn: &mut Conn<'_>,
    endpoint: i64,
    turn_off: &TurnOff,
    at: i64,
) -> Result<()> {
    let lock = webhook_endpoints::table
        .find(endpoint)
        .select(webhook_endpoints::id);
    let locked: Option<i64> = run!(
        conn,
        first,
        sqlite: lock,
        postgres: lock.for_no_key_update(),
        mysql: lock.for_update()
    )
    .optional()?;
    if locked.is_none() {
        return Ok(());
    }
    if let Some(since) = turn_off.unless_delivered_since {
        let delivered_since = webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(endpoint))
            .filter(webhook_deliveries::state.eq(DeliveryState::Delivered.as_str()))
            .filter(webhook_deliveries::ended_at.ge(since))
            .select(webhook_deliveries::id);
        let delivered: Option<i64> = run!(conn, first, delivered_since).optional()?;
        if delivered.is_some() {
            return Ok(());
        }
    }
    disable(conn, endpoint, &turn_off.reason, at).await
}

/// Each of `records` recorded ([`record_in`]), in the order of their deliveries' ids; what each
/// held, in the order given.
async fn record_in_order(conn: &mut Conn<'_>, records: &[AttemptRecord]) -> Result<Vec<Held>> {
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&n| records[n].delivery);
    let mut held = Vec::with_capacity(records.len());
    for n in order {
        held.push((n, record_in(conn, &records[n]).await?));
    }
    held.sort_by_key(|(n, _)| *n);
    Ok(held.into_iter().map(|(_, held)| held).collect())
}

/// What [`record_in`] did.
enum Held {
    /// Nothing: the claim no longer holds the delivery.
    Not,
    /// The attempt, on a delivery that ended while it was under way; the delivery as it was.
    AfterItEnded,
    /// The attempt and what becomes of the delivery, of `endpoint`, made at `created_at`.
    Pending { endpoint: i64, created_at: i64 },
    /// The attempt and what becomes of the delivery, for the usual attempt (it delivered, or
    /// will be retried), which decides nothing about its endpoint: neither was read.
    Usual,
}

/// The columns a pending delivery's row gets from `$record`'s attempt (its answer `$status`,
/// `$latency` as stored): its state and next attempt as the result says, one attempt and one
/// try more, the answer, its lease let go.
macro_rules! attempted {
    ($record:expr, $status:expr, $latency:expr) => {{
        let record: &AttemptRecord = $record;
        let (state, next_attempt_at, ended_at) = match record.result {
            AttemptResult::Delivered => (DeliveryState::Delivered, 0, Some(record.attempted_at)),
            AttemptResult::RetryAt(at) => (DeliveryState::Pending, at, None),
            AttemptResult::GaveUp | AttemptResult::Gone => {
                (DeliveryState::Failed, 0, Some(record.attempted_at))
            }
        };
        (
            webhook_deliveries::state.eq(state.as_str()),
            webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
            webhook_deliveries::tries.eq(webhook_deliveries::tries + 1),
            webhook_deliveries::next_attempt_at.eq(next_attempt_at),
            webhook_deliveries::lease_token.eq(0),
            webhook_deliveries::lease_until.eq(0),
            webhook_deliveries::last_status.eq($status),
            webhook_deliveries::last_latency_ms.eq($latency),
            webhook_deliveries::last_error.eq(&record.error),
            webhook_deliveries::ended_at.eq(ended_at),
        )
    }};
}

/// Delivery `delivery`'s row while the claim with token `lease` holds it (a token is never 0,
/// which no claim has).
#[diesel::dsl::auto_type]
fn held_by(delivery: i64, lease: i64) -> _ {
    webhook_deliveries::table
        .find(delivery)
        .filter(webhook_deliveries::lease_token.eq(lease))
        .filter(webhook_deliveries::lease_token.ne(0_i64))
}

async fn record_in(conn: &mut Conn<'_>, record: &AttemptRecord) -> Result<Held> {
    let status = record.status.map(i32::from);
    let latency = i32::try_from(record.latency_ms).unwrap_or(i32::MAX);
    // The usual case first, written without reading the row: an attempt that decides nothing
    // about its endpoint, on a delivery still pending and held by its claim.
    if !record.result.fails_delivery() && record_if_pending(conn, record, status, latency).await? {
        return Ok(Held::Usual);
    }
    // Held by this claim: its token (never 0, which no claim has: a delivery no claim holds,
    // or whose attempt was recorded, has it). A delivery that ended while its attempt was
    // under way (its endpoint turned off, by another delivery's `410` say) keeps the token: the
    // attempt was made and is recorded, and the delivery stays as it ended.
    let held = held_by(record.delivery, record.lease).select((
        webhook_deliveries::endpoint_id,
        webhook_deliveries::created_at,
        webhook_deliveries::state,
    ));
    let Some((endpoint, created_at, now_state)): Option<(i64, i64, String)> =
        run!(conn, locked first, held).optional()?
    else {
        return Ok(Held::Not);
    };
    if now_state != DeliveryState::Pending.as_str() {
        let write = diesel::update(webhook_deliveries::table.find(record.delivery)).set((
            webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
            webhook_deliveries::lease_token.eq(0),
            webhook_deliveries::last_status.eq(status),
            webhook_deliveries::last_latency_ms.eq(latency),
        ));
        run!(conn, execute, write)?;
        insert_attempt(conn, record, status, latency).await?;
        return Ok(Held::AfterItEnded);
    }
    let write = diesel::update(webhook_deliveries::table.find(record.delivery))
        .set(attempted!(record, status, latency));
    run!(conn, execute, write)?;
    insert_attempt(conn, record, status, latency).await?;
    Ok(Held::Pending {
        endpoint,
        created_at,
    })
}

/// Records `record`'s attempt if its delivery is pending and held by its claim, with no read
/// before the write: the delivery's row updated where it is so ([`attempted!`]) and, when it
/// was, the attempt's row inserted; on PostgreSQL both in one statement ([`Then`]: the
/// attempt's row is written only if the update returned the delivery's id). Whether it was.
async fn record_if_pending(
    conn: &mut Conn<'_>,
    record: &AttemptRecord,
    status: Option<i32>,
    latency: i32,
) -> Result<bool> {
    let held_pending = held_by(record.delivery, record.lease)
        .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str()));
    let write = diesel::update(held_pending).set(attempted!(record, status, latency));
    #[cfg(feature = "postgres")]
    if conn.is_postgres() {
        use diesel::sql_types::{BigInt, Integer, Nullable, Text};
        let attempt = webhook_deliveries::table
            .find(record.delivery)
            .filter(FirstId.is_not_null())
            .select((
                webhook_deliveries::id,
                record.attempted_at.into_sql::<BigInt>(),
                status.into_sql::<Nullable<Integer>>(),
                latency.into_sql::<Integer>(),
                record.error.as_deref().into_sql::<Nullable<Text>>(),
            ));
        let attempt = diesel::insert_into(webhook_attempts::table)
            .values(attempt)
            .into_columns((
                webhook_attempts::delivery_id,
                webhook_attempts::attempted_at,
                webhook_attempts::status,
                webhook_attempts::latency_ms,
                webhook_attempts::error,
            ));
        let both = Then(write.returning(webhook_deliveries::id), attempt);
        let recorded: Option<i64> = run_on_postgres!(conn, get_result, both).optional()?;
        return Ok(recorded.is_some());
    }
    if run!(conn, execute, write)? == 0 {
        return Ok(false);
    }
    insert_attempt(conn, record, status, latency).await?;
    Ok(true)
}

/// The attempt's row in `webhook_attempts`, with its `status` and `latency` as stored.
async fn insert_attempt(
    conn: &mut Conn<'_>,
    record: &AttemptRecord,
    status: Option<i32>,
    latency: i32,
) -> Result<()> {
    let attempt = diesel::insert_into(webhook_attempts::table).values((
        webhook_attempts::delivery_id.eq(record.delivery),
        webhook_attempts::attempted_at.eq(record.attempted_at),
        webhook_attempts::status.eq(status),
        webhook_attempts::latency_ms.eq(latency),
        webhook_attempts::error.eq(&record.error),
    ));
    run!(conn, execute, attempt)?;
    Ok(())
}
