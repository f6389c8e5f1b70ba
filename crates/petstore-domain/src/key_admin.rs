//! What an operator can do to API keys, written once for both ways of doing it: the command
//! line (`petstore keys ...`) and the admin API (`/admin/v1/keys`). Each operation validates
//! everything before it writes anything, and answers with the key as it now is; [`KeyView`] is
//! how both show a key (the CLI's `--format json` and the admin API's bodies are the same
//! objects).

use std::borrow::Cow;
use std::time::Duration;

use serde::Serialize;

use crate::key::{KeyUpdate, LAST_TIME, validate_label};
use crate::{
    ApiKey, ApiKeySecret, KeyListQuery, KeySpec, Limit, Page, Plan, RateLimits, Scope, Storage,
    StorageError, ValidationError,
};

/// Why a key operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum KeyAdminError {
    /// No key has this id.
    #[error("no key has id {0}")]
    NotFound(i64),
    /// The key is revoked: it cannot be given a new secret.
    #[error("key {0} is revoked: a revoked key cannot be rotated")]
    Revoked(i64),
    /// An input broke a rule; nothing was changed.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A new key's attributes, as an operator gives them (not yet validated).
#[derive(Debug, Clone, Default)]
pub struct NewKey {
    /// The plan.
    pub plan: Option<Plan>,
    /// A description, e.g. the customer's name.
    pub label: String,
    /// Custom limits, enterprise only: requests per minute.
    pub per_minute: Option<u32>,
    /// Custom limits, enterprise only: requests per day.
    pub per_day: Option<u32>,
    /// What the key may do (read-write by default).
    pub scope: Scope,
    /// When it stops working (Unix seconds), after now.
    pub expires_at: Option<i64>,
}

/// Changes to a key; at least one must be given. The plan and custom limits go together, as
/// a key's limits follow from its plan.
#[derive(Debug, Clone, Default)]
pub struct KeyChange {
    /// A new plan.
    pub plan: Option<Plan>,
    /// Custom limits (enterprise only, with the plan): requests per minute.
    pub per_minute: Option<u32>,
    /// Custom limits (enterprise only, with the plan): requests per day.
    pub per_day: Option<u32>,
    /// A new scope.
    pub scope: Option<Scope>,
    /// A new label.
    pub label: Option<String>,
}

/// Custom limits from per-minute and per-day values: both or neither.
pub fn custom_limits(
    per_minute: Option<u32>,
    per_day: Option<u32>,
) -> Result<Option<RateLimits>, ValidationError> {
    match (per_minute, per_day) {
        (Some(per_minute), Some(per_day)) => RateLimits::custom(per_minute, per_day).map(Some),
        (None, None) => Ok(None),
        (Some(_), None) => Err(invalid("perDay", "is required with `perMinute`")),
        (None, Some(_)) => Err(invalid("perMinute", "is required with `perDay`")),
    }
}

fn invalid(field: &'static str, reason: &str) -> ValidationError {
    ValidationError::InvalidField {
        field: Cow::Borrowed(field),
        reason: reason.to_owned(),
    }
}

/// Issues a key; its secret is in the answer and nowhere else.
pub async fn create(
    storage: &dyn Storage,
    new: NewKey,
    now: i64,
) -> Result<(ApiKey, ApiKeySecret), KeyAdminError> {
    let plan = new
        .plan
        .ok_or(ValidationError::MissingField(Cow::Borrowed("plan")))?;
    let custom = custom_limits(new.per_minute, new.per_day)?;
    let mut spec = KeySpec::new(plan, new.label, custom)?.with_scope(new.scope);
    if let Some(at) = new.expires_at {
        spec = spec.expiring_at(at, now)?;
    }
    Ok(storage.create_key(&spec).await?)
}

/// The key with this id (revoked or not).
pub async fn get(storage: &dyn Storage, id: i64) -> Result<ApiKey, KeyAdminError> {
    storage
        .find_key(id)
        .await?
        .ok_or(KeyAdminError::NotFound(id))
}

/// Every key, revoked ones included, in id order: read a page of the most keys a page holds at
/// a time, each page as cheap as the admin API's (the storage interface has no unbounded list).
pub async fn all(storage: &dyn Storage) -> Result<Vec<ApiKey>, KeyAdminError> {
    let mut keys = Vec::new();
    let mut query = KeyListQuery::every_key(Limit::MAX);
    loop {
        let page = storage.list_keys_page(&query).await?;
        keys.extend(page.items);
        match page.next_after {
            Some(after) => query.page.after = Some(after),
            None => return Ok(keys),
        }
    }
}

/// Whether any key exists, revoked or not.
pub async fn any(storage: &dyn Storage) -> Result<bool, KeyAdminError> {
    let first = storage
        .list_keys_page(&KeyListQuery::every_key(Limit::MIN))
        .await?;
    Ok(!first.items.is_empty())
}

/// A page of keys.
pub async fn list(
    storage: &dyn Storage,
    query: &KeyListQuery,
) -> Result<Page<ApiKey>, KeyAdminError> {
    Ok(storage.list_keys_page(query).await?)
}

/// Applies `change` to key `id`, every part validated first, and answers the key as it now is.
pub async fn update(
    storage: &dyn Storage,
    id: i64,
    change: KeyChange,
) -> Result<ApiKey, KeyAdminError> {
    if change.plan.is_none() && change.scope.is_none() && change.label.is_none() {
        return Err(invalid(
            "plan",
            "or `scope` or `label` is required: there is nothing to change",
        )
        .into());
    }
    let plan = match change.plan {
        Some(plan) => {
            let custom = custom_limits(change.per_minute, change.per_day)?;
            KeySpec::new(plan, "", custom)?;
            Some((plan, custom))
        }
        None if change.per_minute.is_some() || change.per_day.is_some() => {
            return Err(invalid(
                "perMinute",
                "and `perDay` go with `plan` (enterprise): give the plan too",
            )
            .into());
        }
        None => None,
    };
    if let Some(label) = &change.label {
        validate_label(label)?;
    }
    let update = KeyUpdate {
        plan,
        scope: change.scope,
        label: change.label,
    };
    storage
        .update_key(id, &update)
        .await?
        .ok_or(KeyAdminError::NotFound(id))
}

/// The longest a rotated-out secret may keep working: a year.
pub const MAX_GRACE: Duration = Duration::from_secs(366 * 24 * 60 * 60);

/// Gives key `id` a new secret; the old one keeps working for `grace` (not at all for zero),
/// at most [`MAX_GRACE`].
pub async fn rotate(
    storage: &dyn Storage,
    id: i64,
    grace: Duration,
    now: i64,
) -> Result<(ApiKey, ApiKeySecret), KeyAdminError> {
    if grace > MAX_GRACE {
        return Err(invalid("graceSeconds", "must be at most 31622400 (366 days)").into());
    }
    let grace_until = now.saturating_add(i64::try_from(grace.as_secs()).unwrap_or(i64::MAX));
    match storage.rotate_key(id, grace_until).await? {
        Some(rotated) => Ok(rotated),
        None => match storage.find_key(id).await? {
            Some(_) => Err(KeyAdminError::Revoked(id)),
            None => Err(KeyAdminError::NotFound(id)),
        },
    }
}

/// Revokes key `id` (a revoked key stays revoked, with its first revocation's time).
pub async fn revoke(storage: &dyn Storage, id: i64) -> Result<ApiKey, KeyAdminError> {
    if !storage.revoke_key(id).await? {
        return Err(KeyAdminError::NotFound(id));
    }
    get(storage, id).await
}

/// Lifts key `id`'s ban and forgets its history.
pub async fn unban(storage: &dyn Storage, id: i64) -> Result<ApiKey, KeyAdminError> {
    if !storage.unban_key(id).await? {
        return Err(KeyAdminError::NotFound(id));
    }
    get(storage, id).await
}

/// A key as operators see it, never with its secret: what `keys show --format json` prints and
/// what the admin API answers. Times are RFC 3339 (UTC), `null` when unset.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    /// The key's id.
    pub id: i64,
    /// The first characters of its secret, to recognise it.
    pub prefix: String,
    /// `free`, `pro`, `business` or `enterprise`.
    pub plan: &'static str,
    /// Requests per minute it may make.
    pub per_minute: u32,
    /// Requests per day it may make.
    pub per_day: u32,
    /// `read-write` or `read-only`.
    pub scope: &'static str,
    /// `active`, `expired` or `revoked`, now.
    pub state: &'static str,
    /// A description, e.g. the customer's name.
    pub label: String,
    /// When it was issued.
    pub created_at: Option<String>,
    /// When it stops working.
    pub expires_at: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<String>,
    /// When it was last seen (recorded at most once a minute per instance).
    pub last_used_at: Option<String>,
    /// The end of a temporary ban in force now.
    pub banned_until: Option<String>,
    /// After a rotation: when the previous secret stops working, while it still does.
    pub previous_secret_until: Option<String>,
}

impl KeyView {
    /// `key` as it stands at `now`.
    pub fn of(key: &ApiKey, now: i64) -> Self {
        let limits = key.limits();
        Self {
            id: key.id,
            prefix: key.display_prefix.clone(),
            plan: key.plan.as_str(),
            per_minute: limits.per_minute,
            per_day: limits.per_day,
            scope: key.scope.as_str(),
            state: key.state_at(now),
            label: key.label.clone(),
            created_at: rfc3339(Some(key.created_at)),
            expires_at: rfc3339(key.expires_at),
            revoked_at: rfc3339(key.revoked_at),
            last_used_at: rfc3339(key.last_used_at),
            banned_until: rfc3339(
                key.ban_at(u64::try_from(now).unwrap_or(0))
                    .and_then(|ban| i64::try_from(ban.until).ok()),
            ),
            previous_secret_until: rfc3339(key.previous_secret_until.filter(|until| *until > now)),
        }
    }
}

/// A key with its new secret, shown this once: what creating and rotating answer.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IssuedKey {
    /// The key.
    #[serde(flatten)]
    pub view: KeyView,
    /// The secret: `Authorization: Bearer <key>`. Shown only in this answer.
    pub key: String,
}

impl IssuedKey {
    /// `key` with `secret`, at `now`.
    pub fn of(key: &ApiKey, secret: &ApiKeySecret, now: i64) -> Self {
        Self {
            view: KeyView::of(key, now),
            key: secret.expose().to_owned(),
        }
    }
}

/// A Unix time in RFC 3339 (UTC, whole seconds); a time past the year 9999, which the service
/// no longer stores (older versions could), as the last second of that year.
pub fn rfc3339(unix: Option<i64>) -> Option<String> {
    let secs = u64::try_from(unix?.min(LAST_TIME)).ok()?;
    Some(
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(secs))
            .to_string(),
    )
}
