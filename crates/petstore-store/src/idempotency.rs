//! `IdempotencyRepository` for both backends: one row per (API key, idempotency key), claimed
//! by an insert that only one request can win, taken over only by a conditional update, and
//! completed in the transaction of what the request wrote.

use diesel::prelude::*;
use petstore_domain::{
    ClaimOutcome, IdempotencyClaim, IdempotencyRepository, IdempotentRequest, StorageError,
    StoredResponse,
};

use crate::schema::idempotency_keys as keys;
use crate::{AnyConnection, Store, StoreError};

const IN_FLIGHT: &str = "in_flight";
/// Records deleted per pruning round.
const PRUNE_BATCH: i64 = 500;
const COMPLETED: &str = "completed";

#[derive(Queryable)]
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

type RecordColumns = (
    keys::fingerprint,
    keys::token,
    keys::state,
    keys::claimed_at,
    keys::created_at,
    keys::response_status,
    keys::response_location,
    keys::response_body,
);
const RECORD_COLUMNS: RecordColumns = (
    keys::fingerprint,
    keys::token,
    keys::state,
    keys::claimed_at,
    keys::created_at,
    keys::response_status,
    keys::response_location,
    keys::response_body,
);

/// A claim token: random, so that a claim taken over cannot be mistaken for the one before.
fn random_token() -> Result<i64, StoreError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(StoreError::Random)?;
    Ok(i64::from_le_bytes(bytes))
}

fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Completes `claim` with `response`; `false` when the claim is no longer held (taken over).
pub(crate) fn complete(
    conn: &mut AnyConnection,
    claim: &IdempotencyClaim,
    response: &StoredResponse,
) -> Result<bool, StoreError> {
    let updated = diesel::update(keys::table.find((claim.owner, claim.key.as_str())))
        .filter(keys::token.eq(claim.token))
        .filter(keys::state.eq(IN_FLIGHT))
        .set((
            keys::state.eq(COMPLETED),
            keys::response_status.eq(Some(i32::from(response.status))),
            keys::response_location.eq(response.location.as_deref()),
            keys::response_body.eq(Some(response.body.as_str())),
        ))
        .execute(conn)?;
    Ok(updated == 1)
}

fn claim(
    conn: &mut AnyConnection,
    request: &IdempotentRequest,
) -> Result<ClaimOutcome, StoreError> {
    let now = seconds(request.now);
    let token = random_token()?;
    let claimed = ClaimOutcome::Claimed(IdempotencyClaim {
        owner: request.owner,
        key: request.key.clone(),
        token,
    });
    let insert = diesel::insert_into(keys::table)
        .values((
            keys::owner_key_id.eq(request.owner),
            keys::idempotency_key.eq(request.key.as_str()),
            keys::fingerprint.eq(request.fingerprint.as_str()),
            keys::token.eq(token),
            keys::state.eq(IN_FLIGHT),
            keys::claimed_at.eq(now),
            keys::created_at.eq(now),
        ))
        .on_conflict_do_nothing();
    // Only one of any number of concurrent inserts (on any instance) adds the row.
    if native!(conn, |c| insert.execute(c))? == 1 {
        return Ok(claimed);
    }
    let record: Option<Record> = keys::table
        .find((request.owner, request.key.as_str()))
        .select(RECORD_COLUMNS)
        .first(conn)
        .optional()?;
    // Deleted (pruned or released) between the insert and the read: the caller retries.
    let Some(record) = record else {
        return Ok(ClaimOutcome::InFlight);
    };
    let expired = record.created_at <= now.saturating_sub(seconds(request.retention));
    let same_request = record.fingerprint == request.fingerprint.as_str();
    let abandoned = record.state == IN_FLIGHT
        && record.claimed_at <= now.saturating_sub(seconds(request.lease));
    if expired || (same_request && abandoned) {
        // Take it over only as read: unless another request just took it (the token changed),
        // or the claim read as abandoned has completed since (its state and time changed).
        let taken = diesel::update(keys::table.find((request.owner, request.key.as_str())))
            .filter(keys::token.eq(record.token))
            .filter(keys::state.eq(record.state.as_str()))
            .filter(keys::claimed_at.eq(record.claimed_at))
            .set((
                keys::fingerprint.eq(request.fingerprint.as_str()),
                keys::token.eq(token),
                keys::state.eq(IN_FLIGHT),
                keys::claimed_at.eq(now),
                keys::created_at.eq(if expired { now } else { record.created_at }),
                keys::response_status.eq(None::<i32>),
                keys::response_location.eq(None::<String>),
                keys::response_body.eq(None::<String>),
            ))
            .execute(conn)?;
        return Ok(if taken == 1 {
            claimed
        } else {
            ClaimOutcome::InFlight
        });
    }
    if !same_request {
        return Ok(ClaimOutcome::Mismatch);
    }
    match (
        record.state.as_str(),
        record.response_status,
        record.response_body,
    ) {
        (COMPLETED, Some(status), Some(body)) => {
            let status = u16::try_from(status).map_err(|_| StoreError::Corrupt {
                table: "idempotency_keys",
                reason: format!("key {:?}: status {status}", request.key.as_str()),
            })?;
            Ok(ClaimOutcome::Completed(StoredResponse {
                status,
                location: record.response_location,
                body,
            }))
        }
        (IN_FLIGHT, _, _) => Ok(ClaimOutcome::InFlight),
        (state, _, _) => Err(StoreError::Corrupt {
            table: "idempotency_keys",
            reason: format!(
                "key {:?}: state {state:?} without a response",
                request.key.as_str()
            ),
        }),
    }
}

impl IdempotencyRepository for Store {
    fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError> {
        self.call(|conn| claim(conn, request))
    }

    fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError> {
        self.call(|conn| complete(conn, claim, response).map(drop))
    }

    fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError> {
        self.call(|conn| {
            diesel::delete(keys::table.find((claim.owner, claim.key.as_str())))
                .filter(keys::token.eq(claim.token))
                .filter(keys::state.eq(IN_FLIGHT))
                .execute(conn)?;
            Ok(())
        })
    }

    /// In batches of [`PRUNE_BATCH`], each its own statement: a backlog (after downtime, or a
    /// busy day) never makes one long delete that a statement timeout cancels every time, or
    /// that holds SQLite's write lock for long.
    fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError> {
        let mut pruned = 0;
        loop {
            let deleted = self.call(|conn| {
                let expired = keys::table
                    .filter(keys::created_at.lt(seconds(before)))
                    .select((keys::owner_key_id, keys::idempotency_key))
                    .limit(PRUNE_BATCH);
                let batch: Vec<(i64, String)> = expired.load(conn)?;
                // One transaction (one commit) for the batch; its first statement writes.
                conn.transaction(|conn| {
                    let mut deleted = 0;
                    for (owner, key) in &batch {
                        deleted += diesel::delete(keys::table.find((owner, key.as_str())))
                            .filter(keys::created_at.lt(seconds(before)))
                            .execute(conn)?;
                    }
                    Ok::<_, StoreError>(deleted)
                })
            })?;
            pruned += deleted as u64;
            if deleted < PRUNE_BATCH as usize {
                return Ok(pruned);
            }
        }
    }
}
