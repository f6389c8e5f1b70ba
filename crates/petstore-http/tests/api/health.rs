use actix_web::test::TestRequest;
use petstore_store::testing::TestDatabase;
use petstore_store::{Store, StoreConfig};

use crate::api_tests;
use crate::helpers::TestApp;

async fn healthz_and_readyz_answer_without_a_key(app: TestApp) {
    let health = app.send(TestRequest::get().uri("/healthz")).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    let ready = app.send(TestRequest::get().uri("/readyz")).await;
    assert_eq!(ready.status, 200);
    assert_eq!(ready.json()["status"], "ready");
}

api_tests!(healthz_and_readyz_answer_without_a_key,);

#[actix_web::test]
async fn readyz_returns_503_while_migrations_are_pending() {
    let db = TestDatabase::sqlite();
    let store = Store::open(&StoreConfig::new(db.url())).expect("open");
    let app = TestApp::with_store(Some(db), store).await;
    let reply = app.send(TestRequest::get().uri("/readyz")).await;
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(
        app.send(TestRequest::get().uri("/healthz")).await.status,
        200
    );
}

#[actix_web::test]
async fn readyz_returns_503_when_the_database_is_unreachable() {
    let app = TestApp::unreachable().await;
    app.send(TestRequest::get().uri("/readyz"))
        .await
        .assert_error(503, "service_unavailable");
}

/// `/readyz` needs no key and counts against no limit: a flood of it reads the storage at most
/// once a second.
#[actix_web::test]
async fn a_flood_of_readyz_reads_the_storage_at_most_once_a_second() {
    let storage = std::sync::Arc::new(crate::memory_storage::MemoryStorage::default());
    let app = TestApp::with_storage(storage.clone()).await;
    // As many as fit in well under a second (the first one checks).
    let started = std::time::Instant::now();
    let mut asked = 0;
    while started.elapsed() < std::time::Duration::from_millis(500) {
        let reply = app.send(TestRequest::get().uri("/readyz")).await;
        assert_eq!(reply.status, 200);
        asked += 1;
    }
    assert!(asked > 10, "only {asked} requests");
    assert_eq!(storage.ready_checks(), 1, "one check for {asked} requests");
    actix_web::rt::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        app.send(TestRequest::get().uri("/readyz")).await.status,
        200
    );
    assert_eq!(storage.ready_checks(), 2, "checked again after a second");
}

/// What the program's webhook sender gives way to: a request is under way from its admission
/// until it is answered, or given up (its connection closed midway).
#[actix_web::test]
async fn a_request_is_under_way_until_it_is_answered_or_given_up() {
    use std::pin::Pin;

    use actix_web::dev::{Payload, Service};
    use actix_web::error::PayloadError;
    use actix_web::web::Bytes;
    use futures_util::{Stream, stream};

    let app = TestApp::with_config(|_| {}).await;
    let in_flight = &app.state.in_flight;
    let service = actix_web::test::init_service(petstore_http::app(app.state.clone())).await;
    let authorization = ("authorization", format!("Bearer {}", app.key));
    // A create whose body never arrives.
    let request = TestRequest::post()
        .uri("/v1/pets")
        .insert_header(authorization.clone())
        .insert_header(("content-type", "application/json"))
        .to_request();
    let body: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> =
        Box::pin(stream::pending());
    let (request, _) = request.replace_payload(Payload::from(body));
    let mut call = Box::pin(service.call(request));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        call.as_mut().poll(&mut context).is_pending(),
        "answered before its body came"
    );
    assert_eq!(
        in_flight.count(),
        1,
        "under way (its key looked up, or its body awaited)"
    );
    drop(call);
    assert_eq!(in_flight.count(), 0, "given up");

    let listed = app
        .send(
            TestRequest::get()
                .uri("/v1/pets")
                .insert_header(authorization),
        )
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(in_flight.count(), 0, "answered");
}
