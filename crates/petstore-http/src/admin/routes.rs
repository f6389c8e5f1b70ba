//! `/admin/v1/keys`: the admin API's handlers. Each parses, makes one call of
//! [`key_admin`](petstore_domain::key_admin) (the code `petstore keys` runs too) through the storage's bounds, writes
//! one audit line when it changed something, and maps the answer.

use std::borrow::Cow;
use std::time::{Duration, UNIX_EPOCH};

use actix_web::http::header::{self, CacheControl, CacheDirective};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, Route, web};
use futures_util::future::BoxFuture;
use petstore_domain::{ApiKey, KeyListQuery, Plan, Scope, ValidationError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::token::Admin;
use crate::error::ApiError;
use crate::extract::{FromQuery, JsonBody, KeyId, NoQuery, Query, as_strs};
use crate::routes::respond::json_body;
use crate::state::AppState;
use petstore_domain::key_admin::{self as keys, IssuedKey, KeyChange, KeyView, NewKey};

/// The target of the audit log: one line per change made through the admin API.
pub const AUDIT_LOG: &str = "petstore::audit";

/// How long a rotated-out secret keeps working when the request does not say.
const DEFAULT_GRACE: Duration = Duration::from_secs(24 * 60 * 60);

/// `POST /admin/v1/keys`'s body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateKeyRequest {
    /// `free`, `pro`, `business` or `enterprise`.
    #[schema(examples("pro"))]
    plan: String,
    /// A description, e.g. the customer's name (at most 100 characters).
    #[serde(default)]
    label: String,
    /// Requests per minute (enterprise only, with `perDay`).
    per_minute: Option<u32>,
    /// Requests per day (enterprise only, with `perMinute`).
    per_day: Option<u32>,
    /// `read-write` (the default) or `read-only`.
    scope: Option<String>,
    /// When the key stops working (RFC 3339, in the future); never when absent.
    #[schema(examples("2027-03-01T00:00:00Z"))]
    expires_at: Option<String>,
}

/// `PATCH /admin/v1/keys/{keyId}`'s body: at least one of `plan`, `scope` and `label`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateKeyRequest {
    /// A new plan; `enterprise` needs `perMinute` and `perDay`.
    plan: Option<String>,
    /// Requests per minute (enterprise only, with `plan` and `perDay`).
    per_minute: Option<u32>,
    /// Requests per day (enterprise only, with `plan` and `perMinute`).
    per_day: Option<u32>,
    /// `read-write` or `read-only`.
    scope: Option<String>,
    /// A new label.
    label: Option<String>,
}

/// `POST /admin/v1/keys/{keyId}/rotate`'s body (`{}` for the defaults).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateKeyRequest {
    /// How long the old secret keeps working, in seconds (default 86400, a day; 0: not at
    /// all, e.g. after a leak; at most 31622400, 366 days).
    #[schema(examples(86400))]
    grace_seconds: Option<u64>,
}

/// A page of keys.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyPage {
    /// The keys, in id order.
    keys: Vec<KeyView>,
    /// The cursor of the next page (`after`), or `null` on the last page.
    next_after: Option<i64>,
}

/// `GET /keys`'s parameters; a key's state is judged at the time of the request (the app's
/// clock).
impl FromQuery for KeyListQuery {
    fn from_query(pairs: &[(String, String)], req: &HttpRequest) -> Result<Self, ApiError> {
        let state = req
            .app_data::<web::Data<AppState>>()
            .ok_or_else(|| ApiError::internal("the admin API runs without its state"))?;
        Ok(Self::from_pairs(as_strs(pairs), state.clock.unix_now())?)
    }
}

fn parse_time(field: &'static str, text: &str) -> Result<i64, ValidationError> {
    humantime::parse_rfc3339_weak(text)
        .ok()
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .and_then(|since| i64::try_from(since.as_secs()).ok())
        .ok_or_else(|| ValidationError::InvalidField {
            field: Cow::Borrowed(field),
            reason: "must be a time in RFC 3339 (e.g. `2027-03-01T00:00:00Z`)".into(),
        })
}

/// One audit line: who (the admin token), what, which key; the request id comes with the
/// request's span.
fn audit(admin: &Admin, action: &'static str, key: &ApiKey) {
    tracing::info!(
        target: AUDIT_LOG,
        admin_token_id = admin.0.id,
        admin_token_label = %admin.0.label,
        action,
        key_id = key.id,
        plan = key.plan.as_str(),
        scope = key.scope.as_str(),
        "admin token {} ({}) {action} key {}",
        admin.0.id,
        admin.0.label,
        key.id,
    );
}

/// A JSON answer that must not be kept by any cache (it may carry a secret).
pub(super) fn answer<T: Serialize>(mut response: HttpResponseBuilder, value: &T) -> HttpResponse {
    response.insert_header(CacheControl(vec![CacheDirective::NoStore]));
    json_body(response, value, 1)
}

/// `createKey`.
pub async fn create_key(
    state: web::Data<AppState>,
    admin: Admin,
    _: NoQuery,
    body: JsonBody<CreateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let new = NewKey {
        plan: Some(body.plan.parse()?),
        label: body.label,
        per_minute: body.per_minute,
        per_day: body.per_day,
        scope: body
            .scope
            .as_deref()
            .map(str::parse::<Scope>)
            .transpose()?
            .unwrap_or_default(),
        expires_at: body
            .expires_at
            .as_deref()
            .map(|at| parse_time("expiresAt", at))
            .transpose()?,
    };
    let now = state.clock.unix_now();
    let (key, secret) = state
        .db
        .call("create_key", |storage| {
            Box::pin(keys::create(storage, new, now))
        })
        .await?;
    audit(&admin, "created", &key);
    let mut response = HttpResponse::Created();
    response.insert_header((header::LOCATION, format!("/admin/v1/keys/{}", key.id)));
    Ok(answer(response, &IssuedKey::of(&key, &secret, now)))
}

/// `listKeys`.
pub async fn list_keys(
    state: web::Data<AppState>,
    _admin: Admin,
    Query(query): Query<KeyListQuery>,
) -> Result<HttpResponse, ApiError> {
    let now = query.now;
    let page = state
        .db
        .call("list_keys_page", |storage| {
            Box::pin(keys::list(storage, &query))
        })
        .await?;
    let body = KeyPage {
        keys: page.items.iter().map(|key| KeyView::of(key, now)).collect(),
        next_after: page.next_after,
    };
    Ok(answer(HttpResponse::Ok(), &body))
}

/// `getKey`.
pub async fn get_key(
    state: web::Data<AppState>,
    _admin: Admin,
    KeyId(id): KeyId,
    _: NoQuery,
) -> Result<HttpResponse, ApiError> {
    let key = find_key(&state, id).await?;
    Ok(answer(
        HttpResponse::Ok(),
        &KeyView::of(&key, state.clock.unix_now()),
    ))
}

/// Key `id` (`404 key_not_found` when there is none).
pub(super) async fn find_key(state: &AppState, id: i64) -> Result<ApiKey, ApiError> {
    state
        .db
        .call("find_key", |storage| Box::pin(keys::get(storage, id)))
        .await
}

/// `updateKey`.
pub async fn update_key(
    state: web::Data<AppState>,
    admin: Admin,
    KeyId(id): KeyId,
    _: NoQuery,
    body: JsonBody<UpdateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let change = KeyChange {
        plan: body.plan.as_deref().map(str::parse::<Plan>).transpose()?,
        per_minute: body.per_minute,
        per_day: body.per_day,
        scope: body.scope.as_deref().map(str::parse::<Scope>).transpose()?,
        label: body.label,
    };
    let key = state
        .db
        .call("update_key", |storage| {
            Box::pin(keys::update(storage, id, change))
        })
        .await?;
    audit(&admin, "updated", &key);
    Ok(answer(
        HttpResponse::Ok(),
        &KeyView::of(&key, state.clock.unix_now()),
    ))
}

/// `rotateKey`.
pub async fn rotate_key(
    state: web::Data<AppState>,
    admin: Admin,
    KeyId(id): KeyId,
    _: NoQuery,
    body: JsonBody<RotateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let grace = body
        .0
        .grace_seconds
        .map_or(DEFAULT_GRACE, Duration::from_secs);
    let now = state.clock.unix_now();
    let (key, secret) = state
        .db
        .call("rotate_key", |storage| {
            Box::pin(keys::rotate(storage, id, grace, now))
        })
        .await?;
    audit(&admin, "rotated", &key);
    Ok(answer(
        HttpResponse::Ok(),
        &IssuedKey::of(&key, &secret, now),
    ))
}

/// A change of a key that takes nothing but its id.
#[derive(Clone, Copy)]
pub enum KeyAction {
    /// `revokeKey`.
    Revoke,
    /// `unbanKey`.
    Unban,
}

/// `revokeKey` and `unbanKey`: the route that changes a key by `change`, audits it and answers
/// the key.
pub fn change_key(change: KeyAction) -> Route {
    web::post().to(
        move |state: web::Data<AppState>, admin: Admin, KeyId(id): KeyId, _: NoQuery| async move {
            let (operation, action) = match change {
                KeyAction::Revoke => ("revoke_key", "revoked"),
                KeyAction::Unban => ("unban_key", "unbanned"),
            };
            let key = state
                .db
                .call(operation, |storage| -> BoxFuture<'_, _> {
                    match change {
                        KeyAction::Revoke => Box::pin(keys::revoke(storage, id)),
                        KeyAction::Unban => Box::pin(keys::unban(storage, id)),
                    }
                })
                .await?;
            audit(&admin, action, &key);
            let now = state.clock.unix_now();
            Ok::<_, ApiError>(answer(HttpResponse::Ok(), &KeyView::of(&key, now)))
        },
    )
}
