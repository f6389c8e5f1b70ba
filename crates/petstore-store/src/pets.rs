//! `PetRepository` for both backends.

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel::sqlite::{Sqlite, SqliteValue};
use petstore_domain::{
    CreatePet, Page, Pet, PetDraft, PetListQuery, PetRepository, PetStatus, StorageError,
};

use crate::schema::pets;
use crate::{AnyConnection, Store, StoreError, overfetch, unix_now};

type PetColumns = (pets::id, pets::name, pets::category_id, pets::status);
// RETURNING and SELECT list the columns explicitly: `MultiConnection` cannot use
// `Selectable::as_returning` (see shared/DEPENDENCIES.md).
const PET_COLUMNS: PetColumns = (pets::id, pets::name, pets::category_id, pets::status);

/// Inserts one pet (the SQLite writer batches calls of this in one transaction).
pub(crate) fn insert_pet(conn: &mut AnyConnection, pet: &PetDraft) -> QueryResult<PetRow> {
    let insert = diesel::insert_into(pets::table)
        .values((
            pets::name.eq(pet.name()),
            pets::category_id.eq(pet.category_id()),
            pets::status.eq(pet.status().as_str()),
            pets::created_at.eq(unix_now()),
        ))
        .returning(PET_COLUMNS);
    native!(conn, |c| insert.get_result(c))
}

#[derive(Queryable)]
pub(crate) struct PetRow {
    id: i64,
    name: String,
    category_id: i64,
    status: StoredStatus,
}

/// The `status` column, read in place: a `String` per row would be allocated only to be
/// parsed and dropped (a list page reads up to 101 of them).
#[derive(Debug, FromSqlRow)]
pub(crate) enum StoredStatus {
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

impl FromSql<Text, Sqlite> for StoredStatus {
    fn from_sql(mut value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        Ok(Self::parse(value.read_text()))
    }
}

impl FromSql<Text, Pg> for StoredStatus {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        Ok(Self::parse(std::str::from_utf8(value.as_bytes())?))
    }
}

impl TryFrom<PetRow> for Pet {
    type Error = StoreError;

    fn try_from(row: PetRow) -> Result<Self, StoreError> {
        let status = match row.status {
            StoredStatus::Known(status) => status,
            StoredStatus::Unknown(text) => {
                return Err(StoreError::Corrupt {
                    table: "pets",
                    reason: format!("pet {} has unknown status {text:?}", row.id),
                });
            }
        };
        Ok(Pet {
            id: row.id,
            name: row.name,
            category_id: row.category_id,
            status,
        })
    }
}

/// Inserts `pet` and, when it carries an idempotency completion, completes the claim with the
/// pet's response: both or neither (the caller runs this in a transaction or savepoint).
pub(crate) fn insert_completing(
    conn: &mut AnyConnection,
    pet: &CreatePet,
) -> Result<Pet, StoreError> {
    let created = Pet::try_from(insert_pet(conn, &pet.draft)?)?;
    if let Some(completion) = &pet.completion {
        let response = (completion.respond)(&created);
        if !crate::idempotency::complete(conn, &completion.claim, &response)? {
            return Err(StoreError::ClaimLost);
        }
    }
    Ok(created)
}

impl PetRepository for Store {
    fn create_pet(&self, pet: &CreatePet) -> Result<Pet, StorageError> {
        if let Some(writer) = &self.pet_writer {
            return Ok(writer.create(pet)?);
        }
        self.call(|conn| match pet.completion {
            None => insert_pet(conn, &pet.draft)?.try_into(),
            Some(_) => conn.transaction(|conn| insert_completing(conn, pet)),
        })
    }

    fn find_pet(&self, id: i64) -> Result<Option<Pet>, StorageError> {
        self.call(|conn| {
            // `get_result`, not `first`: a primary-key lookup needs no `LIMIT ?` to bind.
            let query = pets::table.select(PET_COLUMNS).find(id);
            native!(conn, |c| query.get_result::<PetRow>(c))
                .optional()?
                .map(Pet::try_from)
                .transpose()
        })
    }

    fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StorageError> {
        self.call(|conn| {
            // One static query per shape (not `into_boxed`), so Diesel keeps each one prepared.
            let all = pets::table
                .select(PET_COLUMNS)
                .order(pets::id.asc())
                .limit(overfetch(query.page.limit));
            let after = query.page.after;
            let rows: Vec<PetRow> = match query.status.map(PetStatus::as_str) {
                None => match after {
                    None => native!(conn, |c| all.load(c))?,
                    Some(after) => native!(conn, |c| all.filter(pets::id.gt(after)).load(c))?,
                },
                Some(status) => {
                    let with_status = all.filter(pets::status.eq(status));
                    match after {
                        None => native!(conn, |c| with_status.load(c))?,
                        Some(after) => {
                            native!(conn, |c| with_status.filter(pets::id.gt(after)).load(c))?
                        }
                    }
                }
            };
            let pets = rows
                .into_iter()
                .map(Pet::try_from)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Page::from_overfetch(pets, query.page.limit, |pet| pet.id))
        })
    }
}
