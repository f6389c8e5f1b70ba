//! `ApiKeyRepository` for both backends. Only the SHA-256 of a secret is stored.

use diesel::prelude::*;
use petstore_domain::{
    ApiKey, ApiKeyRepository, ApiKeySecret, Ban, KeyHash, KeyMatch, KeySpec, Plan, RateLimits,
    Scope, StorageError,
};

use crate::schema::api_keys;
use crate::{Store, StoreError, unix_now};

type KeyColumns = (
    api_keys::id,
    api_keys::display_prefix,
    api_keys::plan,
    api_keys::label,
    api_keys::per_minute,
    api_keys::per_day,
    api_keys::created_at,
    api_keys::revoked_at,
    api_keys::banned_until,
    api_keys::ban_level,
    api_keys::scope,
    api_keys::expires_at,
    api_keys::last_used_at,
    api_keys::previous_secret_until,
);
const KEY_COLUMNS: KeyColumns = (
    api_keys::id,
    api_keys::display_prefix,
    api_keys::plan,
    api_keys::label,
    api_keys::per_minute,
    api_keys::per_day,
    api_keys::created_at,
    api_keys::revoked_at,
    api_keys::banned_until,
    api_keys::ban_level,
    api_keys::scope,
    api_keys::expires_at,
    api_keys::last_used_at,
    api_keys::previous_secret_until,
);

#[derive(Queryable)]
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

    fn try_from(row: KeyRow) -> Result<Self, StoreError> {
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

fn random_secret() -> Result<ApiKeySecret, StoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(StoreError::Random)?;
    Ok(ApiKeySecret::from_random_bytes(bytes))
}

impl ApiKeyRepository for Store {
    fn create_key(&self, spec: &KeySpec) -> Result<(ApiKey, ApiKeySecret), StorageError> {
        let secret = random_secret()?;
        let limits = spec.custom_limits();
        self.call(|conn| {
            let row: KeyRow = diesel::insert_into(api_keys::table)
                .values((
                    api_keys::key_hash.eq(secret.hash().as_str()),
                    api_keys::display_prefix.eq(secret.display_prefix()),
                    api_keys::plan.eq(spec.plan().as_str()),
                    api_keys::label.eq(spec.label()),
                    api_keys::per_minute.eq(limits.map(|l| i64::from(l.per_minute))),
                    api_keys::per_day.eq(limits.map(|l| i64::from(l.per_day))),
                    api_keys::created_at.eq(unix_now()),
                    api_keys::scope.eq(spec.scope().as_str()),
                    api_keys::expires_at.eq(spec.expires_at()),
                ))
                .returning(KEY_COLUMNS)
                .get_result(conn)?;
            Ok((row.try_into()?, secret))
        })
    }

    fn find_active_key(&self, hash: &KeyHash) -> Result<Option<KeyMatch>, StorageError> {
        self.call(|conn| {
            let found = api_keys::table
                .select((KEY_COLUMNS, api_keys::key_hash))
                .filter(
                    api_keys::key_hash
                        .eq(hash.as_str())
                        .or(api_keys::previous_key_hash.eq(hash.as_str())),
                )
                .filter(api_keys::revoked_at.is_null())
                .first::<(KeyRow, String)>(conn)
                .optional()?;
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
        })
    }

    fn list_keys(&self) -> Result<Vec<ApiKey>, StorageError> {
        self.call(|conn| {
            api_keys::table
                .select(KEY_COLUMNS)
                .order(api_keys::id.asc())
                .load::<KeyRow>(conn)?
                .into_iter()
                .map(ApiKey::try_from)
                .collect()
        })
    }

    fn revoke_key(&self, id: i64) -> Result<bool, StorageError> {
        self.call(|conn| {
            let revoked = diesel::update(api_keys::table)
                .filter(api_keys::id.eq(id))
                .filter(api_keys::revoked_at.is_null())
                .set(api_keys::revoked_at.eq(Some(unix_now())))
                .execute(conn)?;
            if revoked > 0 {
                return Ok(true);
            }
            let exists = api_keys::table
                .find(id)
                .select(api_keys::id)
                .first::<i64>(conn)
                .optional()?;
            Ok(exists.is_some())
        })
    }

    fn update_key_plan(
        &self,
        id: i64,
        plan: Plan,
        custom_limits: Option<RateLimits>,
    ) -> Result<bool, StorageError> {
        self.call(|conn| {
            let updated = diesel::update(api_keys::table.find(id))
                .set((
                    api_keys::plan.eq(plan.as_str()),
                    api_keys::per_minute.eq(custom_limits.map(|l| i64::from(l.per_minute))),
                    api_keys::per_day.eq(custom_limits.map(|l| i64::from(l.per_day))),
                ))
                .execute(conn)?;
            Ok(updated > 0)
        })
    }

    fn ban_key(&self, id: i64, ban: Ban, now: u64) -> Result<bool, StorageError> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.call(|conn| {
            let updated = diesel::update(api_keys::table.find(id))
                .filter(
                    api_keys::banned_until
                        .is_null()
                        .or(api_keys::banned_until.le(now)),
                )
                .set((
                    api_keys::banned_until.eq(Some(i64::try_from(ban.until).unwrap_or(i64::MAX))),
                    api_keys::ban_level.eq(i32::try_from(ban.level).unwrap_or(i32::MAX)),
                ))
                .execute(conn)?;
            Ok(updated > 0)
        })
    }

    fn rotate_key(
        &self,
        id: i64,
        grace_until: i64,
    ) -> Result<Option<(ApiKey, ApiKeySecret)>, StorageError> {
        let secret = random_secret()?;
        self.call(|conn| {
            conn.transaction(|conn| {
                let current: Option<String> = api_keys::table
                    .find(id)
                    .filter(api_keys::revoked_at.is_null())
                    .select(api_keys::key_hash)
                    .first(conn)
                    .optional()?;
                let Some(current) = current else {
                    return Ok(None);
                };
                let row: KeyRow = diesel::update(api_keys::table.find(id))
                    .set((
                        api_keys::previous_key_hash.eq(Some(current)),
                        api_keys::previous_secret_until.eq(Some(grace_until)),
                        api_keys::key_hash.eq(secret.hash().as_str()),
                        api_keys::display_prefix.eq(secret.display_prefix()),
                    ))
                    .returning(KEY_COLUMNS)
                    .get_result(conn)?;
                Ok(Some((row.try_into()?, secret)))
            })
        })
    }

    fn update_key_scope(&self, id: i64, scope: Scope) -> Result<bool, StorageError> {
        self.call(|conn| {
            let updated = diesel::update(api_keys::table.find(id))
                .set(api_keys::scope.eq(scope.as_str()))
                .execute(conn)?;
            Ok(updated > 0)
        })
    }

    fn touch_key(&self, id: i64, now: i64) -> Result<(), StorageError> {
        self.call(|conn| {
            diesel::update(api_keys::table.find(id))
                .filter(
                    api_keys::last_used_at
                        .is_null()
                        .or(api_keys::last_used_at.lt(now)),
                )
                .set(api_keys::last_used_at.eq(Some(now)))
                .execute(conn)?;
            Ok(())
        })
    }

    fn unban_key(&self, id: i64) -> Result<bool, StorageError> {
        self.call(|conn| {
            let updated = diesel::update(api_keys::table.find(id))
                .set((
                    api_keys::banned_until.eq(None::<i64>),
                    api_keys::ban_level.eq(0),
                ))
                .execute(conn)?;
            Ok(updated > 0)
        })
    }
}
