//! Attempts: each recorded by the claim that made it, with what becomes of its delivery; and
//! the endpoint turned off when the domain's rule says so
//! ([`turns_endpoint_off`]: a `410`, or a delivery given up on with nothing delivered to the
//! endpoint since its event), carried out here.

use diesel::prelude::*;
use petstore_domain::webhook::{
    AttemptRecord, AttemptResult, DeliveryState, TurnOff, turns_endpoint_off,
};

use super::endpoints::disable;
use crate::conn::Conn;
use crate::queries::Result;
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_endpoints};

/// Records an attempt (see [`AttemptRecord`]); `false` when the claim no longer holds the
/// delivery. The attempt is recorded in a transaction that locks the delivery's row alone; an
/// endpoint to turn off ([`turns_endpoint_off`]) is turned off in a second one, which locks
/// the endpoint's row and then its deliveries', as every such transaction does: a lock order
/// without cycles. (Between the two, the endpoint is still on: at worst one more
/// attempt finds it gone again.)
pub(crate) async fn record_attempt(mut conn: Conn<'_>, record: AttemptRecord) -> Result<bool> {
    conn.begin().await?;
    let recorded = record_in(&mut conn, &record).await;
    let (endpoint, created_at) = match conn.finish(recorded).await? {
        Recorded::Not => return Ok(false),
        // Its delivery ended while it was under way (the endpoint turned off): it decides
        // nothing more (the endpoint may have been turned on again since).
        Recorded::AfterItEnded => return Ok(true),
        Recorded::Pending {
            endpoint,
            created_at,
        } => (endpoint, created_at),
    };
    let Some(turn_off) = turns_endpoint_off(&record, created_at) else {
        return Ok(true);
    };
    conn.begin().await?;
    let disabled = disable_after(&mut conn, endpoint, &turn_off, record.attempted_at).await;
    conn.finish(disabled).await?;
    Ok(true)
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

/// What [`record_in`] did.
enum Recorded {
    /// Nothing: the claim no longer holds the delivery.
    Not,
    /// The attempt, on a delivery that ended while it was under way; the delivery as it was.
    AfterItEnded,
    /// The attempt and what becomes of the delivery, of `endpoint`, made at `created_at`.
    Pending { endpoint: i64, created_at: i64 },
}

async fn record_in(conn: &mut Conn<'_>, record: &AttemptRecord) -> Result<Recorded> {
    // Held by this claim: its token (never 0, which no claim has: a delivery no claim holds,
    // or whose attempt was recorded, has it). A delivery that ended while its attempt was
    // under way (its endpoint turned off, by another delivery's `410` say) keeps the token: the
    // attempt was made and is recorded, and the delivery stays as it ended.
    let held = webhook_deliveries::table
        .find(record.delivery)
        .filter(webhook_deliveries::lease_token.eq(record.lease))
        .filter(webhook_deliveries::lease_token.ne(0))
        .select((
            webhook_deliveries::endpoint_id,
            webhook_deliveries::created_at,
            webhook_deliveries::state,
        ));
    let Some((endpoint, created_at, now_state)): Option<(i64, i64, String)> =
        run!(conn, locked first, held).optional()?
    else {
        return Ok(Recorded::Not);
    };
    let status = record.status.map(i32::from);
    let latency = i32::try_from(record.latency_ms).unwrap_or(i32::MAX);
    if now_state != DeliveryState::Pending.as_str() {
        let write = diesel::update(webhook_deliveries::table.find(record.delivery)).set((
            webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
            webhook_deliveries::lease_token.eq(0),
            webhook_deliveries::last_status.eq(status),
            webhook_deliveries::last_latency_ms.eq(latency),
        ));
        run!(conn, execute, write)?;
        insert_attempt(conn, record, status, latency).await?;
        return Ok(Recorded::AfterItEnded);
    }
    let (state, next_attempt_at, ended_at) = match record.result {
        AttemptResult::Delivered => (DeliveryState::Delivered, 0, Some(record.attempted_at)),
        AttemptResult::RetryAt(at) => (DeliveryState::Pending, at, None),
        AttemptResult::GaveUp | AttemptResult::Gone => {
            (DeliveryState::Failed, 0, Some(record.attempted_at))
        }
    };
    let write = diesel::update(webhook_deliveries::table.find(record.delivery)).set((
        webhook_deliveries::state.eq(state.as_str()),
        webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
        webhook_deliveries::tries.eq(webhook_deliveries::tries + 1),
        webhook_deliveries::next_attempt_at.eq(next_attempt_at),
        webhook_deliveries::lease_token.eq(0),
        webhook_deliveries::lease_until.eq(0),
        webhook_deliveries::last_status.eq(status),
        webhook_deliveries::last_latency_ms.eq(latency),
        webhook_deliveries::last_error.eq(&record.error),
        webhook_deliveries::ended_at.eq(ended_at),
    ));
    run!(conn, execute, write)?;
    insert_attempt(conn, record, status, latency).await?;
    Ok(Recorded::Pending {
        endpoint,
        created_at,
    })
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
