//! `petstore keys ...`: issue, show, verify, list, revoke, rotate, re-plan, re-scope and unban
//! API keys.

use std::error::Error;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use comfy_table::{ContentArrangement, Table, presets};
use petstore_domain::{ApiKey, ApiKeySecret, Storage};
use serde_json::{Value, json};

use crate::cli::{Format, KeysCommand};
use crate::timestamp;
use petstore_domain::key_admin::{self as admin, IssuedKey, KeyChange, KeyView, NewKey};
use petstore_domain::{Clock, SystemClock};

/// `keys verify`'s exit status when no active key has the secret.
const UNKNOWN: u8 = 3;
/// `keys verify`'s exit status when the secret is a key's but does not work now.
const NOT_VALID_NOW: u8 = 4;
/// The widest a `keys list` table gets without `--wide`.
const TABLE_WIDTH: u16 = 100;

/// Runs a `keys` command against `storage`, through the operations the admin API runs too.
pub async fn keys(storage: &dyn Storage, command: KeysCommand) -> Result<ExitCode, Box<dyn Error>> {
    let mut out = std::io::stdout().lock();
    let now = SystemClock.unix_now();
    match command {
        KeysCommand::Create {
            plan,
            label,
            per_minute,
            per_day,
            scope,
            expires_in,
            expires_at,
            format,
        } => {
            let expires_at = match (expires_in, expires_at) {
                (Some(after), _) => Some(now.saturating_add(seconds(after))),
                (None, Some(at)) => Some(unix(at)?),
                (None, None) => None,
            };
            let new = NewKey {
                plan: Some(plan),
                label,
                per_minute,
                per_day,
                scope,
                expires_at,
            };
            let (key, secret) = admin::create(storage, new, now).await?;
            write_secret(&mut out, format, &key, &secret, now)?;
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
        KeysCommand::Show { id, format } => {
            let key = admin::get(storage, id).await?;
            match format {
                Format::Json => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&KeyView::of(&key, now))?
                )?,
                Format::Text => show_text(&mut out, &key, now)?,
            }
        }
        KeysCommand::Verify { format } => return verify(storage, format, now, &mut out).await,
        KeysCommand::List { format, wide } => {
            let keys = admin::all(storage).await?;
            match format {
                Format::Json => {
                    let listed: Vec<KeyView> =
                        keys.iter().map(|key| KeyView::of(key, now)).collect();
                    writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
                }
                Format::Text => writeln!(out, "{}", table(&keys, now, wide).trim_fmt())?,
            }
        }
        KeysCommand::Revoke { id } => {
            admin::revoke(storage, id).await?;
            eprintln!("revoked key {id}");
        }
        KeysCommand::Rotate { id, grace, format } => {
            let (key, secret) = admin::rotate(storage, id, grace, now).await?;
            write_secret(&mut out, format, &key, &secret, now)?;
            match key.previous_secret_until.filter(|until| *until > now) {
                None => eprintln!(
                    "key {} has a new secret; the old one no longer works",
                    key.id
                ),
                Some(until) => eprintln!(
                    "key {} has a new secret; the old one works until {}",
                    key.id,
                    timestamp(Some(until))
                ),
            }
        }
        KeysCommand::Update {
            id,
            plan,
            per_minute,
            per_day,
            scope,
            label,
        } => {
            let change = KeyChange {
                plan,
                per_minute,
                per_day,
                scope,
                label,
            };
            let key = admin::update(storage, id, change).await?;
            eprintln!(
                "key {id} is now on the {} plan, {}, labelled {:?}",
                key.plan, key.scope, key.label
            );
        }
        KeysCommand::Unban { id } => {
            admin::unban(storage, id).await?;
            eprintln!("lifted any ban of key {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys verify`: which key the secret on standard input is, and whether it works now.
async fn verify(
    storage: &dyn Storage,
    format: Format,
    now: i64,
    out: &mut impl Write,
) -> Result<ExitCode, Box<dyn Error>> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let found = match ApiKeySecret::parse(line.trim()) {
        Some(secret) => storage.find_active_key(&secret.hash()).await?,
        None => None,
    };
    let Some(found) = found else {
        match format {
            Format::Text => writeln!(out, "unknown: no active key has this secret")?,
            Format::Json => writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json!({ "known": false }))?
            )?,
        }
        return Ok(ExitCode::from(UNKNOWN));
    };
    let key = &found.key;
    let valid = found.is_valid_at(now);
    let state = match (valid, key.state_at(now)) {
        (true, _) => "active",
        (false, "active") => "rotated out",
        (false, state) => state,
    };
    match format {
        Format::Text => writeln!(
            out,
            "key {}: {} plan, {}, {}{}",
            key.id,
            key.plan,
            key.scope,
            state,
            found
                .valid_until
                .filter(|_| valid)
                .map(|until| format!(" until {}", timestamp(Some(until))))
                .unwrap_or_default()
        )?,
        Format::Json => {
            let mut shown = serde_json::to_value(KeyView::of(key, now))?;
            shown["known"] = json!(true);
            shown["valid"] = json!(valid);
            shown["state"] = json!(state);
            shown["validUntil"] = json!(found.valid_until.map(|at| timestamp(Some(at))));
            writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
        }
    }
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_VALID_NOW)
    })
}

/// A new secret as `keys create` and `keys rotate` print it: alone on a line, or in JSON with
/// every attribute of its key, `{id, key, ...}`.
fn write_secret(
    out: &mut impl Write,
    format: Format,
    key: &ApiKey,
    secret: &ApiKeySecret,
    now: i64,
) -> Result<(), Box<dyn Error>> {
    match format {
        Format::Text => writeln!(out, "{}", secret.expose())?,
        Format::Json => {
            let issued = IssuedKey::of(key, secret, now);
            writeln!(out, "{}", serde_json::to_string_pretty(&issued)?)?;
        }
    }
    Ok(())
}

/// `keys list` as a table: the columns that fit 100 characters (labels wrap; `STATE` says
/// `banned` for an active key under a ban), or with `wide` every column at its full width.
fn table(keys: &[ApiKey], now: i64, wide: bool) -> Table {
    let now_u = u64::try_from(now).unwrap_or(0);
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    let mut header = vec![
        "ID", "PREFIX", "PLAN", "PER_MIN", "PER_DAY", "SCOPE", "STATE",
    ];
    if wide {
        header.extend([
            "CREATED",
            "EXPIRES",
            "LAST_USED",
            "BANNED_UNTIL",
            "OLD_SECRET_UNTIL",
        ]);
    } else {
        header.push("EXPIRES");
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(TABLE_WIDTH);
    }
    header.push("LABEL");
    table.set_header(header);
    for key in keys {
        let limits = key.limits();
        let mut row = vec![
            key.id.to_string(),
            key.display_prefix.clone(),
            key.plan.to_string(),
            limits.per_minute.to_string(),
            limits.per_day.to_string(),
            key.scope.to_string(),
            // Without `--wide` a ban in force shows here, for want of its own column.
            match (key.state_at(now), key.ban_at(now_u)) {
                ("active", Some(_)) if !wide => "banned".to_owned(),
                (state, _) => state.to_owned(),
            },
        ];
        if wide {
            row.extend([
                timestamp(Some(key.created_at)),
                timestamp(key.expires_at),
                timestamp(key.last_used_at),
                timestamp(
                    key.ban_at(now_u)
                        .and_then(|ban| i64::try_from(ban.until).ok()),
                ),
                timestamp(key.previous_secret_until.filter(|until| *until > now)),
            ]);
        } else {
            // The date alone: the time of day is in `--wide` and `keys show`.
            row.push(timestamp(key.expires_at).chars().take(10).collect());
        }
        row.push(key.label.clone());
        table.add_row(row);
    }
    table
}

/// `keys show` as text: one attribute a line.
fn show_text(out: &mut impl Write, key: &ApiKey, now: i64) -> std::io::Result<()> {
    let Ok(Value::Object(fields)) = serde_json::to_value(KeyView::of(key, now)) else {
        return Ok(());
    };
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    for (name, value) in fields {
        let value = match value {
            Value::String(text) => text,
            Value::Null => "-".to_owned(),
            other => other.to_string(),
        };
        table.add_row(vec![name, value]);
    }
    writeln!(out, "{}", table.trim_fmt())
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
