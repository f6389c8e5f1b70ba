//! The store area (experimental): place, read, list and cancel orders, the inventory, and the
//! pet lifecycle they drive; on every backend.

use actix_web::http::header;
use actix_web::test::TestRequest;
use petstore_domain::{KeySpec, OrderAction, Plan, Scope};
use serde_json::{Value, json};

use crate::api_tests;
use crate::helpers::{Reply, TestApp};

fn with_key(request: TestRequest, key: &str) -> TestRequest {
    request.insert_header((header::AUTHORIZATION, format!("Bearer {key}")))
}

async fn order_as(app: &TestApp, key: &str, body: &str) -> Reply {
    app.send(
        with_key(TestRequest::post().uri("/v1/store/orders"), key)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .set_payload(body.to_owned()),
    )
    .await
}

async fn order(app: &TestApp, pet: i64) -> Reply {
    order_as(app, &app.key, &json!({"petId": pet}).to_string()).await
}

async fn cancel_as(app: &TestApp, key: &str, id: i64) -> Reply {
    app.send(with_key(
        TestRequest::post().uri(&format!("/v1/store/orders/{id}/cancel")),
        key,
    ))
    .await
}

async fn pet_status(app: &TestApp, id: i64) -> String {
    let pets = app.get("/v1/pets?limit=100").await.json();
    pets.as_array()
        .expect("array")
        .iter()
        .find(|pet| pet["id"] == id)
        .and_then(|pet| pet["status"].as_str())
        .expect("the pet")
        .to_owned()
}

async fn inventory(app: &TestApp) -> Value {
    let reply = app.get("/v1/store/inventory").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("x-api-stability"), Some("experimental"));
    reply.json()
}

async fn other_key(app: &TestApp, scope: Scope) -> String {
    let spec = KeySpec::new(Plan::Pro, "other", None)
        .expect("spec")
        .with_scope(scope);
    let (_, secret) = app.store.create_key(&spec).await.expect("create");
    secret.expose().to_owned()
}

async fn an_order_makes_its_pet_pending_and_is_read_back(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    app.create_pet("Max", "sold").await;
    let placed = order(&app, pet).await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    assert_eq!(placed.header("x-api-stability"), Some("experimental"));
    let body = placed.json();
    let id = body["id"].as_i64().expect("id");
    assert_eq!(body["petId"], pet);
    assert_eq!(body["quantity"], 1);
    assert_eq!(body["status"], "placed");
    assert!(
        body["createdAt"]
            .as_str()
            .expect("timestamp")
            .ends_with('Z')
    );
    assert_eq!(
        body.as_object().expect("object").len(),
        5,
        "no owner on the wire: {body}"
    );
    assert_eq!(
        placed.header("location").map(str::to_owned),
        Some(format!("https://api.example.com/v1/store/orders/{id}"))
    );
    assert_eq!(pet_status(&app, pet).await, "pending");
    assert_eq!(
        inventory(&app).await,
        json!({"available": 0, "pending": 1, "sold": 1})
    );

    let read = app.get(&format!("/v1/store/orders/{id}")).await;
    assert_eq!(read.status, 200);
    assert_eq!(read.json(), body);
    let listed = app.get("/v1/store/orders").await;
    assert_eq!(listed.json(), json!([body]));
}

async fn only_an_existing_available_pet_can_be_ordered(app: TestApp) {
    let pending = app.create_pet("Rex", "pending").await["id"]
        .as_i64()
        .expect("id");
    let sold = app.create_pet("Max", "sold").await["id"]
        .as_i64()
        .expect("id");
    order(&app, 424_242)
        .await
        .assert_error(404, "pet_not_found");
    let message = order(&app, pending)
        .await
        .assert_error(409, "pet_not_available");
    assert!(message.contains("pending"), "{message}");
    order(&app, sold)
        .await
        .assert_error(409, "pet_not_available");
    let available = app.create_pet("Bo", "available").await["id"]
        .as_i64()
        .expect("id");
    assert_eq!(order(&app, available).await.status, 201);
    order(&app, available)
        .await
        .assert_error(409, "pet_not_available");
    assert_eq!(
        app.get("/v1/store/orders")
            .await
            .json()
            .as_array()
            .expect("array")
            .len(),
        1
    );
}

async fn the_order_body_is_strict(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    for (body, code, field) in [
        (json!({}), "missing_field", "petId"),
        (
            json!({"petId": pet, "status": "approved"}),
            "unknown_field",
            "status",
        ),
        (json!({"petId": pet, "id": 5}), "unknown_field", "id"),
        (
            json!({"petId": pet, "quantity": 2}),
            "invalid_field",
            "quantity",
        ),
        (
            json!({"petId": pet, "quantity": 0}),
            "invalid_field",
            "quantity",
        ),
        (json!({"petId": 0}), "invalid_field", "petId"),
        (json!({"petId": "1"}), "invalid_field", "petId"),
        (json!({"petId": null}), "invalid_field", "petId"),
    ] {
        let message = order_as(&app, &app.key, &body.to_string())
            .await
            .assert_error(400, code);
        assert!(message.contains(field), "{body}: {message}");
    }
    order_as(&app, &app.key, "{not json")
        .await
        .assert_error(400, "invalid_json");
    assert_eq!(
        pet_status(&app, pet).await,
        "available",
        "nothing was ordered"
    );
    let one = order_as(
        &app,
        &app.key,
        &json!({"petId": pet, "quantity": 1}).to_string(),
    )
    .await;
    assert_eq!(one.status, 201);
}

async fn orders_are_visible_to_the_key_that_placed_them_only(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let id = order(&app, pet).await.json()["id"].as_i64().expect("id");
    let other = other_key(&app, Scope::ReadWrite).await;
    let path = format!("/v1/store/orders/{id}");
    app.get_as(&path, &other)
        .await
        .assert_error(404, "order_not_found");
    cancel_as(&app, &other, id)
        .await
        .assert_error(404, "order_not_found");
    assert_eq!(
        app.get_as("/v1/store/orders", &other).await.json(),
        json!([])
    );
    assert_eq!(
        pet_status(&app, pet).await,
        "pending",
        "the other key changed nothing"
    );
    // Their own order is theirs alone, in turn.
    let theirs = app.create_pet("Max", "available").await["id"]
        .as_i64()
        .expect("id");
    let placed = order_as(&app, &other, &json!({"petId": theirs}).to_string()).await;
    assert_eq!(placed.status, 201);
    assert_eq!(
        app.get("/v1/store/orders")
            .await
            .json()
            .as_array()
            .expect("array")
            .len(),
        1
    );
    // Unknown ids and ids of other keys' orders look alike.
    app.get("/v1/store/orders/999999")
        .await
        .assert_error(404, "order_not_found");
}

async fn a_placed_order_can_be_cancelled_once_and_the_pet_ordered_again(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let id = order(&app, pet).await.json()["id"].as_i64().expect("id");
    let cancelled = cancel_as(&app, &app.key, id).await;
    assert_eq!(cancelled.status, 200);
    assert_eq!(cancelled.json()["status"], "cancelled");
    assert_eq!(cancelled.header("x-api-stability"), Some("experimental"));
    assert_eq!(pet_status(&app, pet).await, "available");
    let message = cancel_as(&app, &app.key, id)
        .await
        .assert_error(409, "order_not_cancellable");
    assert!(message.contains("cancelled"), "{message}");
    // Ordered again: a new order.
    let again = order(&app, pet).await.json()["id"].as_i64().expect("id");
    assert_ne!(again, id);
    assert_eq!(pet_status(&app, pet).await, "pending");
    assert_eq!(
        inventory(&app).await,
        json!({"available": 0, "pending": 1, "sold": 0})
    );
}

async fn approved_and_delivered_orders_cannot_be_cancelled_and_delivery_sells(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let id = order(&app, pet).await.json()["id"].as_i64().expect("id");
    // The operator's side (`petstore orders approve|deliver`).
    for (action, order_status, pet_now) in [
        (OrderAction::Approve, "approved", "pending"),
        (OrderAction::Deliver, "delivered", "sold"),
    ] {
        let changed = app
            .store
            .change_order(id, None, action)
            .await
            .expect(order_status);
        assert_eq!(changed.status.as_str(), order_status);
        assert_eq!(pet_status(&app, pet).await, pet_now);
        cancel_as(&app, &app.key, id)
            .await
            .assert_error(409, "order_not_cancellable");
    }
    assert_eq!(
        app.get(&format!("/v1/store/orders/{id}")).await.json()["status"],
        "delivered"
    );
    assert_eq!(
        inventory(&app).await,
        json!({"available": 0, "pending": 0, "sold": 1})
    );
    // The operator cannot skip or repeat a step either.
    assert!(
        app.store
            .change_order(id, None, OrderAction::Approve)
            .await
            .is_err()
    );
    assert!(
        app.store
            .change_order(999_999, None, OrderAction::Approve)
            .await
            .is_err()
    );
}

async fn placing_an_order_honours_idempotency_keys(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let place = || {
        with_key(TestRequest::post().uri("/v1/store/orders"), &app.key)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .insert_header(("Idempotency-Key", "order-rex"))
            .set_payload(json!({"petId": pet}).to_string())
    };
    let first = app.send(place()).await;
    assert_eq!(first.status, 201);
    let again = app.send(place()).await;
    assert_eq!(again.status, 201, "a replay, not a 409 for a pending pet");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(
        app.get("/v1/store/orders")
            .await
            .json()
            .as_array()
            .expect("array")
            .len(),
        1
    );

    // A refusal of the moment is not stored: once the pet is available again, the same key
    // places the order.
    let order_id = first.json()["id"].as_i64().expect("id");
    let retry = || {
        with_key(TestRequest::post().uri("/v1/store/orders"), &app.key)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .insert_header(("Idempotency-Key", "order-rex-again"))
            .set_payload(json!({"petId": pet}).to_string())
    };
    app.send(retry())
        .await
        .assert_error(409, "pet_not_available");
    assert_eq!(cancel_as(&app, &app.key, order_id).await.status, 200);
    let placed = app.send(retry()).await;
    assert_eq!(placed.status, 201, "{:?}", placed.body);
    assert_eq!(placed.header("idempotent-replayed"), None);
}

async fn a_read_only_key_cannot_order_or_cancel(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let id = order(&app, pet).await.json()["id"].as_i64().expect("id");
    let reader = other_key(&app, Scope::ReadOnly).await;
    order_as(&app, &reader, &json!({"petId": pet}).to_string())
        .await
        .assert_error(403, "insufficient_scope");
    cancel_as(&app, &reader, id)
        .await
        .assert_error(403, "insufficient_scope");
    assert_eq!(app.get_as("/v1/store/inventory", &reader).await.status, 200);
}

async fn store_errors_are_error_objects_and_stay_marked(app: TestApp) {
    let unauthenticated = app.send(TestRequest::get().uri("/v1/store/orders")).await;
    unauthenticated.assert_error(401, "unauthorized");
    assert_eq!(
        unauthenticated.header("x-api-stability"),
        Some("experimental")
    );
    app.send(TestRequest::get().uri("/v1/store/inventory"))
        .await
        .assert_error(401, "unauthorized");
    app.get("/v1/store/orders?status=placed")
        .await
        .assert_error(400, "unknown_query_parameter");
    app.get("/v1/store/orders?limit=500")
        .await
        .assert_error(400, "invalid_query_parameter");
    app.get("/v1/store/inventory?x=1")
        .await
        .assert_error(400, "unknown_query_parameter");
    let bad = app.get("/v1/store/orders/abc").await;
    let message = bad.assert_error(400, "invalid_path_parameter");
    assert!(message.contains("orderId"), "{message}");
    assert_eq!(bad.header("x-api-stability"), Some("experimental"));
    let put = app
        .send(with_key(
            TestRequest::put().uri("/v1/store/orders/1"),
            &app.key,
        ))
        .await;
    put.assert_error(405, "method_not_allowed");
    assert_eq!(put.header("allow"), Some("GET, HEAD, DELETE"));
    let delete = app
        .send(with_key(
            TestRequest::delete().uri("/v1/store/orders"),
            &app.key,
        ))
        .await;
    assert_eq!(delete.header("allow"), Some("GET, HEAD, POST"));
}

async fn the_listing_pages_like_pets(app: TestApp) {
    let mut ids = Vec::new();
    for i in 0..5 {
        let pet = app.create_pet(&format!("pet {i}"), "available").await["id"]
            .as_i64()
            .expect("id");
        ids.push(order(&app, pet).await.json()["id"].as_i64().expect("id"));
    }
    let first = app.get("/v1/store/orders?limit=2").await;
    assert_eq!(first.json().as_array().expect("array").len(), 2);
    let next = first.next_link().expect("next");
    assert_eq!(
        next,
        format!(
            "https://api.example.com/v1/store/orders?limit=2&after={}",
            ids[1]
        )
    );
}

/// The former cancel, `DELETE /store/orders/{orderId}`, still cancels, announcing its
/// deprecation, its sunset and its successor on every answer; the order stays readable.
async fn the_deprecated_delete_still_cancels_and_says_what_replaces_it(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await["id"]
        .as_i64()
        .expect("id");
    let id = order(&app, pet).await.json()["id"].as_i64().expect("id");
    let delete = |id: i64| {
        app.send(with_key(
            TestRequest::delete().uri(&format!("/v1/store/orders/{id}")),
            &app.key,
        ))
    };
    for reply in [delete(id).await, delete(id).await, delete(999_999).await] {
        assert_eq!(reply.header("deprecation"), Some("@1795737600"));
        assert_eq!(
            reply.header("sunset"),
            Some("Tue, 30 Nov 2027 00:00:00 GMT")
        );
        let link = reply.header("link").expect("a Link");
        assert!(
            link.contains("/v1/store/orders/")
                && link.contains("/cancel>; rel=\"successor-version\""),
            "{link}"
        );
        assert!(
            link.contains("/docs/#/store/deleteOrder>; rel=\"deprecation\""),
            "{link}"
        );
        assert!(
            !link.contains("/v1/docs/"),
            "the docs page is at the site's root: {link}"
        );
    }
    let read = app.get(&format!("/v1/store/orders/{id}")).await;
    assert_eq!(read.json()["status"], "cancelled");
    delete(id).await.assert_error(409, "order_not_cancellable");
}

api_tests!(
    the_deprecated_delete_still_cancels_and_says_what_replaces_it,
    an_order_makes_its_pet_pending_and_is_read_back,
    only_an_existing_available_pet_can_be_ordered,
    the_order_body_is_strict,
    orders_are_visible_to_the_key_that_placed_them_only,
    a_placed_order_can_be_cancelled_once_and_the_pet_ordered_again,
    approved_and_delivered_orders_cannot_be_cancelled_and_delivery_sells,
    placing_an_order_honours_idempotency_keys,
    a_read_only_key_cannot_order_or_cancel,
    store_errors_are_error_objects_and_stay_marked,
    the_listing_pages_like_pets,
);
