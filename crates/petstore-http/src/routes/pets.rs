//! `GET /pets`, `POST /pets`, `GET /pets/{petId}`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::{NewPet, PetListQuery, PetStatus};

use super::respond::encoded_body;
use crate::error::ApiError;
use crate::extract::{JsonBody, query_pairs};
use crate::state::AppState;
use crate::sunset::{SUNSET, SUNSET_UNIX};

/// `listPets`: a page in ascending id order; `Link: rel="next"` when more follow.
pub async fn list_pets(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(&req)?;
    let query = PetListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let page = state.db.read(move |db| db.list_pets(&query)).await?;
    let mut response = HttpResponse::Ok();
    if let Some(after) = page.next_after {
        let status = query.status.map(PetStatus::as_str);
        let limit = query.page.limit.get();
        let link = state.links.next_page(&req, "/pets", limit, status, after);
        response.insert_header((header::LINK, link));
    }
    Ok(encoded_body(
        response,
        page.items.as_slice(),
        page.items.len(),
    ))
}

/// `createPet`: `201`, the pet, and its `Location`.
pub async fn create_pet(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: JsonBody<NewPet>,
) -> Result<HttpResponse, ApiError> {
    let draft = body.0.validate_into()?;
    let pet = state.db.create_pet(draft).await?;
    let location = format!("{}/pets/{}", state.links.public_base(&req), pet.id);
    let mut response = HttpResponse::Created();
    response.insert_header((header::LOCATION, location));
    Ok(encoded_body(response, &pet, 1))
}

/// `getPet` (deprecated): the pet, `404`, or `410` once past the sunset.
pub async fn get_pet(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if state.clock.unix_seconds() >= SUNSET_UNIX {
        return Err(ApiError::EndpointRemoved {
            sunset: SUNSET,
            replacement: "GET /pets with a `status` filter",
        });
    }
    let id = parse_id(req.match_info().get("petId").unwrap_or_default())?;
    let pet = state
        .db
        .read(move |db| db.find_pet(id))
        .await?
        .ok_or(ApiError::PetNotFound(id))?;
    Ok(encoded_body(HttpResponse::Ok(), &pet, 1))
}

/// An int64 in plain decimal (an optional `-` and digits).
fn parse_id(raw: &str) -> Result<i64, ApiError> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid_id());
    }
    raw.parse().map_err(|_| invalid_id())
}

fn invalid_id() -> ApiError {
    ApiError::InvalidPath {
        name: "petId",
        reason: "must be an integer (int64)",
    }
}
