//! Pets: create, read one, list a page.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow, FromStaticSqlRow};
#[cfg(feature = "postgres")]
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Text};
#[cfg(feature = "sqlite")]
use diesel::sqlite::{Sqlite, SqliteValue};
#[cfg(feature = "postgres")]
use petstore_domain::webhook::{BodyAroundId, EventType};
use petstore_domain::{Completion, CreatePet, Page, Pet, PetListQuery, PetStatus, StoredResponse};

use super::{Now, Result, columns, overfetch};
use crate::StoreError;
use crate::conn::Conn;
use crate::schema::pets;

/// Inserts one pet.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
async fn insert_pet(conn: &mut Conn<'_>, pet: &petstore_domain::PetDraft, now: Now) -> Result<Pet> {
    let insert = diesel::insert_into(pets::table).values((
        pets::name.eq(pet.name()),
        pets::category_id.eq(pet.category_id()),
        pets::status.eq(pet.status().as_str()),
        pets::created_at.eq(now.unix()),
    ));
    let PetRow(pet) = run_returning!(conn, get_result, insert.returning(columns::<PetRow>()),
        mysql(c) => mysql_inserted!(c, insert, pets::table, PetRow))
    .map_err(read_error)?;
    Ok(pet)
}

/// A pet row, decoded into the domain's [`Pet`] as it is read: a page is loaded into the vector
/// it is answered from, with no second pass to convert rows (which moved every row and resized
/// the page's buffer). A row whose status is not one the domain knows does not decode:
/// [`read_error`] reports it as corrupt.
#[repr(transparent)]
struct PetRow(Pet);

/// The columns a [`PetRow`] is read from, for `SELECT` and `RETURNING` alike.
impl<DB: Backend> Selectable<DB> for PetRow {
    type SelectExpression = (pets::id, pets::name, pets::category_id, pets::status);

    fn construct_selection() -> Self::SelectExpression {
        (pets::id, pets::name, pets::category_id, pets::status)
    }
}

impl<DB: Backend> Queryable<(BigInt, Text, BigInt, Text), DB> for PetRow
where
    (i64, String, i64, StoredStatus): FromStaticSqlRow<(BigInt, Text, BigInt, Text), DB>,
{
    type Row = (i64, String, i64, StoredStatus);

    fn build((id, name, category_id, status): Self::Row) -> deserialize::Result<Self> {
        let status = match status {
            StoredStatus::Known(status) => status,
            StoredStatus::Unknown(text) => return Err(Box::new(UnknownStatus { id, text })),
        };
        Ok(Self(Pet {
            id,
            name,
            category_id,
            status,
        }))
    }
}

/// The `status` column, read in place: a `String` per row would be allocated only to be
/// parsed and dropped (a list page reads up to 101 of them).
#[derive(Debug, FromSqlRow)]
enum StoredStatus {
    Known(PetStatus),
    /// Not a status the service writes: the row was changed outside it.
    Unknown(String),
}

impl StoredStatus {
    fn parse(text: &str) -> Self {
        text.parse()
            .map_or_else(|_| Self::Unknown(text.to_owned()), Self::Known)
    }
}

#[cfg(feature = "sqlite")]
impl FromSql<Text, Sqlite> for StoredStatus {
    fn from_sql(mut value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        Ok(Self::parse(value.read_text()))
    }
}

#[cfg(feature = "postgres")]
impl FromSql<Text, Pg> for StoredStatus {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        Ok(Self::parse(std::str::from_utf8(value.as_bytes())?))
    }
}

#[cfg(feature = "mysql")]
impl FromSql<Text, diesel::mysql::Mysql> for StoredStatus {
    fn from_sql(value: diesel::mysql::MysqlValue<'_>) -> deserialize::Result<Self> {
        Ok(Self::parse(std::str::from_utf8(value.as_bytes())?))
    }
}

/// A stored status the domain does not know: why a [`PetRow`] did not decode. Raised by
/// `build`, whose errors Diesel passes on as they are; raised by a `FromSql`, it would come
/// wrapped (a field error) and [`read_error`] would not find it.
#[derive(Debug, thiserror::Error)]
#[error("pet {id} has unknown status {text:?}")]
pub(super) struct UnknownStatus {
    pub(super) id: i64,
    pub(super) text: String,
}

impl UnknownStatus {
    /// The store's error for such a row: corrupt.
    pub(super) fn corrupt(&self) -> StoreError {
        StoreError::Corrupt {
            table: "pets",
            reason: self.to_string(),
        }
    }
}

/// The store's error for a failed query returning pets (a read, or an insert's `RETURNING`): a
/// row that did not decode for its status is corrupt; anything else is what Diesel's error is.
fn read_error(error: DieselError) -> StoreError {
    let DieselError::DeserializationError(source) = error else {
        return error.into();
    };
    match source.downcast::<UnknownStatus>() {
        Ok(unknown) => unknown.corrupt(),
        Err(source) => DieselError::DeserializationError(source).into(),
    }
}

/// Inserts `pet`, records its `pet.created` event (`webhooks::record`) and, when it carries an
/// idempotency completion, completes the claim with the pet's response: all or nothing (the
/// caller runs this in a transaction or savepoint).
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) async fn insert_completing(
    mut conn: Conn<'_>,
    pet: &CreatePet,
    now: Now,
) -> Result<Pet> {
    let created = insert_pet(&mut conn, &pet.draft, now).await?;
    let event = petstore_domain::webhook::NewEvent::pet_created(now.at, &created, pet.creator)
        .in_trace(now.trace);
    super::webhooks::record(&mut conn, &event, now).await?;
    match &pet.completion {
        Some(completion) => complete(conn, created, completion).await,
        None => Ok(created),
    }
}

/// Creates `pet` on its own, in a transaction with its event (and its idempotency claim's
/// completion): MariaDB's and MySQL's way, which have no data-modifying `WITH`. (SQLite's
/// writer creates pets in batches, its own way; PostgreSQL's is [`create_in_one_statement`].)
#[cfg(feature = "mysql")]
pub(crate) async fn create(mut conn: Conn<'_>, pet: CreatePet, now: Now) -> Result<Pet> {
    conn.begin().await?;
    let created = insert_completing(conn.reborrow(), &pet, now).await;
    conn.finish(created).await
}

/// Creates `pet` on PostgreSQL in one statement, with no transaction of its own: the pet and its
/// `pet.created` deliveries, whose body the database completes with the id it gives the pet
/// (`webhooks::insert_with_event`). With an idempotency completion, which needs the pet's id,
/// that statement and the completion are a transaction.
#[cfg(feature = "postgres")]
pub(crate) async fn create_in_one_statement(
    mut conn: Conn<'_>,
    pet: CreatePet,
    now: Now,
) -> Result<Pet> {
    let CreatePet {
        draft,
        completion,
        creator,
    } = pet;
    let unnumbered = draft.into_pet(0);
    let insert = diesel::insert_into(pets::table)
        .values((
            pets::name.eq(unnumbered.name.as_str()),
            pets::category_id.eq(unnumbered.category_id),
            pets::status.eq(unnumbered.status.as_str()),
            pets::created_at.eq(now.unix()),
        ))
        .returning(pets::id);
    let body = BodyAroundId::pet_created(now.at, &unnumbered).ok_or_else(|| {
        StoreError::Config("BUG: a pet.created body with no place for the id".into())
    })?;
    let event = (EventType::PetCreated, creator, now.trace);
    let Some(completion) = completion else {
        let id = super::webhooks::insert_with_event(&mut conn, insert, event, &body, now).await?;
        return Ok(Pet { id, ..unnumbered });
    };
    conn.begin().await?;
    let written =
        match super::webhooks::insert_with_event(&mut conn, insert, event, &body, now).await {
            Ok(id) => complete(conn.reborrow(), Pet { id, ..unnumbered }, &completion).await,
            Err(error) => Err(error),
        };
    conn.finish(written).await
}

/// Completes `completion`'s claim with the response for `created`, in the transaction that
/// wrote it: [`StoreError::ClaimLost`] when the claim no longer holds.
async fn complete(conn: Conn<'_>, created: Pet, completion: &Completion) -> Result<Pet> {
    let response = StoredResponse::created(&created, &completion.base);
    if !super::idempotency::complete(conn, &completion.claim, &response).await? {
        return Err(StoreError::ClaimLost);
    }
    Ok(created)
}

/// The pet with this id, if any.
pub(crate) async fn find(mut conn: Conn<'_>, id: i64) -> Result<Option<Pet>> {
    // `get_result`, not `first`: a primary-key lookup needs no `LIMIT ?` to bind.
    let query = pets::table.select(columns::<PetRow>()).find(id);
    let row: Option<PetRow> = run!(&mut conn, get_result, query)
        .optional()
        .map_err(read_error)?;
    Ok(row.map(|PetRow(pet)| pet))
}

/// A page of pets in ascending id order, filtered by status when asked.
pub(crate) async fn list(mut conn: Conn<'_>, query: PetListQuery) -> Result<Page<Pet>> {
    // One static query per shape (not `into_boxed`), so Diesel keeps each one prepared.
    let all = pets::table
        .select(columns::<PetRow>())
        .order(pets::id.asc())
        .limit(overfetch(query.page.limit));
    // PostgreSQL's (and MySQL's) page of pets with one status (see below).
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    let by_status = |status| {
        pets::table
            .select(columns::<PetRow>())
            .filter(pets::status.between(status, status))
            .order((pets::status.asc(), pets::id.asc()))
            .limit(overfetch(query.page.limit))
    };
    let after = query.page.after;
    let conn = &mut conn;
    let rows: QueryResult<Vec<PetRow>> = match query.status.map(PetStatus::as_str) {
        None => match after {
            None => run!(conn, load, all),
            Some(after) => run!(conn, load, all.filter(pets::id.gt(after))),
        },
        // Each filtered page must walk the `(status, id)` index, whose entries for one status
        // are that status's pets in id order, from `after` on (any id for the first): its cost
        // is the page's, whatever the catalogue holds. Each planner has to be led there, for
        // each may judge walking the primary key and filtering cheaper when it expects the
        // status to be common, which for a rare status reads the whole table:
        // - SQLite does so for a first page once `ANALYZE` has run, unless the id is bounded
        //   too (`status = ? AND id > ?`: the index's two columns, which it then prefers);
        // - PostgreSQL's generic plans (the service's connections use them) estimate
        //   `status = $1` as a third of the table. Stated as a range ordered by
        //   `(status, id)`, the page can be read in order only from that index (from the
        //   primary key it would need a sort of every match), so every plan uses it.
        // `tests/page_plans.rs` checks both planners' choices on a skewed catalogue.
        Some(status) => {
            let after = after.unwrap_or(i64::MIN);
            run!(
                conn,
                load,
                sqlite: all.filter(pets::status.eq(status)).filter(pets::id.gt(after)),
                servers: by_status(status).filter(pets::id.gt(after))
            )
        }
    };
    // In place: a `PetRow` is a `Pet` (`repr(transparent)`).
    let pets = rows
        .map_err(read_error)?
        .into_iter()
        .map(|PetRow(pet)| pet)
        .collect();
    Ok(Page::from_overfetch(pets, query.page.limit, |pet| pet.id))
}
