//! `ApiKeyRepository` for both backends. Only the SHA-256 of a secret is stored.

use diesel::prelude::*;
use petstore_domain::{
    ApiKey, ApiKeyRepository, ApiKeySecret, Ban, KeyHash, KeySpec, Plan, RateLimits, StorageError,
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
                ))
                .returning(KEY_COLUMNS)
                .get_result(conn)?;
            Ok((row.try_into()?, secret))
        })
    }

    fn find_active_key(&self, hash: &KeyHash) -> Result<Option<ApiKey>, StorageError> {
        self.call(|conn| {
            api_keys::table
                .select(KEY_COLUMNS)
                .filter(api_keys::key_hash.eq(hash.as_str()))
                .filter(api_keys::revoked_at.is_null())
                .first::<KeyRow>(conn)
                .optional()?
                .map(ApiKey::try_from)
                .transpose()
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
