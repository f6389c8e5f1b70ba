//! Endpoints: created, listed, found, changed, deleted and given a new secret, each the
//! owner's only (a key's, or the operators'); and turned off ([`disable`]), which fails their
//! pending deliveries.

use diesel::dsl::count_star;
use diesel::prelude::*;
use petstore_domain::webhook::{
    DeliveryState, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointWrite, MAX_ENDPOINTS,
    SigningSecret, WebhookEndpoint, same_receiver,
};

use super::stored::{OPERATORS, events_to_stored, owner_id};
use super::{EndpointRow, failed};
use crate::conn::Conn;
use crate::queries::{Now, Result, columns};
use crate::schema::{api_keys, webhook_deliveries, webhook_endpoints, webhook_operator_lock};

/// A new signing secret.
pub(crate) fn random_secret() -> Result<SigningSecret> {
    Ok(SigningSecret::from_random_bytes(
        crate::queries::keys::random_bytes()?,
    ))
}

/// `owner`'s endpoints (its stored id), the deleted ones left out.
#[diesel::dsl::auto_type]
fn endpoints_of(owner: i64) -> _ {
    webhook_endpoints::table
        .filter(webhook_endpoints::owner_key_id.eq(owner))
        .filter(webhook_endpoints::deleted_at.is_null())
}

/// Endpoint `id`, if `owner`'s (its stored id) and not deleted.
#[diesel::dsl::auto_type]
fn owned_endpoint(id: i64, owner: i64) -> _ {
    webhook_endpoints::table
        .find(id)
        .filter(webhook_endpoints::owner_key_id.eq(owner))
        .filter(webhook_endpoints::deleted_at.is_null())
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
    let query = endpoints_of(owner_id(owner))
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
    let query = owned_endpoint(id, owner_id(owner)).select(columns::<EndpointRow>());
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
pub(super) async fn endpoint_row(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
) -> Result<Option<EndpointRow>> {
    let query = owned_endpoint(id, owner_id(owner)).select(columns::<EndpointRow>());
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
    now: Now,
) -> Result<EndpointWrite<(WebhookEndpoint, SigningSecret)>> {
    conn.begin().await?;
    let created = create_in(&mut conn, owner, &spec, &secret, now).await;
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
    now: Now,
) -> Result<EndpointWrite<WebhookEndpoint>> {
    lock_owner(conn, owner).await?;
    let count = endpoints_of(owner_id(owner)).select(count_star());
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
        webhook_endpoints::events.eq(events_to_stored(spec.events)),
        webhook_endpoints::description.eq(&spec.description),
        webhook_endpoints::secret.eq(secret.to_stored()),
        webhook_endpoints::enabled.eq(true),
        webhook_endpoints::created_at.eq(now.unix()),
    ));
    let row: EndpointRow = run_returning!(conn, get_result,
        insert.returning(columns::<EndpointRow>()),
        mysql(c) => mysql_inserted!(c, insert, webhook_endpoints::table, EndpointRow))?;
    Ok(EndpointWrite::Done(row.endpoint(now)?))
}

/// The owner's endpoints, in id order.
pub(crate) async fn list(
    mut conn: Conn<'_>,
    owner: EndpointOwner,
    now: Now,
) -> Result<Vec<WebhookEndpoint>> {
    let query = endpoints_of(owner_id(owner))
        .order(webhook_endpoints::id.asc())
        .select(columns::<EndpointRow>());
    let rows: Vec<EndpointRow> = run!(&mut conn, load, query)?;
    rows.iter().map(|row| row.endpoint(now)).collect()
}

/// Endpoint `id`, if `owner`'s.
pub(crate) async fn find(
    mut conn: Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    now: Now,
) -> Result<Option<WebhookEndpoint>> {
    endpoint_row(&mut conn, id, owner)
        .await?
        .map(|row| row.endpoint(now))
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
    now: Now,
) -> Result<EndpointWrite<WebhookEndpoint>> {
    conn.begin().await?;
    let updated = update_in(&mut conn, id, owner, &update, now).await;
    conn.finish(updated).await
}

async fn update_in(
    conn: &mut Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    update: &EndpointUpdate,
    now: Now,
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
        row.events = events_to_stored(events);
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
            fail_pending(conn, id, "the endpoint was turned off", now.unix()).await?;
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
    Ok(EndpointWrite::Done(row.endpoint(now)?))
}
/// Ends endpoint `id`'s pending deliveries as failed `at` (Unix seconds), with `why`.
async fn fail_pending(conn: &mut Conn<'_>, id: i64, why: &str, at: i64) -> Result<()> {
    let fail = diesel::update(
        webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(id))
            .filter(webhook_deliveries::state.eq(DeliveryState::Pending.as_str())),
    )
    .set(failed(why, at));
    run!(conn, execute, fail)?;
    Ok(())
}

/// Turns endpoint `id` off `at` (Unix seconds), with `why`, and fails its pending deliveries,
/// unless it is off already. The endpoint's row is locked first, then its deliveries' (the
/// order every transaction that takes both follows).
pub(super) async fn disable(conn: &mut Conn<'_>, id: i64, why: &str, at: i64) -> Result<()> {
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
    fail_pending(conn, id, &format!("the endpoint was turned off: {why}"), at).await
}

/// Deletes endpoint `id` (`owner`'s): marks it deleted and off at once (no event is recorded
/// for it from then on, none of its deliveries is claimed, it is no longer found); its
/// deliveries, their attempts and its row are removed in the background
/// ([`prune_batch`](super::prune_batch)), in batches, so that deleting an endpoint with a long
/// log neither runs out its statement timeout nor holds rows the writes recording events need.
pub(crate) async fn delete(
    mut conn: Conn<'_>,
    id: i64,
    owner: EndpointOwner,
    now: Now,
) -> Result<bool> {
    let mark = diesel::update(owned_endpoint(id, owner_id(owner))).set((
        webhook_endpoints::deleted_at.eq(now.unix()),
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
    now: Now,
) -> Result<Option<(WebhookEndpoint, SigningSecret)>> {
    conn.begin().await?;
    let rotated = rotate_in(&mut conn, id, owner, grace_until, &secret, now).await;
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
    now: Now,
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
    Ok(Some(row.endpoint(now)?))
}
