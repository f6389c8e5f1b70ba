//! `GET /pets`, `POST /pets`, `GET /pets/{petId}`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::{CreatePet, NewPet, Pet, PetListQuery, PetStatus};

use super::respond::{conditional, encoded_body};
use crate::auth::{Caller, Read};
use crate::conditional::{Caching, ETag};
use crate::db::storage_call;
use crate::error::ApiError;
use crate::extract::{PetId, Query, parse};
use crate::idempotency::{self, CreateRequest};
use crate::state::AppState;
use crate::sunset::{SUNSET, SUNSET_UNIX};

/// `listPets`: a page in ascending id order; `Link: rel="next"` when more follow.
pub async fn list_pets(
    state: web::Data<AppState>,
    _caller: Caller<Read>,
    Query(query): Query<PetListQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = storage_call!(state.db, list_pets(&query)).await?;
    let mut response = HttpResponse::Ok();
    if let Some(after) = page.next_after {
        let status = query.status.map(PetStatus::as_str);
        let limit = query.page.limit.get();
        let link = state.links.next_page(&req, "/pets", limit, status, after);
        response.insert_header((header::LINK, link));
    }
    let items = page.items.as_slice();
    let tag = ETag::of(&(items, page.next_after));
    Ok(conditional(&req, response, tag, Caching::Private, |r| {
        encoded_body(r, items, items.len())
    }))
}

/// `createPet`: `201`, the pet, and its `Location`.
pub async fn create_pet(
    state: web::Data<AppState>,
    request: CreateRequest,
) -> Result<HttpResponse, ApiError> {
    let creator = Some(request.caller.key().id);
    idempotency::create(&state, &request, "pets/createPet", |completion| async {
        let draft = parse::<NewPet>(&request.body)?.validate_into()?;
        create(
            &state,
            CreatePet {
                draft,
                completion,
                creator,
            },
        )
        .await
    })
    .await
}

async fn create(state: &AppState, pet: CreatePet) -> Result<Pet, ApiError> {
    storage_call!(state.db, create_pet(&pet)).await
}

/// `getPet` (deprecated): the pet, `404`, or `410` once past the sunset.
#[deprecated(note = "removed on 5 December 2030: use GET /pets with a status filter")]
pub async fn get_pet(
    state: web::Data<AppState>,
    req: HttpRequest,
    _caller: Caller<Read>,
    id: Result<PetId, ApiError>,
) -> Result<HttpResponse, ApiError> {
    // Past the sunset the resource is gone, whatever the id.
    if state.clock.unix_seconds() >= SUNSET_UNIX {
        return Err(ApiError::EndpointRemoved {
            sunset: SUNSET,
            replacement: "GET /pets with a `status` filter",
        });
    }
    let PetId(id) = id?;
    let pet = storage_call!(state.db, find_pet(id))
        .await?
        .ok_or(ApiError::PetNotFound(id))?;
    let tag = ETag::of(&pet);
    Ok(conditional(
        &req,
        HttpResponse::Ok(),
        tag,
        Caching::Private,
        |r| encoded_body(r, &pet, 1),
    ))
}
