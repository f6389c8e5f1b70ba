//! `petstore keys ...`: issue, list, revoke, re-plan and unban API keys.

use std::error::Error;
use std::io::Write;
use std::time::Duration;

use petstore_domain::{KeySpec, Storage};

use super::cli::{KeysCommand, custom_limits};
use crate::clock::{Clock, SystemClock};

/// Runs a `keys` command against `storage`.
pub fn keys(storage: &dyn Storage, command: KeysCommand) -> Result<(), Box<dyn Error>> {
    let mut out = std::io::stdout().lock();
    match command {
        KeysCommand::Create {
            plan,
            label,
            per_minute,
            per_day,
        } => {
            let custom = custom_limits(per_minute, per_day)?;
            let (key, secret) = storage.create_key(&KeySpec::new(plan, label, custom)?)?;
            writeln!(out, "{}", secret.expose())?;
            eprintln!("created key {} ({} plan)", key.id, key.plan);
        }
        KeysCommand::List => {
            writeln!(
                out,
                "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<20}  {:<20}  {:<20}  LABEL",
                "ID", "PREFIX", "PLAN", "PER_MIN", "PER_DAY", "CREATED", "REVOKED", "BANNED_UNTIL"
            )?;
            let now = SystemClock.unix_seconds();
            for key in storage.list_keys()? {
                let limits = key.limits();
                writeln!(
                    out,
                    "{:>6}  {:<12}  {:<10}  {:>10}  {:>10}  {:<20}  {:<20}  {:<20}  {}",
                    key.id,
                    key.display_prefix,
                    key.plan,
                    limits.per_minute,
                    limits.per_day,
                    timestamp(Some(key.created_at)),
                    timestamp(key.revoked_at),
                    timestamp(
                        key.ban_at(now)
                            .and_then(|ban| i64::try_from(ban.until).ok())
                    ),
                    key.label
                )?;
            }
        }
        KeysCommand::Revoke { id } => {
            if !storage.revoke_key(id)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("revoked key {id}");
        }
        KeysCommand::Update {
            id,
            plan,
            per_minute,
            per_day,
        } => {
            let custom = custom_limits(per_minute, per_day)?;
            KeySpec::new(plan, "", custom)?;
            if !storage.update_key_plan(id, plan, custom)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("key {id} is now on the {plan} plan");
        }
        KeysCommand::Unban { id } => {
            if !storage.unban_key(id)? {
                return Err(format!("no key has id {id}").into());
            }
            eprintln!("lifted any ban of key {id}");
        }
    }
    Ok(())
}

fn timestamp(unix: Option<i64>) -> String {
    unix.and_then(|secs| u64::try_from(secs).ok())
        .map(|secs| {
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(secs))
                .to_string()
        })
        .unwrap_or_else(|| "-".into())
}
