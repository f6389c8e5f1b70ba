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
