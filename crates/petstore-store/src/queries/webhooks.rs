//! Webhooks: endpoints, the outbox of deliveries written with each change ([`record`]), and
//! what the senders do with it: claim due deliveries under a lease, record each attempt.
//!
//! A claim takes the oldest due deliveries that no unexpired lease holds and leases them, in a
//! transaction: on PostgreSQL and MariaDB their rows are read `FOR UPDATE SKIP LOCKED`, so that
//! senders on several instances claim different deliveries at once without waiting for each
//! other; on SQLite the transaction holds the database. An attempt is recorded only by the
//! claim that still holds the delivery (its token, cleared when an attempt is recorded or the
//! delivery redelivered): a sender whose delivery was claimed again after its lease ran out
//! (it was slow, or stopped) records nothing, and the delivery is sent by whoever claimed it
//! next: at least once.

use diesel::dsl::count_star;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use petstore_domain::webhook::{
    Attempt, AttemptRecord, AttemptResult, Backlog, Delivery, DeliveryClaim, DeliveryState,
    DueDelivery, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointWrite, EventSet, EventType,
    MAX_ENDPOINTS, NewEvent, SigningSecret, WebhookEndpoint, same_receiver, take_in_turn,
};
use petstore_domain::{Page, PageRequest};

use super::{Result, columns, overfetch, unix_now};
use crate::StoreError;
use crate::conn::Conn;
use crate::schema::{
    api_keys, webhook_attempts, webhook_deliveries, webhook_endpoints, webhook_operator_lock,
};

/// The `owner_key_id` of the operators' endpoints (no key has id 0).
const OPERATORS: i64 = 0;
/// How many due deliveries a claim looks at (and locks) for each it may take: a few owners'
/// are among them when one owner's backlog is the oldest but small; a large one fills the
/// window, and its owner is passed over once it has its bound under way. (Each row locked is
/// a write on PostgreSQL: a window of four times the take cost sending a tenth of its speed.)
const CANDIDATES_PER_TAKEN: i64 = 2;

/// Whether a `webhook_endpoints` row may be sent to at `$now` (Unix seconds): it is on, and
/// it is the operators' or its key still works (neither revoked nor expired). A revoked or
/// expired key's events are no longer recorded nor sent; its endpoints stay, for the operators
/// to see and turn off.
macro_rules! sendable {
    ($now:expr) => {
        webhook_endpoints::enabled.eq(true).and(
            webhook_endpoints::owner_key_id
                .eq(OPERATORS)
                .or(diesel::dsl::exists(
                    api_keys::table
                        .filter(api_keys::id.eq(webhook_endpoints::owner_key_id))
                        .filter(api_keys::revoked_at.is_null())
                        .filter(
                            api_keys::expires_at
                                .is_null()
                                .or(api_keys::expires_at.gt($now)),
                        ),
                )),
        )
    };
}
/// Ended deliveries deleted per round of pruning.
pub(crate) const PRUNE_BATCH: i64 = 500;
/// The most attempts a delivery's record shows (the latest).
const MAX_ATTEMPTS_SHOWN: i64 = 100;

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_endpoints)]
struct EndpointRow {
    id: i64,
    owner_key_id: i64,
    url: String,
    events: String,
    description: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_until: Option<i64>,
    enabled: bool,
    disabled_reason: Option<String>,
    created_at: i64,
}

impl EndpointRow {
    fn endpoint(&self) -> Result<WebhookEndpoint> {
        let events = EventSet::from_stored(&self.events).ok_or_else(|| StoreError::Corrupt {
            table: "webhook_endpoints",
            reason: format!("endpoint {} has events {:?}", self.id, self.events),
        })?;
        Ok(WebhookEndpoint {
            id: self.id,
            url: self.url.clone(),
            events,
            description: self.description.clone(),
            enabled: self.enabled,
            disabled_reason: self.disabled_reason.clone(),
            previous_secret_expires_at: self
                .previous_secret_until
                .filter(|until| *until > unix_now()),
            created_at: self.created_at,
            owner: owner_of(self.owner_key_id),
        })
    }

    /// The secrets that sign a delivery at `now`: the current one, and the previous while its
    /// grace lasts.
    fn secrets(&self, now: i64) -> Result<Vec<SigningSecret>> {
        let current = self.stored_secret(&self.secret)?;
        let previous = match (&self.previous_secret, self.previous_secret_until) {
            (Some(previous), Some(until)) if until > now => Some(self.stored_secret(previous)?),
            _ => None,
        };
        Ok(std::iter::once(current).chain(previous).collect())
    }

    fn stored_secret(&self, stored: &str) -> Result<SigningSecret> {
        SigningSecret::from_stored(stored).ok_or_else(|| StoreError::Corrupt {
            table: "webhook_endpoints",
            reason: format!(
                "endpoint {} has a secret that is not base64 of a key",
                self.id
            ),
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries)]
struct DeliveryRow {
    id: i64,
    endpoint_id: i64,
    event_id: String,
    event_type: String,
    body: String,
    state: String,
    attempts: i32,
    tries: i32,
    next_attempt_at: i64,
    last_status: Option<i32>,
    last_latency_ms: Option<i32>,
    last_error: Option<String>,
    created_at: i64,
}

impl DeliveryRow {
    fn corrupt(&self, what: &str) -> StoreError {
        StoreError::Corrupt {
            table: "webhook_deliveries",
            reason: format!("delivery {} has {what}", self.id),
        }
    }

    fn event_type(&self) -> Result<EventType> {
        self.event_type
            .parse()
            .map_err(|_| self.corrupt(&format!("event type {:?}", self.event_type)))
    }

    fn delivery(self) -> Result<Delivery> {
        let state: DeliveryState = self
            .state
            .parse()
            .map_err(|_| self.corrupt(&format!("state {:?}", self.state)))?;
        Ok(Delivery {
            id: self.id,
            event_type: self.event_type()?,
            endpoint_id: self.endpoint_id,
            state,
            attempts: u32::try_from(self.attempts).unwrap_or(0),
            next_attempt_at: (state == DeliveryState::Pending).then_some(self.next_attempt_at),
            last_status: self
                .last_status
                .and_then(|status| u16::try_from(status).ok()),
            last_latency_ms: self.last_latency_ms.and_then(|ms| u32::try_from(ms).ok()),
            last_error: self.last_error,
            created_at: self.created_at,
            event_id: self.event_id,
            body: self.body,
        })
    }
}

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

/// A new event's id: `msg_` and 32 hexadecimal digits of randomness (`webhook-id`).
pub(crate) fn event_id() -> Result<String> {
    let bytes = super::keys::random_bytes()?;
    let mut id = String::from("msg_");
    for byte in &bytes[..16] {
        id.push_str(&format!("{byte:02x}"));
    }
    Ok(id)
}

/// A new signing secret.
pub(crate) fn random_secret() -> Result<SigningSecret> {
    Ok(SigningSecret::from_random_bytes(
        super::keys::random_bytes()?
    ))
}

/// Records `event` in the transaction of the change that produced it: a pending delivery for
/// each enabled endpoint subscribed to its type that is its key's (while the key works) or the
/// operators'. One statement (`INSERT ... SELECT`), which writes nothing when no endpoint
/// wants the event.
pub(crate) async fn record(conn: &mut Conn<'_>, event: &NewEvent) -> Result<()> {
    let (id, now) = (event_id()?, unix_now());
    let endpoints = webhook_endpoints::table
        .filter(sendable!(now))
        .filter(webhook_endpoints::events.like(EventSet::stored_pattern(event.kind)))
        .filter(
            webhook_endpoints::owner_key_id
                .eq(OPERATORS)
                .or(webhook_endpoints::owner_key_id.eq(event.owner.unwrap_or(OPERATORS))),
        )
        .select((
            webhook_endpoints::id,
            id.into_sql::<Text>(),
            event.kind.as_str().into_sql::<Text>(),
            event.body.as_str().into_sql::<Text>(),
            DeliveryState::Pending.as_str().into_sql::<Text>(),
            0.into_sql::<diesel::sql_types::Integer>(),
            0.into_sql::<diesel::sql_types::Integer>(),
            now.into_sql::<BigInt>(),
            0_i64.into_sql::<BigInt>(),
            0_i64.into_sql::<BigInt>(),
            now.into_sql::<BigInt>(),
        ));
    let insert = diesel::insert_into(webhook_deliveries::table)
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
        ));
    run!(conn, execute, insert)?;
    Ok(())
}

/// The stored owner of `owner`'s endpoints.
fn owner_id(owner: EndpointOwner) -> i64 {
    owner.key().unwrap_or(OPERATORS)
}

/// The owner a stored `owner_key_id` names.
fn owner_of(stored: i64) -> EndpointOwner {
    match stored {
        OPERATORS => EndpointOwner::Operator,
        key => EndpointOwner::Key(key),
    }
}

/// Locks `owner`'s row for the transaction (a key's in `api_keys`, the operators' one row of
/// `webhook_operator_lock`), so that the transactions that count or compare an owner's
/// endpoints before they add or re-address one run one after the other.
async fn lock_owner(conn: &mut Conn<'_>, owner: EndpointOwner) -> Result<()> {
    match owner {
        EndpointOwner::Key(key) => {
            let lock = api_keys::table.find(key).select(api_keys::id);
            let _: Option<i64> = run!(conn, locked first, lock).optional()?;
        }
        EndpointOwner::Operator => {
            let lock = webhook_operator_lock::table
                .find(OPERATORS)
                .select(webhook_operator_lock::id);
            let _: Option<i64> = run!(conn, locked first, lock).optional()?;
        }
    }
    Ok(())
}

/// Another of `owner`'s endpoints (not `except`) that reaches the receiver `url` does
/// ([`same_receiver`]: its query aside), if there is one. An owner has at most
/// [`MAX_ENDPOINTS`]: they are read and compared here.
async fn endpoint_at(
    conn: &mut Conn<'_>,
    owner: EndpointOwner,
    url: &str,
    except: i64,
) -> Result<Option<i64>> {
    let query = webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
        .filter(webhook_endpoints::deleted_at.is_null())
        .filter(webhook_endpoints::id.ne(except))
        .select((webhook_endpoints::id, webhook_endpoints::url));
    let theirs: Vec<(i64, String)> = run!(conn, load, query)?;
    Ok(theirs
        .into_iter()
        .find(|(_, theirs)| same_receiver(theirs, url))
        .map(|(id, _)| id))
}

/// Endpoint `id` if `owner`'s, its row locked for the transaction.
async fn locked_endpoint(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
) -> Result<Option<EndpointRow>> {
    let query = webhook_endpoints::table
        .find(id)
        .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
        .filter(webhook_endpoints::deleted_at.is_null())
        .select(columns::<EndpointRow>());
    // On PostgreSQL `FOR NO KEY UPDATE`: it does not block the foreign-key checks of the
    // deliveries that writes record for this endpoint meanwhile (`FOR UPDATE` would).
    Ok(run!(
        conn,
        first,
        sqlite: query,
        postgres: query.for_no_key_update(),
        mysql: query.for_update()
    )
    .optional()?)
}

/// Endpoint `id` if `owner`'s.
async fn endpoint_row(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
) -> Result<Option<EndpointRow>> {
    let query = webhook_endpoints::table
        .find(id)
        .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
        .filter(webhook_endpoints::deleted_at.is_null())
        .select(columns::<EndpointRow>());
    Ok(run!(conn, first, query).optional()?)
}

/// Creates an endpoint unless its owner has [`MAX_ENDPOINTS`] or one at the same URL: the
/// owner's row is locked while they are counted and compared ([`lock_owner`]), so that creates
/// at once do not pass either rule together.
pub(crate) async fn create(
    mut conn: Conn<'_>,
    owner: EndpointOwner,
    spec: EndpointSpec,
    secret: SigningSecret,
) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>> {
    conn.begin().await?;
    let created = create_in(&mut conn, owner, &spec, &secret).await;
    conn.finish(created).await.map(|written| match written {
        EndpointWrite::Done(endpoint) => EndpointWrite::Done((endpoint, secret)),
        EndpointWrite::NotFound => EndpointWrite::NotFound,
        EndpointWrite::LimitReached => EndpointWrite::LimitReached,
        EndpointWrite::UrlTaken(id) => EndpointWrite::UrlTaken(id),
    })
}

async fn create_in(
    conn: &mut Conn<'_>,
    owner: EndpointOwner,
    spec: &EndpointSpec,
    secret: &SigningSecret,
) -> Result<EndpointWrite<WebhookEndpoint>> {
    lock_owner(conn, owner).await?;
    let count = webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
        .filter(webhook_endpoints::deleted_at.is_null())
        .select(count_star());
    let existing: i64 = run!(conn, first, count)?;
    if usize::try_from(existing).unwrap_or(usize::MAX) >= MAX_ENDPOINTS {
        return Ok(EndpointWrite::LimitReached);
    }
    if let Some(taken) = endpoint_at(conn, owner, spec.url.as_str(), 0).await? {
        return Ok(EndpointWrite::UrlTaken(taken));
    }
    let insert = diesel::insert_into(webhook_endpoints::table).values((
        webhook_endpoints::owner_key_id.eq(owner_id(owner)),
        webhook_endpoints::url.eq(spec.url.as_str()),
        webhook_endpoints::events.eq(spec.events.to_stored()),
        webhook_endpoints::description.eq(&spec.description),
        webhook_endpoints::secret.eq(secret.to_stored()),
        webhook_endpoints::enabled.eq(true),
        webhook_endpoints::created_at.eq(unix_now()),
    ));
    let row: EndpointRow = run_returning!(conn, get_result,
        insert.returning(columns::<EndpointRow>()),
        mysql(c) => mysql_inserted!(c, insert, webhook_endpoints::table, EndpointRow))?;
    Ok(EndpointWrite::Done(row.endpoint()?))
}

/// The owner's endpoints, in id order.
pub(crate) async fn list(mut conn: Conn<'_>, owner: EndpointOwner) -> Result<Vec<WebhookEndpoint>> {
    let query = webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
        .filter(webhook_endpoints::deleted_at.is_null())
        .order(webhook_endpoints::id.asc())
        .select(columns::<EndpointRow>());
    let rows: Vec<EndpointRow> = run!(&mut conn, load, query)?;
    rows.iter().map(EndpointRow::endpoint).collect()
}

/// Endpoint `id`, if `owner`'s.
pub(crate) async fn find(
    mut conn: Conn<'_>,
    id: i64,
    owner: EndpointOwner,
) -> Result<Option<WebhookEndpoint>> {
    endpoint_row(&mut conn, id, owner)
        .await?
        .map(|row| row.endpoint())
        .transpose()
}

/// Applies `update` to endpoint `id` (`owner`'s). Turning it off fails its pending deliveries;
/// turning it on clears why it was off. A new URL that another of the owner's endpoints has is
/// refused, the owner's row locked first as a create locks it (then the endpoint's: one order).
pub(crate) async fn update(
    mut conn: Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    update: EndpointUpdate,
) -> Result<EndpointWrite<WebhookEndpoint>> {
    conn.begin().await?;
    let updated = update_in(&mut conn, id, owner, &update).await;
    conn.finish(updated).await
}

async fn update_in(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    update: &EndpointUpdate,
) -> Result<EndpointWrite<WebhookEndpoint>> {
    if update.url.is_some() {
        lock_owner(conn, owner).await?;
    }
    let Some(mut row) = locked_endpoint(conn, id, owner).await? else {
        return Ok(EndpointWrite::NotFound);
    };
    if let Some(url) = &update.url {
        if let Some(taken) = endpoint_at(conn, owner, url.as_str(), id).await? {
            return Ok(EndpointWrite::UrlTaken(taken));
        }
        row.url = url.as_str().to_owned();
    }
    if let Some(events) = update.events {
        row.events = events.to_stored();
    }
    if let Some(description) = &update.description {
        row.description.clone_from(description);
    }
    match update.enabled {
        Some(true) if !row.enabled => {
            row.enabled = true;
            row.disabled_reason = None;
        }
        Some(false) if row.enabled => {
            row.enabled = false;
            row.disabled_reason = Some("turned off by its owner".to_owned());
            fail_pending(conn, id, "the endpoint was turned off").await?;
        }
        _ => {}
    }
    let write = diesel::update(webhook_endpoints::table.find(id)).set((
        webhook_endpoints::url.eq(&row.url),
        webhook_endpoints::events.eq(&row.events),
        webhook_endpoints::description.eq(&row.description),
        webhook_endpoints::enabled.eq(row.enabled),
        webhook_endpoints::disabled_reason.eq(&row.disabled_reason),
    ));
    run!(conn, execute, write)?;
    Ok(EndpointWrite::Done(row.endpoint()?))
}

/// Ends endpoint `id`'s pending deliveries as failed, with `why`.
async fn fail_pending(conn: &mut Conn<'_>, id: i64, why: &str) -> Result<()> {
    let now = unix_now();
    let fail = diesel::update(
        webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(id))
            .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str())),
    )
    .set((
        webhook_deliveries::state.eq(DeliveryState::Failed.as_str()),
        webhook_deliveries::last_error.eq(why),
        webhook_deliveries::lease_until.eq(0),
        webhook_deliveries::ended_at.eq(now),
    ));
    run!(conn, execute, fail)?;
    Ok(())
}

/// Turns endpoint `id` off, with `why`, and fails its pending deliveries, unless it is off
/// already. The endpoint's row is locked first, then its deliveries' (the order every
/// transaction that takes both follows).
async fn disable(conn: &mut Conn<'_>, id: i64, why: &str) -> Result<()> {
    let write = diesel::update(
        webhook_endpoints::table
            .find(id)
            .filter(webhook_endpoints::enabled.eq(true)),
    )
    .set((
        webhook_endpoints::enabled.eq(false),
        webhook_endpoints::disabled_reason.eq(why),
    ));
    if run!(conn, execute, write)? == 0 {
        return Ok(());
    }
    fail_pending(conn, id, &format!("the endpoint was turned off: {why}")).await
}

/// Deletes endpoint `id` (`owner`'s): marks it deleted and off at once (no event is recorded
/// for it from then on, none of its deliveries is claimed, it is no longer found); its
/// deliveries, their attempts and its row are removed in the background ([`prune_batch`]), in
/// batches, so that deleting an endpoint with a long log neither runs out its statement
/// timeout nor holds rows the writes recording events need.
pub(crate) async fn delete(mut conn: Conn<'_>, id: i64, owner: EndpointOwner) -> Result<bool> {
    let mark = diesel::update(
        webhook_endpoints::table
            .find(id)
            .filter(webhook_endpoints::owner_key_id.eq(owner_id(owner)))
            .filter(webhook_endpoints::deleted_at.is_null()),
    )
    .set((
        webhook_endpoints::deleted_at.eq(unix_now()),
        webhook_endpoints::enabled.eq(false),
        webhook_endpoints::disabled_reason.eq("deleted"),
    ));
    Ok(run!(&mut conn, execute, mark)? > 0)
}

/// Gives endpoint `id` (`owner`'s) `secret`; the current one signs too until `grace_until`.
pub(crate) async fn rotate(
    mut conn: Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    grace_until: i64,
    secret: SigningSecret,
) -> Result<Option<(WebhookEndpoint, SigningSecret)>> {
    conn.begin().await?;
    let rotated = rotate_in(&mut conn, id, owner, grace_until, &secret).await;
    conn.finish(rotated)
        .await
        .map(|endpoint| endpoint.map(|endpoint| (endpoint, secret)))
}

async fn rotate_in(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    grace_until: i64,
    secret: &SigningSecret,
) -> Result<Option<WebhookEndpoint>> {
    let Some(mut row) = locked_endpoint(conn, id, owner).await? else {
        return Ok(None);
    };
    let previous = std::mem::replace(&mut row.secret, secret.to_stored());
    row.previous_secret = Some(previous);
    row.previous_secret_until = Some(grace_until);
    let write = diesel::update(webhook_endpoints::table.find(id)).set((
        webhook_endpoints::secret.eq(&row.secret),
        webhook_endpoints::previous_secret.eq(&row.previous_secret),
        webhook_endpoints::previous_secret_until.eq(row.previous_secret_until),
    ));
    run!(conn, execute, write)?;
    Ok(Some(row.endpoint()?))
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
            }),
            // A row the service did not write as it is: failed, with why, rather than claimed
            // again and again (and ahead of every other, being the oldest).
            Err(error) => {
                log::error!("webhook delivery {} cannot be sent: {error}", delivery.id);
                let fail = diesel::update(webhook_deliveries::table.find(delivery.id)).set((
                    webhook_deliveries::state.eq(DeliveryState::Failed.as_str()),
                    webhook_deliveries::last_error.eq(format!("could not be read: {error}")),
                    webhook_deliveries::lease_token.eq(0),
                    webhook_deliveries::lease_until.eq(0),
                    webhook_deliveries::ended_at.eq(claim.now),
                ));
                run!(conn, execute, fail)?;
            }
        }
    }
    Ok(due)
}

/// Records an attempt (see [`AttemptRecord`]); `false` when the claim no longer holds the
/// delivery. The attempt is recorded in a transaction that locks the delivery's row alone; an
/// endpoint to turn off (it answered `410`, or failed throughout) is turned off in a second one,
/// which locks the endpoint's row and then its deliveries', as every such transaction does: a
/// lock order without cycles. (Between the two, the endpoint is still on: at worst one more
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
    let why = match (record.result, &record.error, record.status) {
        (AttemptResult::Gone, _, _) => "it answered 410 Gone".to_owned(),
        (AttemptResult::GaveUp, Some(error), _) => failed_throughout(error),
        (AttemptResult::GaveUp, None, Some(status)) => failed_throughout(&format!("HTTP {status}")),
        (AttemptResult::GaveUp, None, None) => failed_throughout("no answer"),
        (AttemptResult::Delivered | AttemptResult::RetryAt(_), _, _) => return Ok(true),
    };
    conn.begin().await?;
    let disabled = disable_after(&mut conn, endpoint, created_at, record.result, &why).await;
    conn.finish(disabled).await?;
    Ok(true)
}

fn failed_throughout(last: &str) -> String {
    format!("every delivery failed for the whole retry schedule (the last: {last})")
}

/// Turns the endpoint off after an attempt answered `410` (always) or gave up (only if nothing
/// was delivered to it since the event of the delivery given up on happened, `created_at`).
async fn disable_after(
    conn: &mut Conn<'_>,
    endpoint: i64,
    created_at: i64,
    result: AttemptResult,
    why: &str,
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
    if result == AttemptResult::GaveUp {
        let delivered_since = webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(endpoint))
            .filter(webhook_deliveries::state.eq(DeliveryState::Delivered.as_str()))
            .filter(webhook_deliveries::ended_at.ge(created_at))
            .select(webhook_deliveries::id);
        let delivered: Option<i64> = run!(conn, first, delivered_since).optional()?;
        if delivered.is_some() {
            return Ok(());
        }
    }
    disable(conn, endpoint, why).await
}

/// Records the attempt; the delivery's endpoint and creation when it did.
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
    let ended_meanwhile = now_state != DeliveryState::Pending.as_str();
    let (state, next_attempt_at, ended_at) = match record.result {
        AttemptResult::Delivered => (DeliveryState::Delivered, 0, Some(record.attempted_at)),
        AttemptResult::RetryAt(at) => (DeliveryState::Pending, at, None),
        AttemptResult::GaveUp | AttemptResult::Gone => {
            (DeliveryState::Failed, 0, Some(record.attempted_at))
        }
    };
    if ended_meanwhile {
        let status = record.status.map(i32::from);
        let latency = i32::try_from(record.latency_ms).unwrap_or(i32::MAX);
        let write = diesel::update(webhook_deliveries::table.find(record.delivery)).set((
            webhook_deliveries::attempts.eq(webhook_deliveries::attempts + 1),
            webhook_deliveries::lease_token.eq(0),
            webhook_deliveries::last_status.eq(status),
            webhook_deliveries::last_latency_ms.eq(latency),
        ));
        run!(conn, execute, write)?;
        insert_attempt(conn, record).await?;
        return Ok(Recorded::AfterItEnded);
    }
    let status = record.status.map(i32::from);
    let latency = i32::try_from(record.latency_ms).unwrap_or(i32::MAX);
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
    insert_attempt(conn, record).await?;
    Ok(Recorded::Pending {
        endpoint,
        created_at,
    })
}

/// The attempt's row in `webhook_attempts`.
async fn insert_attempt(conn: &mut Conn<'_>, record: &AttemptRecord) -> Result<()> {
    let attempt = diesel::insert_into(webhook_attempts::table).values((
        webhook_attempts::delivery_id.eq(record.delivery),
        webhook_attempts::attempted_at.eq(record.attempted_at),
        webhook_attempts::status.eq(record.status.map(i32::from)),
        webhook_attempts::latency_ms.eq(i32::try_from(record.latency_ms).unwrap_or(i32::MAX)),
        webhook_attempts::error.eq(&record.error),
    ));
    run!(conn, execute, attempt)?;
    Ok(())
}

/// The pending deliveries to endpoints that may be sent to, and the oldest one's creation.
pub(crate) async fn backlog(mut conn: Conn<'_>) -> Result<Backlog> {
    let enabled = webhook_endpoints::table
        .filter(sendable!(unix_now()))
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
pub(crate) async fn prune_batch(mut conn: Conn<'_>, before: i64) -> Result<u64> {
    let conn = &mut conn;
    let failed = fail_stranded(conn).await?;
    let deleted_endpoints = webhook_endpoints::table
        .filter(webhook_endpoints::deleted_at.lt(unix_now() - PURGE_AFTER))
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
                .filter(webhook_endpoints::deleted_at.lt(unix_now() - PURGE_AFTER))
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
/// or has expired (never to be sent: [`sendable!`]); how many.
async fn fail_stranded(conn: &mut Conn<'_>) -> Result<u64> {
    let now = unix_now();
    let of_gone_keys = webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.ne(OPERATORS))
        .filter(diesel::dsl::not(diesel::dsl::exists(
            api_keys::table
                .filter(api_keys::id.eq(webhook_endpoints::owner_key_id))
                .filter(api_keys::revoked_at.is_null())
                .filter(
                    api_keys::expires_at
                        .is_null()
                        .or(api_keys::expires_at.gt(now)),
                ),
        )))
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
    .set((
        webhook_deliveries::state.eq(DeliveryState::Failed.as_str()),
        webhook_deliveries::last_error
            .eq("not sent: the API key that owns the endpoint was revoked or has expired"),
        webhook_deliveries::lease_until.eq(0),
        webhook_deliveries::ended_at.eq(now),
    ));
    Ok(run!(conn, execute, fail)? as u64)
}
