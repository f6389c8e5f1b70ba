//! API keys. Only the SHA-256 of a secret is stored; the secret is returned once.

use diesel::prelude::*;
use petstore_domain::{
    ApiKey, ApiKeySecret, Ban, KeyHash, KeyListQuery, KeyMatch, KeySpec, KeyState, KeyUpdate, Page,
    Plan, RateLimits, Scope,
};

use super::{Now, Result, coalesce, columns, overfetch};
use crate::StoreError;
use crate::conn::Conn;
use crate::schema::api_keys;

#[derive(Queryable, Selectable)]
#[diesel(table_name = api_keys)]
struct KeyRow {
    id: i64,
    display_prefix: String,
    plan: String,
    label: String,
    per_minute: Option<i64>,
    per_day: Option<i64>,
    created_at: i64,
    revoked_at: Option<i64>,
    banned_until: Option<i64>,
    ban_level: i32,
    scope: String,
    expires_at: Option<i64>,
    last_used_at: Option<i64>,
    previous_secret_until: Option<i64>,
}

impl TryFrom<KeyRow> for ApiKey {
    type Error = StoreError;

    fn try_from(row: KeyRow) -> Result<Self> {
        let corrupt = |reason: String| StoreError::Corrupt {
            table: "api_keys",
            reason: format!("key {}: {reason}", row.id),
        };
        let plan: Plan = row
            .plan
            .parse()
            .map_err(|_| corrupt(format!("unknown plan {:?}", row.plan)))?;
        let custom_limits = match (row.per_minute, row.per_day) {
            (Some(per_minute), Some(per_day)) => {
                let per_minute = u32::try_from(per_minute)
                    .map_err(|_| corrupt(format!("per-minute limit {per_minute}")))?;
                let per_day = u32::try_from(per_day)
                    .map_err(|_| corrupt(format!("per-day limit {per_day}")))?;
                Some(RateLimits {
                    per_minute,
                    per_day,
                })
            }
            (None, None) => None,
            _ => return Err(corrupt("only one of the two custom limits is set".into())),
        };
        let scope: Scope = row
            .scope
            .parse()
            .map_err(|_| corrupt(format!("unknown scope {:?}", row.scope)))?;
        Ok(ApiKey {
            id: row.id,
            display_prefix: row.display_prefix,
            plan,
            label: row.label,
            custom_limits,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
            ban: row.banned_until.map(|until| Ban {
                until: u64::try_from(until).unwrap_or(0),
                level: u32::try_from(row.ban_level).unwrap_or(1),
            }),
            scope,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
            previous_secret_until: row.previous_secret_until,
        })
    }
}

/// A new random secret (the operating system's random source).
pub(crate) fn random_secret() -> Result<ApiKeySecret> {
    Ok(ApiKeySecret::from_random_bytes(random_bytes()?))
}

/// 32 bytes from the operating system's random source: a new secret's.
pub(crate) fn random_bytes() -> Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(StoreError::Random)?;
    Ok(bytes)
}

/// Issues a key with `secret` (made by the caller, outside any retry).
pub(crate) async fn create(
    mut conn: Conn<'_>,
    spec: KeySpec,
    secret: ApiKeySecret,
    now: Now,
) -> Result<(ApiKey, ApiKeySecret)> {
    let limits = spec.custom_limits();
    let hash = secret.hash();
    let insert = diesel::insert_into(api_keys::table).values((
        api_keys::key_hash.eq(hash.as_str()),
        api_keys::display_prefix.eq(secret.display_prefix()),
        api_keys::plan.eq(spec.plan().as_str()),
        api_keys::label.eq(spec.label()),
        api_keys::per_minute.eq(limits.map(|l| i64::from(l.per_minute))),
        api_keys::per_day.eq(limits.map(|l| i64::from(l.per_day))),
        api_keys::created_at.eq(now.unix()),
        api_keys::scope.eq(spec.scope().as_str()),
        api_keys::expires_at.eq(spec.expires_at()),
    ));
    let row: KeyRow = run_returning!(&mut conn, get_result, insert.returning(columns::<KeyRow>()),
        mysql(c) => mysql_inserted!(c, insert, api_keys::table, KeyRow))?;
    Ok((row.try_into()?, secret))
}

/// The non-revoked key whose current or previous secret has this hash.
pub(crate) async fn find_active(mut conn: Conn<'_>, hash: KeyHash) -> Result<Option<KeyMatch>> {
    let query = api_keys::table
        .select((columns::<KeyRow>(), api_keys::key_hash))
        .filter(
            api_keys::key_hash
                .eq(hash.as_str())
                .or(api_keys::previous_key_hash.eq(hash.as_str())),
        )
        .filter(api_keys::revoked_at.is_null());
    let found: Option<(KeyRow, String)> = run!(&mut conn, first, query).optional()?;
    let Some((row, current_hash)) = found else {
        return Ok(None);
    };
    let key = ApiKey::try_from(row)?;
    Ok(Some(if current_hash == hash.as_str() {
        KeyMatch::current(key)
    } else {
        // A rotated-out secret: until its grace period ends (never, if none was set).
        let until = key.previous_secret_until.unwrap_or(0);
        KeyMatch::previous(key, until)
    }))
}

/// The key with this id, revoked or not.
pub(crate) async fn find(mut conn: Conn<'_>, id: i64) -> Result<Option<ApiKey>> {
    let query = api_keys::table.find(id).select(columns::<KeyRow>());
    let row: Option<KeyRow> = run!(&mut conn, first, query).optional()?;
    row.map(ApiKey::try_from).transpose()
}

/// Runs a page of keys (`$page`: every key after the cursor, in id order, one more than the
/// limit), of one plan when `$plan` names one, on the backend's connection `$conn`. A page of
/// one plan walks a `(plan, id)` index: on PostgreSQL stated as a range ordered by that index,
/// as a page of pets with one status is, for the same reasons (see `pets::list`). A state's
/// condition, if any, `$page` already carries.
macro_rules! key_page {
    ($conn:expr, $page:expr, $plan:expr) => {
        match $plan {
            None => run!($conn, load, $page),
            Some(plan) => run!(
                $conn,
                load,
                sqlite: $page.filter(api_keys::plan.eq(plan)),
                servers: $page
                    .filter(api_keys::plan.between(plan, plan))
                    .order((api_keys::plan.asc(), api_keys::id.asc()))
            ),
        }
    };
}

/// A page of keys in id order, of one plan (or any) and in one state at the query's `now` (or
/// any). A page of one plan, of revoked keys or of expired ones walks an index that holds only
/// the keys it may show (`migrations/*/..._key_page_indexes`), so that it never reads others
/// to skip them, however many there are (of expired keys, it skips those whose expiry is still
/// ahead: a key becomes expired as time passes, not by a write). A page of active keys, most
/// keys, walks the primary key (or the plan's index) and skips the revoked and expired ones.
pub(crate) async fn list_page(mut conn: Conn<'_>, query: KeyListQuery) -> Result<Page<ApiKey>> {
    let plan = query.plan.map(Plan::as_str);
    let now = query.now;
    let page = api_keys::table
        .select(columns::<KeyRow>())
        .filter(api_keys::id.gt(query.page.after.unwrap_or(0)))
        .order(api_keys::id.asc())
        .limit(overfetch(query.page.limit));
    let conn = &mut conn;
    let rows: Vec<KeyRow> = match query.state {
        None => key_page!(conn, page, plan)?,
        Some(KeyState::Revoked) => {
            key_page!(conn, page.filter(api_keys::revoked_at.is_not_null()), plan)?
        }
        Some(KeyState::Expired) => key_page!(
            conn,
            page.filter(api_keys::revoked_at.is_null())
                .filter(api_keys::expires_at.le(now)),
            plan
        )?,
        Some(KeyState::Active) => key_page!(
            conn,
            page.filter(api_keys::revoked_at.is_null()).filter(
                api_keys::expires_at
                    .is_null()
                    .or(api_keys::expires_at.gt(now))
            ),
            plan
        )?,
    };
    let keys = rows
        .into_iter()
        .map(ApiKey::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_overfetch(keys, query.page.limit, |key| key.id))
}

/// The columns a [`KeyUpdate`] may change; `None` leaves a column as it is.
#[derive(AsChangeset)]
#[diesel(table_name = api_keys)]
struct KeyChangeset {
    plan: Option<String>,
    per_minute: Option<Option<i64>>,
    per_day: Option<Option<i64>>,
    scope: Option<String>,
    label: Option<String>,
}

/// Applies `update` to a key in one statement and returns the key as it now is; `None` when no
/// key has this id.
pub(crate) async fn update(
    mut conn: Conn<'_>,
    id: i64,
    update: KeyUpdate,
) -> Result<Option<ApiKey>> {
    let limits = update.plan.map(|(_, limits)| limits);
    let changes = KeyChangeset {
        plan: update.plan.map(|(plan, _)| plan.as_str().to_owned()),
        per_minute: limits.map(|l| l.map(|l| i64::from(l.per_minute))),
        per_day: limits.map(|l| l.map(|l| i64::from(l.per_day))),
        scope: update.scope.map(|scope| scope.as_str().to_owned()),
        label: update.label,
    };
    if changes.plan.is_none() && changes.scope.is_none() && changes.label.is_none() {
        return find(conn, id).await;
    }
    let statement = diesel::update(api_keys::table.find(id)).set(changes);
    let row: Option<KeyRow> = run_returning!(&mut conn, get_result,
        statement.returning(columns::<KeyRow>()),
        mysql(c) => mysql_updated!(c, statement, api_keys::table, id, KeyRow))
    .optional()?;
    row.map(ApiKey::try_from).transpose()
}

/// Revokes a key (keeping the first revocation's time); `false` when no key has this id. One
/// statement: the row is matched whether revoked or not, and keeps its first revocation's time.
pub(crate) async fn revoke(mut conn: Conn<'_>, id: i64, now: Now) -> Result<bool> {
    let revoked_at = coalesce(api_keys::revoked_at, Some(now.unix()));
    let revoke = diesel::update(api_keys::table.find(id)).set(api_keys::revoked_at.eq(revoked_at));
    Ok(run!(&mut conn, execute, revoke)? > 0)
}

/// Changes a key's plan and custom limits; `false` when no key has this id.
pub(crate) async fn update_plan(
    mut conn: Conn<'_>,
    id: i64,
    plan: Plan,
    custom_limits: Option<RateLimits>,
) -> Result<bool> {
    let update = diesel::update(api_keys::table.find(id)).set((
        api_keys::plan.eq(plan.as_str()),
        api_keys::per_minute.eq(custom_limits.map(|l| i64::from(l.per_minute))),
        api_keys::per_day.eq(custom_limits.map(|l| i64::from(l.per_day))),
    ));
    Ok(run!(&mut conn, execute, update)? > 0)
}

/// Bans a key unless a ban is in force at `now`; whether this call imposed it.
pub(crate) async fn ban(mut conn: Conn<'_>, id: i64, ban: Ban, now: u64) -> Result<bool> {
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    let update = diesel::update(api_keys::table.find(id))
        .filter(
            api_keys::banned_until
                .is_null()
                .or(api_keys::banned_until.le(now)),
        )
        .set((
            api_keys::banned_until.eq(Some(i64::try_from(ban.until).unwrap_or(i64::MAX))),
            api_keys::ban_level.eq(i32::try_from(ban.level).unwrap_or(i32::MAX)),
        ));
    Ok(run!(&mut conn, execute, update)? > 0)
}

/// Gives a non-revoked key `secret` as its new secret, keeping the current one until
/// `grace_until`; `None` when no non-revoked key has this id. One statement, so that the secret
/// kept is the one replaced whatever runs alongside: of two rotations at once, the second keeps
/// the first's secret (not the one both found), and a revocation committed first leaves nothing
/// to rotate.
pub(crate) async fn rotate(
    mut conn: Conn<'_>,
    id: i64,
    grace_until: i64,
    secret: ApiKeySecret,
) -> Result<Option<(ApiKey, ApiKeySecret)>> {
    let hash = secret.hash();
    let update = diesel::update(
        api_keys::table
            .find(id)
            .filter(api_keys::revoked_at.is_null()),
    )
    .set((
        api_keys::previous_key_hash.eq(api_keys::key_hash.nullable()),
        api_keys::previous_secret_until.eq(Some(grace_until)),
        api_keys::key_hash.eq(hash.as_str()),
        api_keys::display_prefix.eq(secret.display_prefix()),
    ));
    let row: Option<KeyRow> = run_returning!(&mut conn, get_result,
        update.returning(columns::<KeyRow>()),
        mysql(c) => mysql_updated!(c, update, api_keys::table, id, KeyRow))
    .optional()?;
    row.map(|row| Ok((row.try_into()?, secret))).transpose()
}

/// Changes what a key may do; `false` when no key has this id.
pub(crate) async fn update_scope(mut conn: Conn<'_>, id: i64, scope: Scope) -> Result<bool> {
    let update = diesel::update(api_keys::table.find(id)).set(api_keys::scope.eq(scope.as_str()));
    Ok(run!(&mut conn, execute, update)? > 0)
}

/// Records that the key was used at `now`; never moves the time back.
pub(crate) async fn touch(mut conn: Conn<'_>, id: i64, now: i64) -> Result<()> {
    let update = diesel::update(api_keys::table.find(id))
        .filter(
            api_keys::last_used_at
                .is_null()
                .or(api_keys::last_used_at.lt(now)),
        )
        .set(api_keys::last_used_at.eq(Some(now)));
    run!(&mut conn, execute, update)?;
    Ok(())
}

/// Lifts a key's ban and forgets its history; `false` when no key has this id.
pub(crate) async fn unban(mut conn: Conn<'_>, id: i64) -> Result<bool> {
    let update = diesel::update(api_keys::table.find(id)).set((
        api_keys::banned_until.eq(None::<i64>),
        api_keys::ban_level.eq(0),
    ));
    Ok(run!(&mut conn, execute, update)? > 0)
}
