//! Admin tokens. Only the SHA-256 of a token is stored; the secret is returned once.

use diesel::prelude::*;
use petstore_domain::{AdminToken, AdminTokenSecret, AdminTokenSpec, KeyHash};

use super::keys::random_bytes;
use super::{Now, Result, coalesce, columns};
use crate::conn::Conn;
use crate::schema::admin_tokens;

#[derive(Queryable, Selectable)]
#[diesel(table_name = admin_tokens)]
struct TokenRow {
    id: i64,
    label: String,
    display_prefix: String,
    created_at: i64,
    revoked_at: Option<i64>,
}

impl From<TokenRow> for AdminToken {
    fn from(row: TokenRow) -> Self {
        Self {
            id: row.id,
            label: row.label,
            display_prefix: row.display_prefix,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
        }
    }
}

/// A new random token (the operating system's random source).
pub(crate) fn random_token() -> Result<AdminTokenSecret> {
    Ok(AdminTokenSecret::from_random_bytes(random_bytes()?))
}

/// Issues a token with `secret` (made by the caller, outside any retry).
pub(crate) async fn create(
    mut conn: Conn<'_>,
    spec: AdminTokenSpec,
    secret: AdminTokenSecret,
    now: Now,
) -> Result<(AdminToken, AdminTokenSecret)> {
    let insert = diesel::insert_into(admin_tokens::table).values((
        admin_tokens::token_hash.eq(secret.hash().as_str().to_owned()),
        admin_tokens::display_prefix.eq(secret.display_prefix()),
        admin_tokens::label.eq(spec.label()),
        admin_tokens::created_at.eq(now.unix()),
    ));
    let row: TokenRow = run_returning!(&mut conn, get_result, insert.returning(columns::<TokenRow>()),
        mysql(c) => mysql_inserted!(c, insert, admin_tokens::table, TokenRow))?;
    Ok((row.into(), secret))
}

/// The non-revoked token whose secret has this hash.
pub(crate) async fn find_active(mut conn: Conn<'_>, hash: KeyHash) -> Result<Option<AdminToken>> {
    let query = admin_tokens::table
        .select(columns::<TokenRow>())
        .filter(admin_tokens::token_hash.eq(hash.as_str().to_owned()))
        .filter(admin_tokens::revoked_at.is_null());
    let row: Option<TokenRow> = run!(&mut conn, first, query).optional()?;
    Ok(row.map(AdminToken::from))
}

/// Every token, revoked ones included, in id order.
pub(crate) async fn list(mut conn: Conn<'_>) -> Result<Vec<AdminToken>> {
    let query = admin_tokens::table
        .select(columns::<TokenRow>())
        .order(admin_tokens::id.asc());
    let rows: Vec<TokenRow> = run!(&mut conn, load, query)?;
    Ok(rows.into_iter().map(AdminToken::from).collect())
}

/// Revokes a token (keeping the first revocation's time); `false` when no token has this id.
pub(crate) async fn revoke(mut conn: Conn<'_>, id: i64, now: Now) -> Result<bool> {
    let revoked_at = coalesce(admin_tokens::revoked_at, Some(now.unix()));
    let revoke =
        diesel::update(admin_tokens::table.find(id)).set(admin_tokens::revoked_at.eq(revoked_at));
    Ok(run!(&mut conn, execute, revoke)? > 0)
}
