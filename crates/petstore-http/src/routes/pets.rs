//! `GET /pets`, `POST /pets`, `GET /pets/{petId}`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use petstore_domain::{CreatePet, NewPet, Pet, PetListQuery, PetStatus};

use super::respond::{conditional, encoded_body};
use crate::auth::{Caller, Read};
use crate::conditional::{Caching, ETag};
use crate::error::responses::{JsonBodyErrors, PageParams, PetNotFound, ReadOnlyKey};
use crate::error::{ApiError, ErrorObject};
use crate::extract::{PetId, Query, parse};
use crate::idempotency::{self, CreateRequest};
use crate::state::AppState;
use crate::sunset::{SUNSET, SUNSET_UNIX};

/// `listPets`: a page in ascending id order; `Link: rel="next"` when more follow.
#[utoipa::path(
    get,
    path = "/pets",
    operation_id = "listPets",
    tag = "pets",
    summary = "List pets",
    description = "Pets in ascending id order, filtered by `status` when given. When more pets \
        follow, `Link: <...>; rel=\"next\"` gives the next page's address (keyset cursor \
        `after`); the body stays a plain array.",
    params(
        PageParams,
        ("status" = Option<PetStatus>, Query, description = "Only pets with this status."),
    ),
    responses(
        (status = 200, description = "A page of pets.", body = Vec<Pet>, headers(
            ("Link" = String, description = "`<...>; rel=\"next\"` when more pets follow."),
        )),
        (status = 400, description = "`invalid_query_parameter` or `unknown_query_parameter`, \
            naming the parameter.", body = ErrorObject),
    ),
)]
pub async fn list_pets(
    state: web::Data<AppState>,
    _caller: Caller<Read>,
    Query(query): Query<PetListQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .db
        .call("list_pets", |storage| storage.list_pets(&query))
        .await?;
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
#[utoipa::path(
    post,
    path = "/pets",
    operation_id = "createPet",
    tag = "pets",
    summary = "Add a pet",
    description = "Stores a new pet; `status` defaults to `available`. The body is strict: unknown \
        fields (including `id`), `null`s and wrong types are refused, naming the field. \
        Send an `Idempotency-Key` to retry safely: the same request with the same key is \
        answered once and replayed after (`Idempotent-Replayed: true`), for 24 hours. Needs a \
        read-write key.",
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 512,
            pattern = r#"^([!#-~][!-~]{0,254}|"([ !#-\[\]-~]|\\["\\]){1,255}")$"#,
            description = "A key of the client's choosing, unique per request it means (a UUID, \
                say): a retry with the same key and body creates nothing more and gets the \
                first answer again. Scoped to the API key; kept 24 hours. A Structured Field \
                string (`\"8e03-...\"`, RFC 9651; draft-ietf-httpapi-idempotency-key-header): \
                1 to 255 printable ASCII characters between the quotes, spaces included, \
                `\\\"` and `\\\\` escaped; or, the same key, those characters bare when \
                they hold no space and do not start with a quote."),
    ),
    request_body(content = NewPet, content_type = "application/json"),
    responses(
        (status = 201, description = "The pet, with its id; durable when answered.", body = Pet,
            headers(
                ("Location" = String, description = "The pet's address."),
                ("Idempotent-Replayed" = String,
                    description = "`true` when this is the stored answer to an earlier request \
                        with the same `Idempotency-Key`."),
            )),
        (status = 400, description = "`invalid_json`, `missing_field`, `unknown_field` or \
            `invalid_field`, naming the field; `invalid_header`: a malformed `Idempotency-Key`.",
            body = ErrorObject),
        (status = 409, description = "`idempotency_request_in_progress`: a request with this \
            `Idempotency-Key` is still being processed; retry after `Retry-After`.",
            body = ErrorObject, headers(("Retry-After" = u64, description = "Seconds to wait."),
                ("Link" = String, description = "`<{site}/docs/#/{tag}/{operationId}>; rel=\"describedby\"; type=\"text/html\"`: \
                where `Idempotency-Key` is documented (draft-ietf-httpapi-idempotency-key-header-07 \
                §2.7)."))),
        ReadOnlyKey,
        JsonBodyErrors,
    ),
)]
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
    state
        .db
        .call("create_pet", |storage| storage.create_pet(&pet))
        .await
}

/// `getPet` (deprecated): the pet, `404`, or `410` once past the sunset.
#[utoipa::path(
    get,
    path = "/pets/{petId}",
    operation_id = "getPet",
    tag = "pets",
    summary = "Get a pet (deprecated)",
    description = "Deprecated: removed on 5 December 2030 (`Sunset`), answering `410` from then \
        on. Use `GET /pets` with a `status` filter instead (`Link: rel=\"successor-version\"`).",
    params(PetId),
    responses(
        (status = 200, description = "The pet.", body = Pet, headers(
            ("Link" = String, description = "`<{base}/pets>; rel=\"successor-version\"`, then \
                `<{site}/docs/#/pets/getPet>` as `rel=\"deprecation\"` (RFC 9745) and \
                `rel=\"sunset\"` (RFC 8594), `type=\"text/html\"`."),
        )),
        (status = 400, description = "`invalid_path_parameter`: `petId` is not an int64.",
            body = ErrorObject),
        (status = 410, description = "`endpoint_removed`: past the sunset.", body = ErrorObject),
        PetNotFound,
    ),
    extensions(("x-sunset" = json!("2030-12-05"))),
)]
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
    let pet = state
        .db
        .call("find_pet", |storage| storage.find_pet(id))
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
