//! The outbox: the deliveries written with each change ([`record`], in the change's own
//! transaction), the senders' claims of due deliveries under a lease ([`claim`]), the backlog's
//! size, and pruning: ended deliveries past their retention, deleted endpoints' deliveries and
//! rows, and the pending deliveries of keys that no longer work.

use diesel::dsl::count_star;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use petstore_domain::TraceParent;
use petstore_domain::webhook::{
    Backlog, DeliveryClaim, DeliveryState, DueDelivery, EndpointOwner, EventType, NewEvent,
    take_in_turn,
};

use super::stored::{OPERATORS, events_pattern, owner_id, owner_of};
use super::{DeliveryRow, EndpointRow, failed};
use crate::conn::Conn;
#[cfg(feature = "postgres")]
use crate::conn::{FirstId, Then};
use crate::queries::{Now, Result, columns};
use crate::schema::{webhook_deliveries, webhook_endpoints};

/// How many due deliveries a claim looks at (and locks) for each it may take: a few owners'
/// are among them when one owner's backlog is the oldest but small; a large one fills the
/// window, and its owner is passed over once it has its bound under way. (Each row locked is
/// a write on PostgreSQL: a window of four times the take cost sending a tenth of its speed.)
const CANDIDATES_PER_TAKEN: i64 = 2;
/// Ended deliveries deleted per round of pruning.
pub(crate) const PRUNE_BATCH: i64 = 500;

/// A new event's id: `msg_` and 32 hexadecimal digits of randomness (`webhook-id`).
pub(crate) fn event_id() -> Result<String> {
    let bytes = crate::queries::keys::random_bytes()?;
    let random = bytes.first_chunk().expect("BUG: 32 random bytes hold 16");
    Ok(event_id_of(*random))
}

/// The event id of these 16 bytes: `msg_`, then each byte as two lowercase hex digits.
fn event_id_of(random: [u8; 16]) -> String {
    format!("msg_{:032x}", u128::from_be_bytes(random))
}

/// The statement that records an event: an `INSERT ... SELECT` of a pending delivery, under a
/// new event id, for each enabled endpoint subscribed to its type (`$kind`) that is its owner's
/// (`$owner`, a key's id, while the key works) or the operators'. `$body` is the body's SQL
/// expression, `$trace` the trace it was made in, `$now` the call's [`Now`]. It writes nothing
/// when no endpoint wants the event.
macro_rules! deliveries_of {
    ($kind:expr, $owner:expr, $trace:expr, $body:expr, $now:expr) => {{
        let (kind, owner, now): (EventType, Option<i64>, i64) = ($kind, $owner, $now.unix());
        let trace = $trace.map(|trace: TraceParent| trace.to_string());
        let endpoints = webhook_endpoints::table
            .filter(sendable!(now))
            .filter(webhook_endpoints::events.like(events_pattern(kind)))
            .filter(
                webhook_endpoints::owner_key_id
                    .eq(OPERATORS)
                    .or(webhook_endpoints::owner_key_id.eq(owner.unwrap_or(OPERATORS))),
            )
            .select((
                webhook_endpoints::id,
                event_id()?.into_sql::<Text>(),
                kind.as_str().into_sql::<Text>(),
                $body,
                DeliveryState::Pending.as_str().into_sql::<Text>(),
                0.into_sql::<diesel::sql_types::Integer>(),
                0.into_sql::<diesel::sql_types::Integer>(),
                now.into_sql::<BigInt>(),
                0_i64.into_sql::<BigInt>(),
                0_i64.into_sql::<BigInt>(),
                now.into_sql::<BigInt>(),
                trace.into_sql::<Nullable<Text>>(),
            ));
        diesel::insert_into(webhook_deliveries::table)
            .values(endpoints)
            .into_columns((
                webhook_deliveries::endpoint_id,
                webhook_deliveries::event_id,
                webhook_deliveries::event_type,
                webhook_deliveries::body,
                webhook_deliveries::state,
                webhook_deliveries::attempts,
                webhook_deliveries::tries,
                webhook_deliveries::next_attempt_at,
                webhook_deliveries::lease_token,
                webhook_deliveries::lease_until,
                webhook_deliveries::created_at,
                webhook_deliveries::trace_context,
            ))
    }};
}

/// Records `event` ([`deliveries_of!`]) in the transaction of the change that produced it.
pub(crate) async fn record(conn: &mut Conn<'_>, event: &NewEvent, now: Now) -> Result<()> {
    let body = event.body.as_str().into_sql::<Text>();
    let deliveries = deliveries_of!(event.kind, event.owner, event.trace, body, now);
    run!(conn, execute, deliveries)?;
    Ok(())
}

/// Runs `insert`, a write of one row that returns its `id`, with the deliveries of its event
/// (of `kind`, owned by `owner`, made in `trace`), whose body has that id
/// ([`BodyAroundId`](petstore_domain::webhook::BodyAroundId)),
/// in one statement on PostgreSQL ([`Then`]): one round trip, atomic without a transaction of
/// its own. Answers the row's id.
#[cfg(feature = "postgres")]
pub(crate) async fn insert_with_event<I>(
    conn: &mut Conn<'_>,
    insert: I,
    (kind, owner, trace): (EventType, Option<i64>, Option<TraceParent>),
    body: &petstore_domain::webhook::BodyAroundId,
    now: Now,
) -> Result<i64>
where
    I: diesel::query_builder::QueryFragment<diesel::pg::Pg> + diesel::query_builder::QueryId + Send,
{
    let body = (body.before.as_str().into_sql::<Text>())
        .concat(FirstId)
        .concat(body.after.as_str());
    let deliveries = deliveries_of!(kind, owner, trace, body, now);
    Ok(run_on_postgres!(
        conn,
        get_result,
        Then(insert, deliveries)
    )?)
}

/// Claims due deliveries (see the module's documentation).
pub(crate) async fn claim(mut conn: Conn<'_>, claim: DeliveryClaim) -> Result<Vec<DueDelivery>> {
    conn.begin().await?;
    let claimed = claim_in(&mut conn, &claim).await;
    conn.finish(claimed).await
}

async fn claim_in(conn: &mut Conn<'_>, claim: &DeliveryClaim) -> Result<Vec<DueDelivery>> {
    // Only deliveries to endpoints that may be sent to (an endpoint turned off fails its
    // pending ones, but one recorded as it was turned off, or redelivered then, waits for it to
    // be on again), of owners with room left. A subquery, not a join: the endpoints' rows are
    // not locked (the writes recording events check them as foreign keys).
    let full: Vec<i64> = claim.full_owners().map(owner_id).collect();
    let endpoints = webhook_endpoints::table
        .filter(sendable!(claim.now))
        .filter(webhook_endpoints::owner_key_id.ne_all(&full))
        .select(webhook_endpoints::id);
    let window = i64::from(claim.limit).saturating_mul(CANDIDATES_PER_TAKEN);
    // Each with its endpoint's owner, read by a subquery in the select list: only the
    // deliveries' rows are locked (`SKIP LOCKED`: senders on other instances take others at
    // once), and no round trip more.
    let owner = webhook_endpoints::table
        .filter(webhook_endpoints::id.eq(webhook_deliveries::endpoint_id))
        .select(webhook_endpoints::owner_key_id)
        .single_value();
    let due = webhook_deliveries::table
        .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str()))
        .filter(webhook_deliveries::next_attempt_at.le(claim.now))
        .filter(webhook_deliveries::lease_until.le(claim.now))
        .filter(webhook_deliveries::endpoint_id.eq_any(endpoints))
        .filter(webhook_deliveries::endpoint_id.ne_all(&claim.skip_endpoints))
        .order((
            webhook_deliveries::next_attempt_at.asc(),
            webhook_deliveries::id.asc(),
        ))
        .limit(window)
        .select((webhook_deliveries::id, owner));
    let candidates: Vec<(i64, Option<i64>)> = run!(
        conn,
        load,
        sqlite: due,
        postgres: due.for_update().skip_locked(),
        mysql: due.for_update().skip_locked()
    )?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    // Owners in turn (the domain's rule).
    let candidates: Vec<(i64, EndpointOwner)> = candidates
        .into_iter()
        .filter_map(|(id, owner)| Some((id, owner_of(owner?))))
        .collect();
    let ids = take_in_turn(&candidates, claim);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let lease = diesel::update(
        webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)),
    )
    .set((
        webhook_deliveries::lease_token.eq(claim.token),
        webhook_deliveries::lease_until.eq(claim.lease_until),
    ));
    run!(conn, execute, lease)?;
    let leased = webhook_deliveries::table
        .inner_join(webhook_endpoints::table)
        .filter(webhook_deliveries::id.eq_any(&ids))
        .filter(webhook_endpoints::enabled.eq(true))
        .order((
            webhook_deliveries::next_attempt_at.asc(),
            webhook_deliveries::id.asc(),
        ))
        .select((columns::<DeliveryRow>(), columns::<EndpointRow>()));
    let rows: Vec<(DeliveryRow, EndpointRow)> = run!(conn, load, leased)?;
    let mut due = Vec::with_capacity(rows.len());
    for (delivery, endpoint) in rows {
        let decoded = delivery
            .event_type()
            .and_then(|event_type| Ok((event_type, endpoint.secrets(claim.now)?)));
        match decoded {
            Ok((event_type, secrets)) => due.push(DueDelivery {
                event_type,
                secrets,
                id: delivery.id,
                event_id: delivery.event_id,
                body: delivery.body,
                endpoint_id: endpoint.id,
                owner: owner_of(endpoint.owner_key_id),
                url: endpoint.url,
                tries: u32::try_from(delivery.tries).unwrap_or(0),
                lease: claim.token,
                // A context that does not read back (not the service's writing) is no link.
                trace: delivery
                    .trace_context
                    .as_deref()
                    .and_then(TraceParent::parse),
            }),
            // A row the service did not write as it is: failed, with why, rather than claimed
            // again and again (and ahead of every other, being the oldest).
            Err(error) => {
                log::error!("webhook delivery {} cannot be sent: {error}", delivery.id);
                let why = format!("could not be read: {error}");
                let fail = diesel::update(webhook_deliveries::table.find(delivery.id)).set((
                    failed(&why, claim.now),
                    webhook_deliveries::lease_token.eq(0),
                ));
                run!(conn, execute, fail)?;
            }
        }
    }
    Ok(due)
}

/// The pending deliveries to endpoints that may be sent to, and the oldest one's creation.
pub(crate) async fn backlog(mut conn: Conn<'_>, now: Now) -> Result<Backlog> {
    let enabled = webhook_endpoints::table
        .filter(sendable!(now.unix()))
        .select(webhook_endpoints::id);
    let query = webhook_deliveries::table
        .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str()))
        .filter(webhook_deliveries::endpoint_id.eq_any(enabled))
        .select((
            count_star(),
            diesel::dsl::min(webhook_deliveries::created_at),
        ));
    let (pending, oldest): (i64, Option<i64>) = run!(&mut conn, first, query)?;
    Ok(Backlog {
        pending: u64::try_from(pending).unwrap_or(0),
        oldest_created_at: oldest,
    })
}

/// How long a deleted endpoint stays marked before its deliveries and row are removed: longer
/// than any transaction that may still be recording an event for it runs.
const PURGE_AFTER: i64 = 60;

/// Deletes up to [`PRUNE_BATCH`] deliveries that ended before `before`, or of an endpoint
/// deleted more than [`PURGE_AFTER`] seconds ago, with their attempts; once a deleted
/// endpoint has none left, its row. First, it ends as failed up to as many pending deliveries
/// of endpoints whose key was revoked or has expired (never to be sent). Returns how many
/// deliveries it deleted or ended.
pub(crate) async fn prune_batch(mut conn: Conn<'_>, before: i64, now: Now) -> Result<u64> {
    let conn = &mut conn;
    let now = now.unix();
    let failed = fail_stranded(conn, now).await?;
    let deleted_endpoints = webhook_endpoints::table
        .filter(webhook_endpoints::deleted_at.lt(now - PURGE_AFTER))
        .select(webhook_endpoints::id);
    let of_deleted = webhook_deliveries::table
        .filter(webhook_deliveries::endpoint_id.eq_any(deleted_endpoints))
        .select(webhook_deliveries::id)
        .limit(PRUNE_BATCH);
    let ids: Vec<i64> = run!(conn, load, of_deleted)?;
    if !ids.is_empty() {
        let delete =
            diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)));
        return Ok(failed + run!(conn, execute, delete)? as u64);
    }
    let ended = webhook_deliveries::table
        .filter(webhook_deliveries::ended_at.lt(before))
        .select(webhook_deliveries::id)
        .limit(PRUNE_BATCH);
    let ids: Vec<i64> = run!(conn, load, ended)?;
    if ids.is_empty() {
        // Deleted endpoints with no delivery left: their rows.
        let gone = diesel::delete(
            webhook_endpoints::table
                .filter(webhook_endpoints::deleted_at.lt(now - PURGE_AFTER))
                .filter(diesel::dsl::not(diesel::dsl::exists(
                    webhook_deliveries::table
                        .filter(webhook_deliveries::endpoint_id.eq(webhook_endpoints::id)),
                ))),
        );
        run!(conn, execute, gone)?;
        return Ok(failed);
    }
    // Still ended (not redelivered since it was read).
    let delete =
        diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)))
            .filter(webhook_deliveries::ended_at.lt(before));
    Ok(failed + run!(conn, execute, delete)? as u64)
}

/// Ends as failed up to [`PRUNE_BATCH`] pending deliveries of endpoints whose key was revoked
/// or has expired (never to be sent: [`key_works!`]); how many.
async fn fail_stranded(conn: &mut Conn<'_>, now: i64) -> Result<u64> {
    let of_gone_keys = webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.ne(OPERATORS))
        .filter(diesel::dsl::not(key_works!(now)))
        .select(webhook_endpoints::id);
    let stranded = webhook_deliveries::table
        .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str()))
        .filter(webhook_deliveries::endpoint_id.eq_any(of_gone_keys))
        .select(webhook_deliveries::id)
        .limit(PRUNE_BATCH);
    let ids: Vec<i64> = run!(conn, load, stranded)?;
    if ids.is_empty() {
        return Ok(0);
    }
    let fail = diesel::update(
        webhook_deliveries::table
            .filter(webhook_deliveries::id.eq_any(&ids))
            .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str())),
    )
    .set(failed(
        "not sent: the API key that owns the endpoint was revoked or has expired",
        now,
    ));
    Ok(run!(conn, execute, fail)? as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_event_id_spells_each_byte_in_order_as_two_lowercase_hex_digits() {
        assert_eq!(
            super::event_id_of([0; 16]),
            format!("msg_{}", "0".repeat(32))
        );
        let bytes = [
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x0a, 0xf0, 0xff, 0x10, 0x02,
            0x30, 0x04,
        ];
        assert_eq!(
            super::event_id_of(bytes),
            "msg_0123456789abcdef000af0ff10023004"
        );
    }

    #[test]
    fn an_event_id_is_msg_and_32_lowercase_hex_digits_of_randomness() {
        let id = super::event_id().expect("the system has randomness");
        let digits = id
            .strip_prefix("msg_")
            .expect("an event id starts with msg_");
        assert_eq!(digits.len(), 32, "{id}");
        assert!(
            digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "{id}"
        );
        assert_ne!(super::event_id().expect("the system has randomness"), id);
    }
}
