//! The SQLite floor (`examples/sqlite_floor`, the benchmark's lower bound) answers what the
//! service answers: the same bodies, byte for byte, and the same set of headers. Otherwise the
//! benchmark's ratio to it would compare different work.

use actix_web::http::header::HeaderMap;
use actix_web::test as atest;
use actix_web::web;
use petstore_http::HttpSettings;

use crate::helpers::TestApp;

#[path = "../../examples/sqlite_floor/floor.rs"]
mod sqlite_floor;

/// Header names, sorted, with their values where the two must agree (the rest differ by
/// nature: request ids, counters).
fn comparable(headers: &HeaderMap) -> Vec<(String, Option<String>)> {
    let mut names: Vec<(String, Option<String>)> = headers
        .iter()
        .map(|(name, value)| {
            let same = matches!(
                name.as_str(),
                "content-type" | "link" | "deprecation" | "sunset"
            );
            (
                name.as_str().to_owned(),
                same.then(|| value.to_str().expect("ASCII").to_owned()),
            )
        })
        .collect();
    names.sort();
    names
}

#[actix_web::test]
async fn the_sqlite_floor_answers_the_services_bytes_and_headers() {
    // The benchmark's configuration: no public base URL, links from `Host`.
    let app = TestApp::with_settings(HttpSettings::new("/v1", None)).await;
    for (i, status) in ["available", "pending", "sold"]
        .iter()
        .cycle()
        .take(45)
        .enumerate()
    {
        app.create_pet(&format!("pet \"{i}\" é"), status).await;
    }
    let path = app.db.as_ref().expect("a SQLite database").url().to_owned();
    let worker = web::Data::new(sqlite_floor::open(&path).expect("the floor opens the database"));
    let floor = atest::init_service(sqlite_floor::app(worker)).await;

    for uri in [
        "/v1/pets",
        "/v1/pets?limit=20",
        "/v1/pets?limit=100",
        "/v1/pets?limit=5&status=sold",
        "/v1/pets?limit=5&status=sold&after=12",
        "/v1/pets?limit=10&after=40",
        "/v1/pets/7",
    ] {
        let service = app.get(uri).await;
        assert_eq!(service.status.as_u16(), 200, "{uri}");
        let response =
            atest::call_service(&floor, atest::TestRequest::get().uri(uri).to_request()).await;
        assert_eq!(response.status().as_u16(), 200, "{uri}");
        let headers = response.headers().clone();
        let body = atest::read_body(response).await;
        assert_eq!(
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&service.body),
            "{uri}: the floor's body"
        );
        assert_eq!(
            comparable(&headers),
            comparable(&service.headers),
            "{uri}: the floor's headers"
        );
    }
}
