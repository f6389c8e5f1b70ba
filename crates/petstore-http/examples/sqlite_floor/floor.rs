//! The SQLite floor's application: what `main.rs` serves, and what the in-process tests compare
//! with the service's answers (`tests/api/floor.rs`: the same bodies, byte for byte, and the
//! same header set).

use std::cell::RefCell;

use actix_web::http::header::{self, ContentType, HeaderName, HeaderValue};
use actix_web::{App, HttpRequest, HttpResponse, HttpResponseBuilder, web};
use diesel::connection::SimpleConnection;
use diesel::deserialize::{self, FromSql, FromSqlRow, Queryable};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel::sqlite::{Sqlite, SqliteValue};
use petstore_domain::{Pet, PetStatus};
use petstore_http::conditional::{Caching, ETag};
use petstore_http::encode::EncodeJson;
use petstore_http::sunset::{DEPRECATED_AT, SUNSET};

// The service's table (`petstore-store`'s schema), so that Diesel writes the same SQL.
diesel::table! {
    pets (id) {
        id -> BigInt,
        name -> Text,
        category_id -> BigInt,
        status -> Text,
        created_at -> BigInt,
    }
}

/// One worker's connection: the worker's requests take turns on it, as nothing awaits while
/// one holds it.
pub struct Worker(RefCell<SqliteConnection>);

/// Opens `path` as the service opens its connections (WAL, `synchronous = FULL`).
pub fn open(path: &str) -> ConnectionResult<Worker> {
    let mut conn = SqliteConnection::establish(path)?;
    conn.batch_execute(
        "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; \
         PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
    )
    .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(Worker(RefCell::new(conn)))
}

/// `GET /v1/pets` and `GET /v1/pets/{id}` over `worker`.
pub fn app(
    worker: web::Data<Worker>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(worker)
        .route("/v1/pets", web::get().to(list))
        .route("/v1/pets/{id}", web::get().to(get))
}

/// The status column read in place, as the service's store reads it (no `String` per row).
#[derive(FromSqlRow)]
struct Status(PetStatus);

impl FromSql<Text, Sqlite> for Status {
    fn from_sql(mut value: SqliteValue<'_, '_, '_>) -> deserialize::Result<Self> {
        Ok(Self(value.read_text().parse()?))
    }
}

struct Row(Pet);

impl
    Queryable<
        (
            diesel::sql_types::BigInt,
            Text,
            diesel::sql_types::BigInt,
            Text,
        ),
        Sqlite,
    > for Row
{
    type Row = (i64, String, i64, Status);

    fn build((id, name, category_id, status): Self::Row) -> deserialize::Result<Self> {
        Ok(Self(Pet {
            id,
            name,
            category_id,
            status: status.0,
        }))
    }
}

const COLUMNS: (pets::id, pets::name, pets::category_id, pets::status) =
    (pets::id, pets::name, pets::category_id, pets::status);

/// The page the query string asks for: `limit`, `status` and `after`, taken as given (the
/// floor validates nothing).
async fn list(worker: web::Data<Worker>, req: HttpRequest) -> HttpResponse {
    let (mut limit, mut status, mut after) = (20_i64, None, None);
    for (name, value) in req
        .query_string()
        .split('&')
        .filter_map(|p| p.split_once('='))
    {
        match name {
            "limit" => limit = value.parse().unwrap_or(20),
            "status" => status = Some(value),
            "after" => after = value.parse::<i64>().ok(),
            _ => {}
        }
    }
    // The service's query, one static shape per combination of filters (so each stays prepared).
    let all = pets::table
        .select(COLUMNS)
        .order(pets::id.asc())
        .limit(limit + 1);
    let conn = &mut *worker.0.borrow_mut();
    let rows: QueryResult<Vec<Row>> = match (status, after) {
        (None, None) => all.load(conn),
        (None, Some(after)) => all.filter(pets::id.gt(after)).load(conn),
        (Some(status), None) => all.filter(pets::status.eq(status)).load(conn),
        (Some(status), Some(after)) => all
            .filter(pets::status.eq(status))
            .filter(pets::id.gt(after))
            .load(conn),
    };
    let mut pets: Vec<Pet> = match rows {
        Ok(rows) => rows.into_iter().map(|Row(pet)| pet).collect(),
        Err(error) => return HttpResponse::ServiceUnavailable().body(error.to_string()),
    };
    let more = pets.len() as i64 > limit;
    pets.truncate(usize::try_from(limit).unwrap_or(0));
    let mut response = HttpResponse::Ok();
    if more && let Some(last) = pets.last() {
        let status = status.map(|s| format!("&status={s}")).unwrap_or_default();
        response.insert_header((
            header::LINK,
            format!(
                "<{}/pets?limit={limit}{status}&after={}>; rel=\"next\"",
                base(&req),
                last.id
            ),
        ));
    }
    let next = more.then(|| pets.last().map(|pet| pet.id)).flatten();
    let tag = ETag::of(&(pets.as_slice(), next));
    respond(response, tag, pets.as_slice(), pets.len())
}

/// One pet, with the deprecated route's headers.
async fn get(worker: web::Data<Worker>, req: HttpRequest, id: web::Path<i64>) -> HttpResponse {
    let conn = &mut *worker.0.borrow_mut();
    let pet: Row = match pets::table.select(COLUMNS).find(*id).get_result(conn) {
        Ok(row) => row,
        Err(diesel::NotFound) => return HttpResponse::NotFound().finish(),
        Err(error) => return HttpResponse::ServiceUnavailable().body(error.to_string()),
    };
    let mut response = HttpResponse::Ok();
    response
        .insert_header((HeaderName::from_static("deprecation"), DEPRECATED_AT))
        .insert_header((HeaderName::from_static("sunset"), SUNSET))
        .insert_header((header::LINK, deprecation_links(&base(&req))));
    respond(response, ETag::of(&pet.0), &pet.0, 1)
}

/// The deprecated operation's links, as the service writes them: its successor, and where its
/// deprecation and sunset are documented.
fn deprecation_links(base: &str) -> String {
    let site = base.strip_suffix("/v1").unwrap_or(base);
    format!(
        "<{base}/pets>; rel=\"successor-version\", \
         <{site}/docs/#/pets/getPet>; rel=\"deprecation\"; type=\"text/html\", \
         <{site}/docs/#/pets/getPet>; rel=\"sunset\"; type=\"text/html\""
    )
}

/// The base address for links, as the service builds it without a configured public URL: the
/// listener's scheme and the request's `Host`.
fn base(req: &HttpRequest) -> String {
    let config = req.app_config();
    let scheme = if config.secure() { "https" } else { "http" };
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_else(|| config.host());
    format!("{scheme}://{host}/v1")
}

/// The service's encoding and its header set: rate-limit headers, a request id, the
/// representation's tag (`tag`) and caching headers.
fn respond<T: EncodeJson + ?Sized>(
    mut response: HttpResponseBuilder,
    tag: ETag,
    value: &T,
    items: usize,
) -> HttpResponse {
    response.insert_header((header::ETAG, tag.header_value()));
    for (name, value) in [
        ("x-ratelimit-limit", "1000000"),
        ("x-ratelimit-remaining", "999999"),
        ("x-ratelimit-reset", "1795264500"),
        (
            "ratelimit-policy",
            "\"minute\";q=1000000;w=60, \"day\";q=100000000;w=86400",
        ),
        (
            "ratelimit",
            "\"minute\";r=999999;t=41, \"day\";r=99999999;t=41095",
        ),
        ("x-request-id", "0199e5a4-7c1e-7d2a-9b3c-5d6e7f809a1b"),
        ("x-content-type-options", "nosniff"),
    ] {
        response.insert_header((
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        ));
    }
    let mut body = Vec::with_capacity(2 + 96 * items);
    let mut response = match value.encode_json(&mut body) {
        Ok(()) => response.content_type(ContentType::json()).body(body),
        Err(error) => return HttpResponse::InternalServerError().body(error.to_string()),
    };
    Caching::Private.write(response.headers_mut());
    response
}
