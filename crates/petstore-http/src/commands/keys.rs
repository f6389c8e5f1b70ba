//! `petstore keys ...`: issue, list, revoke, rotate, re-plan, re-scope and unban API keys.

use std::error::Error;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use petstore_domain::{ApiKey, KeySpec, Storage};
use serde_json::{Value, json};

use super::cli::{KeysCommand, ListFormat, custom_limits};
use super::timestamp;
use crate::clock::{Clock, SystemClock};

/// Runs a `keys` command against `storage`.
pub async fn keys(storage: &dyn Storage, command: KeysCommand) -> Result<(), Box<dyn Error>> {
    let mut out = std::io::stdout().lock();
    let now = i64::try_from(SystemClock.unix_seconds()).unwrap_or(i64::MAX);
    match command {
        KeysCommand::Create {
            plan,
            label,
            per_minute,
            per_day,
            scope,
            expires_in,
            expires_at,
        } => {
            let custom = custom_limits(per_minute, per_day)?;
            let mut spec = KeySpec::new(plan, label, custom)?.with_scope(scope);
            let expires_at = match (expires_in, expires_at) {
                (Some(after), _) => Some(now.saturating_add(seconds(after))),
                (None, Some(at)) => Some(unix(at)?),
                (None, None) => None,
            };
            if let Some(at) = expires_at {
                spec = spec.expiring_at(at, now)?;
            }
            let (key, secret) = storage.create_key(&spec).await?;
            writeln!(out, "{}", secret.expose())?;
            eprintln!(
                "created key {} ({} plan, {}{})",
                key.id,
                key.plan,
                key.scope,
                key.expires_at
                    .map(|at| format!(", expires {}", timestamp(Some(at))))
                    .unwrap_or_default()
            );
        }
        KeysCommand::List { format } => {
            let keys = storage.list_keys().await?;
            match format {
                ListFormat::Json => {
                    let listed: Vec<Value> = keys.iter().map(|key| as_json(key, now)).collect();
                    writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
                }
                ListFormat::Text => list_text(&mut out, &keys, now)?,
            }
        }
        KeysCommand::Revoke { id } => {
            if !storage.revoke_key(id).await? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("revoked key {id}");
        }
        KeysCommand::Rotate { id, grace } => {
            let grace_until = now.saturating_add(seconds(grace));
            let Some((key, secret)) = storage.rotate_key(id, grace_until).await? else {
                return Err(format!("no active key has id {id}").into());
            };
            writeln!(out, "{}", secret.expose())?;
            if grace.is_zero() {
                eprintln!(
                    "key {} has a new secret; the old one no longer works",
                    key.id
                );
            } else {
                eprintln!(
                    "key {} has a new secret; the old one works until {}",
                    key.id,
                    timestamp(Some(grace_until))
                );
            }
        }
        KeysCommand::Update {
            id,
            plan,
            per_minute,
            per_day,
            scope,
        } => {
            if let Some(plan) = plan {
                let custom = custom_limits(per_minute, per_day)?;
                KeySpec::new(plan, "", custom)?;
                if !storage.update_key_plan(id, plan, custom).await? {
                    return Err(format!("no key has id {id}").into());
                }
                eprintln!("key {id} is now on the {plan} plan");
            }
            if let Some(scope) = scope {
                if !storage.update_key_scope(id, scope).await? {
                    return Err(format!("no key has id {id}").into());
                }
                eprintln!("key {id} is now {scope}");
            }
        }
        KeysCommand::Unban { id } => {
            if !storage.unban_key(id).await? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("lifted any ban of key {id}");
        }
    }
    Ok(())
}

fn list_text(out: &mut impl Write, keys: &[ApiKey], now: i64) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<10}  {:<7}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}  LABEL",
        "ID",
        "PREFIX",
        "PLAN",
        "PER_MIN",
        "PER_DAY",
        "SCOPE",
        "STATE",
        "CREATED",
        "EXPIRES",
        "LAST_USED",
        "BANNED_UNTIL",
        "OLD_SECRET_UNTIL"
    )?;
    let now_u = u64::try_from(now).unwrap_or(0);
    for key in keys {
        let limits = key.limits();
        writeln!(
            out,
            "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<10}  {:<7}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}  {}",
            key.id,
            key.display_prefix,
            key.plan,
            limits.per_minute,
            limits.per_day,
            key.scope,
            key.state_at(now),
            timestamp(Some(key.created_at)),
            timestamp(key.expires_at),
            timestamp(key.last_used_at),
            timestamp(
                key.ban_at(now_u)
                    .and_then(|ban| i64::try_from(ban.until).ok())
            ),
            timestamp(key.previous_secret_until.filter(|until| *until > now)),
            key.label
        )?;
    }
    Ok(())
}

/// A key as `keys list --format json` shows it; times in RFC 3339, `null` when unset.
fn as_json(key: &ApiKey, now: i64) -> Value {
    let limits = key.limits();
    let time = |at: Option<i64>| at.map(|at| timestamp(Some(at)));
    json!({
        "id": key.id,
        "prefix": key.display_prefix,
        "plan": key.plan.as_str(),
        "perMinute": limits.per_minute,
        "perDay": limits.per_day,
        "scope": key.scope.as_str(),
        "state": key.state_at(now),
        "label": key.label,
        "createdAt": time(Some(key.created_at)),
        "expiresAt": time(key.expires_at),
        "revokedAt": time(key.revoked_at),
        "lastUsedAt": time(key.last_used_at),
        "bannedUntil": time(
            key.ban_at(u64::try_from(now).unwrap_or(0))
                .and_then(|ban| i64::try_from(ban.until).ok())
        ),
        "previousSecretUntil": time(key.previous_secret_until.filter(|until| *until > now)),
    })
}

fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

fn unix(at: SystemTime) -> Result<i64, Box<dyn Error>> {
    let since = at
        .duration_since(UNIX_EPOCH)
        .map_err(|_| "--expires-at must be after 1970")?;
    Ok(seconds(since))
}
