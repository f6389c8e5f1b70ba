//! The admin API's orders (`/admin/v1/orders`: listed, filtered, approved and delivered) and a
//! key's webhook endpoints as operators see them, in process, on every backend.

use actix_web::http::header;
use actix_web::test::TestRequest;
use serde_json::{Value, json};

use crate::admin::{admin_get, admin_post, admin_send, admin_token, bearer};
use crate::api_tests;
use crate::helpers::TestApp;

/// Places an order for a new pet with `key`; its id.
async fn placed_order(app: &TestApp, key: &str, name: &str) -> i64 {
    let pet = app.create_pet(name, "available").await;
    let reply = app
        .send(
            TestRequest::post()
                .uri("/v1/store/orders")
                .insert_header(bearer(key))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload(json!({"petId": pet["id"]}).to_string()),
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    reply.json()["id"].as_i64().expect("id")
}

fn ids(page: &Value) -> Vec<i64> {
    page["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(|order| order["id"].as_i64().expect("id"))
        .collect()
}

async fn orders_are_listed_filtered_and_fulfilled(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    let spec =
        petstore_domain::KeySpec::new(petstore_domain::Plan::Pro, "other", None).expect("spec");
    let (other_key, other) = app.store.create_key(&spec).await.expect("key");
    let other = other.expose().to_owned();
    let first = placed_order(&app, &app.key.clone(), "Rex").await;
    let second = placed_order(&app, &other, "Tom").await;
    let third = placed_order(&app, &other, "Kit").await;

    // Every key's orders, with the key that placed each; filtered, paged.
    let all = admin_get(&app, &token, "/admin/v1/orders").await;
    assert_eq!(all.status, 200);
    assert_eq!(all.header("cache-control"), Some("no-store"));
    let page = all.json();
    assert_eq!(ids(&page), [first, second, third]);
    assert_eq!(page["orders"][1]["ownerKeyId"], other_key.id);
    assert_eq!(page["orders"][1]["status"], "placed");
    assert_eq!(page["nextAfter"], Value::Null);
    let uri = format!("/admin/v1/orders?key={}", other_key.id);
    assert_eq!(
        ids(&admin_get(&app, &token, &uri).await.json()),
        [second, third]
    );
    let paged = admin_get(&app, &token, "/admin/v1/orders?limit=2")
        .await
        .json();
    assert_eq!(
        (ids(&paged), paged["nextAfter"].as_i64()),
        (vec![first, second], Some(second))
    );
    let uri = format!("/admin/v1/orders?limit=2&after={second}");
    assert_eq!(ids(&admin_get(&app, &token, &uri).await.json()), [third]);

    // Approve, deliver: the pet is sold. Each refused where the lifecycle says.
    let order = |id: i64, action: &str| format!("/admin/v1/orders/{id}/{action}");
    let approved = admin_post(&app, &token, &order(second, "approve")).await;
    assert_eq!(
        (approved.status.as_u16(), approved.json()["status"].clone()),
        (200, json!("approved"))
    );
    admin_post(&app, &token, &order(second, "approve"))
        .await
        .assert_error(409, "order_transition_refused");
    admin_post(&app, &token, &order(third, "deliver"))
        .await
        .assert_error(409, "order_transition_refused");
    admin_post(&app, &token, &order(second, "cancel"))
        .await
        .assert_error(409, "order_not_cancellable");
    let delivered = admin_post(&app, &token, &order(second, "deliver"))
        .await
        .json();
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(delivered["ownerKeyId"], other_key.id);
    let inventory = app.get("/v1/store/inventory").await.json();
    assert_eq!(
        (inventory["sold"].clone(), inventory["pending"].clone()),
        (json!(1), json!(2))
    );
    // Cancelled on the customer's behalf: its pet is available again.
    let cancelled = admin_post(&app, &token, &order(third, "cancel"))
        .await
        .json();
    assert_eq!(cancelled["status"], "cancelled");
    let inventory = app.get("/v1/store/inventory").await.json();
    assert_eq!(inventory["pending"], 1);
    // The customer sees its orders as they now are.
    let theirs = app
        .get_as(&format!("/v1/store/orders/{second}"), &other)
        .await
        .json();
    assert_eq!(theirs["status"], "delivered");
    let by_status = admin_get(&app, &token, "/admin/v1/orders?status=delivered")
        .await
        .json();
    assert_eq!(ids(&by_status), [second]);
    let uri = format!("/admin/v1/orders?status=placed&key={}", other_key.id);
    assert!(ids(&admin_get(&app, &token, &uri).await.json()).is_empty());
    let one = admin_get(&app, &token, &format!("/admin/v1/orders/{first}")).await;
    let one = one.json();
    assert_eq!(
        (one["id"].as_i64(), one["status"].as_str()),
        (Some(first), Some("placed"))
    );
    assert!(one["ownerKeyId"].is_i64(), "{one}");

    // Refusals: named, and nothing changed.
    admin_get(&app, &token, "/admin/v1/orders/999999")
        .await
        .assert_error(404, "order_not_found");
    admin_post(&app, &token, &order(999_999, "approve"))
        .await
        .assert_error(404, "order_not_found");
    admin_get(&app, &token, "/admin/v1/orders/x")
        .await
        .assert_error(400, "invalid_path_parameter");
    for (query, code) in [
        ("status=lost", "invalid_query_parameter"),
        ("key=0", "invalid_query_parameter"),
        ("owner=1", "unknown_query_parameter"),
        ("limit=0", "invalid_query_parameter"),
    ] {
        admin_get(&app, &token, &format!("/admin/v1/orders?{query}"))
            .await
            .assert_error(400, code);
    }
    admin_get(&app, &token, &format!("/admin/v1/orders/{first}?x=1"))
        .await
        .assert_error(400, "unknown_query_parameter");
    let wrong = app
        .send_admin(
            TestRequest::delete()
                .uri(&format!("/admin/v1/orders/{first}"))
                .insert_header(bearer(&token)),
        )
        .await;
    wrong.assert_error(405, "method_not_allowed");
    assert_eq!(wrong.header("allow"), Some("GET, HEAD"));
    // No admin token, no orders: every route.
    for uri in [
        "/admin/v1/orders".to_owned(),
        format!("/admin/v1/orders/{first}"),
    ] {
        app.send_admin(TestRequest::get().uri(&uri))
            .await
            .assert_error(401, "unauthorized");
    }
    for action in ["approve", "deliver", "cancel"] {
        app.send_admin(TestRequest::post().uri(&order(first, action)))
            .await
            .assert_error(401, "unauthorized");
    }
    let untouched = admin_get(&app, &token, &format!("/admin/v1/orders/{first}"))
        .await
        .json();
    assert_eq!(untouched["status"], "placed");
    // And never on the public listener.
    app.send(
        TestRequest::get()
            .uri("/admin/v1/orders")
            .insert_header(bearer(&token)),
    )
    .await
    .assert_error(404, "route_not_found");
}

/// A key's webhook endpoints as operators see them: an unknown key is `key_not_found` on every
/// method, a known key's missing endpoint `webhook_endpoint_not_found`.
async fn a_keys_endpoints_name_which_of_key_and_endpoint_is_missing(app: TestApp) {
    let token = admin_token(&app, "ops").await;
    let keys = admin_get(&app, &token, "/admin/v1/keys").await.json();
    let key = keys["keys"][0]["id"].as_i64().expect("the app's key");
    for (whose, code) in [
        (999_999, "key_not_found"),
        (key, "webhook_endpoint_not_found"),
    ] {
        let uri = format!("/admin/v1/keys/{whose}/webhook_endpoints/12345");
        admin_get(&app, &token, &uri).await.assert_error(404, code);
        admin_send(&app, &token, "PATCH", &uri, json!({"enabled": false}))
            .await
            .assert_error(404, code);
        app.send_admin(
            TestRequest::delete()
                .uri(&uri)
                .insert_header(bearer(&token)),
        )
        .await
        .assert_error(404, code);
    }
    admin_get(&app, &token, "/admin/v1/keys/999999/webhook_endpoints")
        .await
        .assert_error(404, "key_not_found");
    let listed = admin_get(
        &app,
        &token,
        &format!("/admin/v1/keys/{key}/webhook_endpoints"),
    )
    .await;
    assert_eq!(listed.json(), json!([]));
}

api_tests!(
    a_keys_endpoints_name_which_of_key_and_endpoint_is_missing,
    orders_are_listed_filtered_and_fulfilled,
);
