//! `petstore admin-tokens ...`: issue, list and revoke the admin API's tokens.

use std::error::Error;
use std::io::Write;

use comfy_table::{Table, presets};
use petstore_domain::{AdminToken, AdminTokenSpec, Storage};
use serde_json::{Value, json};

use crate::cli::{AdminTokensCommand, Format};
use crate::timestamp;

/// Runs an `admin-tokens` command against `storage`.
pub async fn admin_tokens(
    storage: &dyn Storage,
    command: AdminTokensCommand,
) -> Result<(), Box<dyn Error>> {
    let mut out = std::io::stdout().lock();
    match command {
        AdminTokensCommand::Create { label, format } => {
            let spec = AdminTokenSpec::new(label)?;
            let (token, secret) = storage.create_admin_token(&spec).await?;
            match format {
                Format::Text => writeln!(out, "{}", secret.expose())?,
                Format::Json => {
                    let mut shown = as_json(&token);
                    shown["token"] = json!(secret.expose());
                    writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
                }
            }
            eprintln!("created admin token {} ({})", token.id, token.label);
        }
        AdminTokensCommand::List { format } => {
            let tokens = storage.list_admin_tokens().await?;
            match format {
                Format::Json => {
                    let listed: Vec<Value> = tokens.iter().map(as_json).collect();
                    writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
                }
                Format::Text => {
                    let mut table = Table::new();
                    table.load_preset(presets::NOTHING);
                    table.set_header(["ID", "PREFIX", "STATE", "CREATED", "REVOKED", "LABEL"]);
                    for token in &tokens {
                        table.add_row([
                            token.id.to_string(),
                            token.display_prefix.clone(),
                            state(token).to_owned(),
                            timestamp(Some(token.created_at)),
                            timestamp(token.revoked_at),
                            token.label.clone(),
                        ]);
                    }
                    writeln!(out, "{}", table.trim_fmt())?;
                }
            }
        }
        AdminTokensCommand::Revoke { id } => {
            if !storage.revoke_admin_token(id).await? {
                return Err(format!("no admin token has id {id}").into());
            }
            eprintln!("revoked admin token {id}");
        }
    }
    Ok(())
}

fn state(token: &AdminToken) -> &'static str {
    if token.revoked_at.is_some() {
        "revoked"
    } else {
        "active"
    }
}

/// A token as `admin-tokens list --format json` shows it (never its secret).
fn as_json(token: &AdminToken) -> Value {
    let time = |at: Option<i64>| (at.is_some()).then(|| timestamp(at));
    json!({
        "id": token.id,
        "prefix": token.display_prefix,
        "label": token.label,
        "state": state(token),
        "createdAt": time(Some(token.created_at)),
        "revokedAt": time(token.revoked_at),
    })
}
