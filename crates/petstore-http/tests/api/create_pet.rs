use crate::helpers::TestApp;
use actix_web::http::header;
use actix_web::test::TestRequest;

use crate::api_tests;

async fn create_pet_returns_201_with_the_pet_and_its_location(app: TestApp) {
    let reply = app
        .post_json(
            "/v1/pets",
            r#"{"name":"Rex","categoryId":7,"status":"pending"}"#,
        )
        .await;
    assert_eq!(reply.status, 201);
    let pet = reply.json();
    let id = pet["id"].as_i64().expect("an int64 id");
    assert_eq!(
        pet,
        serde_json::json!({"id": id, "name": "Rex", "categoryId": 7, "status": "pending"})
    );
    let location = reply.header("location").expect("Location");
    assert_eq!(location, format!("https://api.example.com/v1/pets/{id}"));
    let fetched = app.get(&format!("/v1/pets/{id}")).await;
    assert_eq!(fetched.json(), pet);
}

async fn a_pet_without_status_is_available(app: TestApp) {
    let pet = app
        .post_json("/v1/pets", r#"{"name":"Rex","categoryId":1}"#)
        .await
        .json();
    assert_eq!(pet["status"], "available");
}

async fn ids_are_unique_and_increasing(app: TestApp) {
    let mut last = 0;
    for i in 0..5 {
        let id = app.create_pet(&format!("pet {i}"), "sold").await["id"]
            .as_i64()
            .expect("id");
        assert!(id > last);
        last = id;
    }
}

async fn names_are_kept_exactly(app: TestApp) {
    let long = "é".repeat(255);
    for name in ["Mötley 🐶", " padded ", long.as_str()] {
        let body = serde_json::json!({"name": name, "categoryId": 1}).to_string();
        let pet = app.post_json("/v1/pets", &body).await.json();
        assert_eq!(pet["name"], name);
    }
}

async fn invalid_bodies_return_400_naming_the_problem(app: TestApp) {
    let long = format!(r#"{{"name":"{}","categoryId":1}}"#, "x".repeat(256));
    let cases: Vec<(&str, &str, &str)> = vec![
        ("", "invalid_json", "empty"),
        ("{", "invalid_json", ""),
        ("not json", "invalid_json", ""),
        ("[]", "invalid_json", "object"),
        (r#"["Rex", 1]"#, "invalid_json", "object"),
        ("42", "invalid_json", "object"),
        ("null", "invalid_json", "object"),
        (r#"{"name":"a","categoryId":1}{}"#, "invalid_json", ""),
        ("{}", "missing_field", "`name`"),
        (r#"{"name":"Rex"}"#, "missing_field", "`categoryId`"),
        (r#"{"categoryId":1}"#, "missing_field", "`name`"),
        (
            r#"{"id":5,"name":"Rex","categoryId":1}"#,
            "unknown_field",
            "`id`",
        ),
        (
            r#"{"name":"Rex","categoryId":1,"tags":[]}"#,
            "unknown_field",
            "`tags`",
        ),
        (r#"{"name":null,"categoryId":1}"#, "invalid_field", "`name`"),
        (r#"{"name":5,"categoryId":1}"#, "invalid_field", "`name`"),
        (
            r#"{"name":"Rex","categoryId":null}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":"1"}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":1.5}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":9223372036854775808}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":-9223372036854775809}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":0}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":-1}"#,
            "invalid_field",
            "`categoryId`",
        ),
        (
            r#"{"name":"Rex","categoryId":1,"status":null}"#,
            "invalid_field",
            "`status`",
        ),
        (
            r#"{"name":"Rex","categoryId":1,"status":"lost"}"#,
            "invalid_field",
            "`status`",
        ),
        (r#"{"name":"","categoryId":1}"#, "invalid_field", "`name`"),
        (
            r#"{"name":"   ","categoryId":1}"#,
            "invalid_field",
            "`name`",
        ),
        (
            r#"{"name":"a\u0000b","categoryId":1}"#,
            "invalid_field",
            "`name`",
        ),
        (
            r#"{"name":"a\nb","categoryId":1}"#,
            "invalid_field",
            "`name`",
        ),
        (long.as_str(), "invalid_field", "`name`"),
    ];
    for (body, code, needle) in cases {
        let reply = app.post_json("/v1/pets", body).await;
        let message = reply.assert_error(400, code);
        assert!(message.contains(needle), "{body}: {message}");
    }
    let listed = app.get("/v1/pets").await.json();
    assert_eq!(
        listed,
        serde_json::json!([]),
        "no rejected body created a pet"
    );
}

async fn a_body_that_is_not_json_returns_415(app: TestApp) {
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut request = TestRequest::post()
            .uri("/v1/pets")
            .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
            .set_payload(r#"{"name":"Rex","categoryId":1}"#);
        if let Some(content_type) = content_type {
            request = request.insert_header((header::CONTENT_TYPE, content_type));
        }
        app.send(request)
            .await
            .assert_error(415, "unsupported_media_type");
    }
    let charset = app
        .send(
            TestRequest::post()
                .uri("/v1/pets")
                .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
                .insert_header((header::CONTENT_TYPE, "application/json; charset=utf-8"))
                .set_payload(r#"{"name":"Rex","categoryId":1}"#),
        )
        .await;
    assert_eq!(
        charset.status, 201,
        "parameters on the JSON media type are fine"
    );
    for declared in [
        "application/json; charset=utf-16",
        "application/json;charset=ISO-8859-1",
    ] {
        let reply = app
            .send(
                TestRequest::post()
                    .uri("/v1/pets")
                    .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
                    .insert_header((header::CONTENT_TYPE, declared))
                    .set_payload(r#"{"name":"Rex","categoryId":1}"#),
            )
            .await;
        let message = reply.assert_error(415, "unsupported_media_type");
        assert!(message.contains("UTF-8"), "{declared}: {message}");
    }
}

async fn two_content_type_headers_return_400(app: TestApp) {
    let reply = app
        .send(
            TestRequest::post()
                .uri("/v1/pets")
                .insert_header((header::AUTHORIZATION, format!("Bearer {}", app.key)))
                .append_header((header::CONTENT_TYPE, "application/json"))
                .append_header((header::CONTENT_TYPE, "text/plain"))
                .set_payload(r#"{"name":"Rex","categoryId":1}"#),
        )
        .await;
    let message = reply.assert_error(400, "bad_request");
    assert!(message.contains("Content-Type"), "{message}");
    assert_eq!(
        app.get("/v1/pets").await.json(),
        serde_json::json!([]),
        "nothing stored"
    );
}

async fn a_body_over_64_kib_returns_413(app: TestApp) {
    let name = "x".repeat(70 * 1024);
    let body = format!(r#"{{"name":"{name}","categoryId":1}}"#);
    app.post_json("/v1/pets", &body)
        .await
        .assert_error(413, "payload_too_large");
    let at_limit = format!(
        r#"{{"name":"{}","categoryId":1}}"#,
        "x".repeat(64 * 1024 - 40)
    );
    assert!(at_limit.len() <= 64 * 1024);
    // Within the size limit, the name is still too long: a 400, not a 413.
    app.post_json("/v1/pets", &at_limit)
        .await
        .assert_error(400, "invalid_field");
}

api_tests!(
    create_pet_returns_201_with_the_pet_and_its_location,
    a_pet_without_status_is_available,
    ids_are_unique_and_increasing,
    names_are_kept_exactly,
    invalid_bodies_return_400_naming_the_problem,
    a_body_that_is_not_json_returns_415,
    two_content_type_headers_return_400,
    a_body_over_64_kib_returns_413,
);
