//! `PetRepository` for both backends.

use diesel::prelude::*;
use petstore_domain::{Page, Pet, PetDraft, PetListQuery, PetRepository, PetStatus};

use crate::schema::pets;
use crate::{AnyConnection, Store, StoreError, overfetch, unix_now};

type PetColumns = (pets::id, pets::name, pets::category_id, pets::status);
// RETURNING and SELECT list the columns explicitly: `MultiConnection` cannot use
// `Selectable::as_returning` (see shared/DEPENDENCIES.md).
const PET_COLUMNS: PetColumns = (pets::id, pets::name, pets::category_id, pets::status);

/// Inserts one pet (the SQLite writer batches calls of this in one transaction).
pub(crate) fn insert_pet(conn: &mut AnyConnection, pet: &PetDraft) -> QueryResult<PetRow> {
    diesel::insert_into(pets::table)
        .values((
            pets::name.eq(pet.name()),
            pets::category_id.eq(pet.category_id()),
            pets::status.eq(pet.status().as_str()),
            pets::created_at.eq(unix_now()),
        ))
        .returning(PET_COLUMNS)
        .get_result(conn)
}

#[derive(Queryable)]
pub(crate) struct PetRow {
    id: i64,
    name: String,
    category_id: i64,
    status: String,
}

impl TryFrom<PetRow> for Pet {
    type Error = StoreError;

    fn try_from(row: PetRow) -> Result<Self, StoreError> {
        let status: PetStatus = row.status.parse().map_err(|_| StoreError::Corrupt {
            table: "pets",
            reason: format!("pet {} has unknown status {:?}", row.id, row.status),
        })?;
        Ok(Pet {
            id: row.id,
            name: row.name,
            category_id: row.category_id,
            status,
        })
    }
}

impl PetRepository for Store {
    type Error = StoreError;

    fn create_pet(&self, pet: &PetDraft) -> Result<Pet, StoreError> {
        if let Some(writer) = &self.pet_writer {
            return writer.create(pet);
        }
        self.with_conn(|conn| insert_pet(conn, pet)?.try_into())
    }

    fn find_pet(&self, id: i64) -> Result<Option<Pet>, StoreError> {
        self.with_conn(|conn| {
            let query = pets::table.select(PET_COLUMNS).find(id);
            native!(conn, |c| query.first::<PetRow>(c))
                .optional()?
                .map(Pet::try_from)
                .transpose()
        })
    }

    fn list_pets(&self, query: &PetListQuery) -> Result<Page<Pet>, StoreError> {
        self.with_conn(|conn| {
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
