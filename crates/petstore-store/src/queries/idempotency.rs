//! Idempotency records: one row per (API key, idempotency key), claimed by an insert that only
//! one request can win, taken over only by an update conditional on the row it read, and
//! completed in the transaction of what the request wrote. What a claim does with the row it
//! finds is the domain's rule ([`decide_claim`]).

use diesel::prelude::*;
use petstore_domain::{
    ClaimDecision, ClaimOutcome, Fingerprint, IdempotencyClaim, IdempotencyRecord,
    IdempotentRequest, RecordState, StoredResponse, decide_claim,
};

use super::{Result, columns};
use crate::StoreError;
use crate::conn::Conn;
use crate::schema::idempotency_keys as keys;

const IN_FLIGHT: &str = "in_flight";
const COMPLETED: &str = "completed";
/// Records deleted per pruning round.
pub(crate) const PRUNE_BATCH: i64 = 500;

#[derive(Queryable, Selectable)]
#[diesel(table_name = keys)]
struct Record {
    fingerprint: String,
    token: i64,
    state: String,
    claimed_at: i64,
    created_at: i64,
    response_status: Option<i32>,
    response_location: Option<String>,
    response_body: Option<String>,
}

/// A claim token: random, so that a claim taken over cannot be mistaken for the one before.
fn random_token() -> Result<i64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(StoreError::Random)?;
    Ok(i64::from_le_bytes(bytes))
}

fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl Record {
    /// The record as the domain's rule reads it.
    fn to_domain(&self, key: &str) -> Result<IdempotencyRecord> {
        let corrupt = |reason: String| StoreError::Corrupt {
            table: "idempotency_keys",
            reason: format!("key {key:?}: {reason}"),
        };
        let state = match (
            self.state.as_str(),
            self.response_status,
            &self.response_body,
        ) {
            (IN_FLIGHT, _, _) => RecordState::InFlight {
                claimed_at: self.claimed_at,
            },
            (COMPLETED, Some(status), Some(body)) => RecordState::Completed(StoredResponse {
                status: u16::try_from(status).map_err(|_| corrupt(format!("status {status}")))?,
                location: self.response_location.clone(),
                body: body.clone(),
            }),
            (state, _, _) => return Err(corrupt(format!("state {state:?} without a response"))),
        };
        Ok(IdempotencyRecord {
            fingerprint: Fingerprint::from_stored(self.fingerprint.clone()),
            created_at: self.created_at,
            state,
        })
    }
}

/// Completes `claim` with `response`; `false` when the claim is no longer held (taken over).
pub(crate) async fn complete(
    mut conn: Conn<'_>,
    claim: &IdempotencyClaim,
    response: &StoredResponse,
) -> Result<bool> {
    let update = diesel::update(keys::table.find((claim.owner, claim.key.as_str())))
        .filter(keys::token.eq(claim.token))
        .filter(keys::state.eq(IN_FLIGHT))
        .set((
            keys::state.eq(COMPLETED),
            keys::response_status.eq(Some(i32::from(response.status))),
            keys::response_location.eq(response.location.as_deref()),
            keys::response_body.eq(Some(response.body.as_str())),
        ));
    Ok(run!(&mut conn, execute, update)? == 1)
}

/// Claims `request`'s key, or reports what holds it.
pub(crate) async fn claim(mut conn: Conn<'_>, request: IdempotentRequest) -> Result<ClaimOutcome> {
    let conn = &mut conn;
    let now = seconds(request.now);
    let token = random_token()?;
    let claimed = ClaimOutcome::Claimed(IdempotencyClaim {
        owner: request.owner,
        key: request.key.clone(),
        token,
    });
    let record = (
        keys::owner_key_id.eq(request.owner),
        keys::idempotency_key.eq(request.key.as_str()),
        keys::fingerprint.eq(request.fingerprint.as_str()),
        keys::token.eq(token),
        keys::state.eq(IN_FLIGHT),
        keys::claimed_at.eq(now),
        keys::created_at.eq(now),
    );
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    let insert = diesel::insert_into(keys::table)
        .values(record)
        .on_conflict_do_nothing();
    // Only one of any number of concurrent inserts (on any instance) adds the row. (MySQL's
    // form of "do nothing", `ON DUPLICATE KEY UPDATE`, counts the row it found as one matched:
    // there `INSERT IGNORE`, which counts none.)
    let inserted = run!(conn, execute,
        sqlite: insert,
        postgres: insert,
        mysql: diesel::insert_or_ignore_into(keys::table).values(record));
    if inserted? == 1 {
        return Ok(claimed);
    }
    let held = keys::table
        .find((request.owner, request.key.as_str()))
        .select(columns::<Record>());
    let held: Option<Record> = run!(conn, first, held).optional()?;
    // Deleted (pruned or released) between the insert and the read: the caller retries.
    let Some(held) = held else {
        return Ok(ClaimOutcome::InFlight);
    };
    match decide_claim(Some(&held.to_domain(request.key.as_str())?), &request) {
        ClaimDecision::Claim { created_at } => {
            // Take it over only as read: unless another request just took it (the token
            // changed), or the claim read as abandoned has completed since (its state and time
            // changed).
            let take_over = diesel::update(keys::table.find((request.owner, request.key.as_str())))
                .filter(keys::token.eq(held.token))
                .filter(keys::state.eq(held.state.as_str()))
                .filter(keys::claimed_at.eq(held.claimed_at))
                .set((
                    keys::fingerprint.eq(request.fingerprint.as_str()),
                    keys::token.eq(token),
                    keys::state.eq(IN_FLIGHT),
                    keys::claimed_at.eq(now),
                    keys::created_at.eq(created_at),
                    keys::response_status.eq(None::<i32>),
                    keys::response_location.eq(None::<String>),
                    keys::response_body.eq(None::<String>),
                ));
            Ok(if run!(conn, execute, take_over)? == 1 {
                claimed
            } else {
                ClaimOutcome::InFlight
            })
        }
        ClaimDecision::Replay(response) => Ok(ClaimOutcome::Completed(response)),
        ClaimDecision::InFlight => Ok(ClaimOutcome::InFlight),
        ClaimDecision::Mismatch => Ok(ClaimOutcome::Mismatch),
    }
}

/// Frees a claimed key without a response, so that a retry runs again.
pub(crate) async fn release(mut conn: Conn<'_>, claim: IdempotencyClaim) -> Result<()> {
    let delete = diesel::delete(keys::table.find((claim.owner, claim.key.as_str())))
        .filter(keys::token.eq(claim.token))
        .filter(keys::state.eq(IN_FLIGHT));
    run!(&mut conn, execute, delete)?;
    Ok(())
}

/// Deletes up to [`PRUNE_BATCH`] records created before `before`, in one transaction (one
/// commit); returns how many. A backlog (after downtime, or a busy day) is pruned in rounds, so
/// that no delete is long enough for a statement timeout to cancel it every time, or to hold
/// SQLite's write lock for long.
pub(crate) async fn prune_batch(mut conn: Conn<'_>, before: u64) -> Result<u64> {
    let conn = &mut conn;
    let expired = keys::table
        .filter(keys::created_at.lt(seconds(before)))
        .select((keys::owner_key_id, keys::idempotency_key))
        .limit(PRUNE_BATCH);
    let batch: Vec<(i64, String)> = run!(conn, load, expired)?;
    if batch.is_empty() {
        return Ok(0);
    }
    conn.begin().await?;
    let deleted = delete_each(conn, &batch, before).await;
    conn.finish(deleted).await
}

async fn delete_each(conn: &mut Conn<'_>, batch: &[(i64, String)], before: u64) -> Result<u64> {
    let mut deleted = 0;
    for (owner, key) in batch {
        let delete = diesel::delete(keys::table.find((owner, key.as_str())))
            .filter(keys::created_at.lt(seconds(before)));
        deleted += run!(conn, execute, delete)? as u64;
    }
    Ok(deleted)
}
