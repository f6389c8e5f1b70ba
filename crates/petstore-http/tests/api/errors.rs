use actix_web::test::TestRequest;
use diesel::connection::SimpleConnection;
use diesel::{Connection, SqliteConnection};

use crate::api_tests;
use crate::helpers::TestApp;

async fn unknown_routes_return_404_error_objects(app: TestApp) {
    // (`/v1` itself is the API's index.)
    for uri in ["/", "/v2/pets", "/v1/pets/1/owner", "/v1/unknown", "/pets"] {
        let reply = app.get(uri).await;
        reply.assert_error(404, "route_not_found");
    }
}

async fn head_answers_like_get_and_is_counted_like_it(app: TestApp) {
    app.create_pet("Rex", "sold").await;
    let auth = ("authorization", format!("Bearer {}", app.key));
    for uri in [
        "/v1/pets",
        "/v1/pets/1",
        "/v1/store/orders",
        "/v1/openapi.json",
    ] {
        let get = app
            .send(TestRequest::get().uri(uri).insert_header(auth.clone()))
            .await;
        let head = app
            .send(
                TestRequest::default()
                    .method(actix_web::http::Method::HEAD)
                    .uri(uri)
                    .insert_header(auth.clone()),
            )
            .await;
        assert_eq!(head.status, get.status, "{uri}");
        assert_eq!(
            head.header("content-type"),
            get.header("content-type"),
            "{uri}"
        );
        let remaining = |reply: &crate::helpers::Reply| {
            reply
                .header("x-ratelimit-remaining")
                .and_then(|v| v.parse::<u64>().ok())
                .expect("remaining")
        };
        assert_eq!(
            remaining(&head),
            remaining(&get) - 1,
            "{uri}: HEAD is counted"
        );
    }
    let anonymous = app
        .send(
            TestRequest::default()
                .method(actix_web::http::Method::HEAD)
                .uri("/v1/pets"),
        )
        .await;
    assert_eq!(anonymous.status, 401);
}

async fn wrong_methods_return_405_with_allow(app: TestApp) {
    let cases = [
        (TestRequest::delete().uri("/v1/pets"), "GET, HEAD, POST"),
        (TestRequest::put().uri("/v1/pets"), "GET, HEAD, POST"),
        (TestRequest::patch().uri("/v1/pets/1"), "GET, HEAD"),
        (TestRequest::delete().uri("/v1/pets/1"), "GET, HEAD"),
        (
            TestRequest::put().uri("/v1/store/orders"),
            "GET, HEAD, POST",
        ),
        (
            TestRequest::post().uri("/v1/store/orders/1"),
            "GET, HEAD, DELETE",
        ),
        (
            TestRequest::delete().uri("/v1/store/inventory"),
            "GET, HEAD",
        ),
        (TestRequest::post().uri("/v1/rate_limit"), "GET, HEAD"),
    ];
    for (request, allow) in cases {
        let reply = app
            .send(request.insert_header(("authorization", format!("Bearer {}", app.key))))
            .await;
        reply.assert_error(405, "method_not_allowed");
        assert_eq!(reply.header("allow"), Some(allow));
    }
}

async fn query_parameters_are_refused_where_read_and_ignored_elsewhere_as_in_v1(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await;
    let order = app
        .post_json(
            "/v1/store/orders",
            &format!(r#"{{"petId":{},"quantity":1}}"#, pet["id"]),
        )
        .await;
    assert_eq!(order.status, 201);
    let (pet, order) = (&pet["id"], &order.json()["id"]);
    // The operations that read their query string refuse a parameter they do not take.
    for uri in [
        "/v1/pets?bogus=1",
        "/v1/store/orders?bogus=1",
        "/v1/store/inventory?bogus=1",
        "/v1/rate_limit?bogus=1",
    ] {
        let message = app
            .get(uri)
            .await
            .assert_error(400, "unknown_query_parameter");
        assert!(message.contains("bogus"), "{uri}: {message}");
    }
    // The others take none and ignore any (a cache-buster, say), as they always have in v1.
    assert_eq!(app.get(&format!("/v1/pets/{pet}?_=1")).await.status, 200);
    assert_eq!(
        app.get(&format!("/v1/store/orders/{order}?_=1"))
            .await
            .status,
        200
    );
    let created = app
        .post_json("/v1/pets?_=1", r#"{"name":"Max","categoryId":1}"#)
        .await;
    assert_eq!(created.status, 201);
}

api_tests!(
    query_parameters_are_refused_where_read_and_ignored_elsewhere_as_in_v1,
    unknown_routes_return_404_error_objects,
    head_answers_like_get_and_is_counted_like_it,
    wrong_methods_return_405_with_allow,
);

#[actix_web::test]
async fn an_unreachable_database_returns_503_with_retry_after() {
    let app = TestApp::unreachable().await;
    // Even authentication needs the database: the answer is 503, never a hang or a 500.
    let reply = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(("authorization", format!("Bearer pst_{}", "a".repeat(64)))),
        )
        .await;
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));
}

#[actix_web::test]
async fn unexpected_failures_return_500_without_internals() {
    let app = TestApp::spawn(petstore_store::testing::TestBackend::Sqlite)
        .await
        .expect("sqlite");
    let url = app.db.as_ref().expect("db").url().to_owned();
    let mut conn = SqliteConnection::establish(&url).expect("connect");
    conn.batch_execute(
        "PRAGMA ignore_check_constraints = ON; \
         INSERT INTO pets (name, category_id, status, created_at) VALUES ('Odd', 1, 'eaten', 0);",
    )
    .expect("insert a row the service never writes");
    let reply = app.get("/v1/pets").await;
    let message = reply.assert_error(500, "internal_error");
    assert!(
        !message.contains("eaten") && !message.contains("pets"),
        "{message}"
    );
}

#[test]
fn every_error_code_is_documented() {
    let docs = include_str!("../../../../docs/errors.md");
    for code in petstore_http::ErrorCode::ALL {
        let cell = format!("| `{}` |", code.as_str());
        let row = docs
            .lines()
            .find(|line| line.contains(&cell))
            .unwrap_or_else(|| panic!("{} has no row in docs/errors.md", code.as_str()));
        assert!(
            row.starts_with(&format!("| {} |", code.status())),
            "{} is documented with the wrong status: {row}",
            code.as_str()
        );
    }
}
