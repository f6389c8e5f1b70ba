use actix_web::test::TestRequest;
use petstore_domain::{NewOrder, OrderStatus};

use crate::api_tests;

api_tests! {
    async fn list_orders_returns_the_stores_orders_marked_experimental(app) {
        let pet = app.create_pet("Rex", "pending").await;
        let pet_id = pet["id"].as_i64().expect("id");
        let mut ids = Vec::new();
        for status in OrderStatus::ALL {
            let order = app.store.create_order(&NewOrder::new(pet_id, 1, status).expect("valid")).expect("create");
            ids.push(order.id);
        }
        let reply = app.get("/v1/store/orders").await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("x-api-stability"), Some("experimental"));
        let orders = reply.json();
        let orders = orders.as_array().expect("array");
        assert_eq!(orders.len(), 3);
        assert_eq!(orders[0]["petId"], pet_id);
        assert_eq!(orders[0]["quantity"], 1);
        assert_eq!(orders[1]["status"], "approved");
        assert!(orders[0]["createdAt"].as_str().expect("timestamp").ends_with('Z'));

        let first = app.get("/v1/store/orders?limit=2").await;
        let next = first.next_link().expect("next");
        assert_eq!(next, format!("https://api.example.com/v1/store/orders?limit=2&after={}", ids[1]));
    }

    async fn list_orders_errors_are_error_objects_and_stay_marked(app) {
        let unauthenticated = app.send(TestRequest::get().uri("/v1/store/orders")).await;
        unauthenticated.assert_error(401, "unauthorized");
        assert_eq!(unauthenticated.header("x-api-stability"), Some("experimental"));
        app.get("/v1/store/orders?status=placed").await.assert_error(400, "unknown_query_parameter");
        app.get("/v1/store/orders?limit=500").await.assert_error(400, "invalid_query_parameter");
        let wrong_method = app.post_json("/v1/store/orders", "{}").await;
        wrong_method.assert_error(405, "method_not_allowed");
        assert_eq!(wrong_method.header("allow"), Some("GET, HEAD"));
    }
}
