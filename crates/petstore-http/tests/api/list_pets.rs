use std::collections::HashSet;

use actix_web::test::TestRequest;
use petstore_http::HttpSettings;

use crate::api_tests;
use crate::helpers::TestApp;

#[actix_web::test]
async fn the_base_path_is_configurable_and_links_follow_the_host_header() {
    let app = TestApp::with_settings(HttpSettings::new("/api/v1/", None)).await;
    for i in 0..3 {
        let body = format!(r#"{{"name":"pet {i}","categoryId":1}}"#);
        let reply = app
            .send(
                TestRequest::post()
                    .uri("/api/v1/pets")
                    .insert_header(("authorization", format!("Bearer {}", app.key)))
                    .insert_header(("content-type", "application/json"))
                    .insert_header(("host", "pets.example.org:8443"))
                    .set_payload(body),
            )
            .await;
        assert_eq!(reply.status, 201);
        let location = reply.header("location").expect("location");
        assert!(
            location.starts_with("http://pets.example.org:8443/api/v1/pets/"),
            "{location}"
        );
    }
    let page = app
        .send(
            TestRequest::get()
                .uri("/api/v1/pets?limit=2")
                .insert_header(("authorization", format!("Bearer {}", app.key)))
                .insert_header(("host", "pets.example.org:8443"))
                // A client cannot redirect links elsewhere.
                .insert_header(("x-forwarded-host", "evil.example"))
                .insert_header(("forwarded", "host=evil.example;proto=https")),
        )
        .await;
    let next = page.next_link().expect("next");
    assert!(
        next.starts_with("http://pets.example.org:8443/api/v1/pets?limit=2&after="),
        "{next}"
    );
    app.get("/v1/pets")
        .await
        .assert_error(404, "route_not_found");
}

async fn list_pets_on_an_empty_catalogue_returns_an_empty_array(app: TestApp) {
    let reply = app.get("/v1/pets").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), serde_json::json!([]));
    assert_eq!(reply.next_link(), None);
}

async fn list_pets_returns_20_by_default_with_a_next_link(app: TestApp) {
    for i in 0..25 {
        app.create_pet(&format!("pet {i}"), "available").await;
    }
    let reply = app.get("/v1/pets").await;
    let pets = reply.json();
    let pets = pets.as_array().expect("array");
    assert_eq!(pets.len(), 20);
    for pet in pets {
        let keys: HashSet<&str> = pet
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, HashSet::from(["id", "name", "categoryId", "status"]));
    }
    let next = reply.next_link().expect("a next link");
    let last = pets[19]["id"].as_i64().expect("id");
    assert_eq!(
        next,
        format!("https://api.example.com/v1/pets?limit=20&after={last}")
    );
}

async fn paging_visits_every_pet_once_in_ascending_order(app: TestApp) {
    let statuses = ["available", "pending", "sold"];
    let mut created = Vec::new();
    for i in 0..17 {
        let status = statuses[i % 3];
        created.push((
            app.create_pet(&format!("pet {i}"), status).await["id"]
                .as_i64()
                .expect("id"),
            status,
        ));
    }
    let all: Vec<i64> = created.iter().map(|(id, _)| *id).collect();
    let pages = app.walk("/v1/pets?limit=4").await;
    assert_eq!(pages.len(), 5);
    assert!(pages.iter().all(|p| p.len() <= 4));
    assert_eq!(pages.concat(), all, "no duplicate, no gap, ascending");

    for status in statuses {
        let expected: Vec<i64> = created
            .iter()
            .filter(|(_, s)| *s == status)
            .map(|(id, _)| *id)
            .collect();
        let pages = app.walk(&format!("/v1/pets?status={status}&limit=2")).await;
        assert_eq!(pages.concat(), expected, "{status}");
        let reply = app
            .get(&format!("/v1/pets?status={status}&limit=100"))
            .await;
        for pet in reply.json().as_array().expect("array") {
            assert_eq!(pet["status"], status);
        }
    }
}

async fn the_next_link_keeps_the_status_filter(app: TestApp) {
    for i in 0..3 {
        app.create_pet(&format!("sold {i}"), "sold").await;
    }
    let reply = app.get("/v1/pets?status=sold&limit=2").await;
    let last = reply.json()[1]["id"].as_i64().expect("id");
    let next = reply.next_link().expect("next");
    assert_eq!(
        next,
        format!("https://api.example.com/v1/pets?limit=2&status=sold&after={last}")
    );
}

async fn limit_bounds_are_1_and_100(app: TestApp) {
    let draft = petstore_domain::CreatePet::new(
        petstore_domain::PetDraft::new("many", 1, petstore_domain::PetStatus::Sold).expect("draft"),
    );
    for _ in 0..101 {
        app.store.create_pet(&draft).await.expect("create");
    }
    let one = app.get("/v1/pets?limit=1").await;
    assert_eq!(one.json().as_array().expect("array").len(), 1);
    assert!(one.next_link().is_some());
    let hundred = app.get("/v1/pets?limit=100").await;
    assert_eq!(hundred.json().as_array().expect("array").len(), 100);
    let rest = app.walk("/v1/pets?limit=100").await;
    assert_eq!(rest.iter().map(Vec::len).collect::<Vec<_>>(), [100, 1]);
}

async fn bad_query_parameters_return_400_naming_the_parameter(app: TestApp) {
    let cases = [
        ("limit=0", "invalid_query_parameter", "`limit`"),
        ("limit=101", "invalid_query_parameter", "`limit`"),
        ("limit=abc", "invalid_query_parameter", "`limit`"),
        ("limit=", "invalid_query_parameter", "`limit`"),
        ("limit=-5", "invalid_query_parameter", "`limit`"),
        (
            "limit=99999999999999999999",
            "invalid_query_parameter",
            "`limit`",
        ),
        ("limit=1&limit=2", "invalid_query_parameter", "`limit`"),
        ("status=lost", "invalid_query_parameter", "`status`"),
        ("status=", "invalid_query_parameter", "`status`"),
        ("status=Sold", "invalid_query_parameter", "`status`"),
        ("after=x", "invalid_query_parameter", "`after`"),
        ("after=-1", "invalid_query_parameter", "`after`"),
        ("offset=10", "unknown_query_parameter", "`offset`"),
        ("page=2", "unknown_query_parameter", "`page`"),
    ];
    for (query, code, needle) in cases {
        let reply = app.get(&format!("/v1/pets?{query}")).await;
        let message = reply.assert_error(400, code);
        assert!(message.contains(needle), "{query}: {message}");
    }
}

api_tests!(
    list_pets_on_an_empty_catalogue_returns_an_empty_array,
    list_pets_returns_20_by_default_with_a_next_link,
    paging_visits_every_pet_once_in_ascending_order,
    the_next_link_keeps_the_status_filter,
    limit_bounds_are_1_and_100,
    bad_query_parameters_return_400_naming_the_parameter,
);

/// A page's pets are written by hand (`encode`), byte for byte as serde writes them.
#[test]
fn pets_encode_exactly_as_serde_does() {
    use petstore_domain::{Pet, PetStatus};
    use petstore_http::encode::EncodeJson;
    fn encoded<T: EncodeJson + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        value.encode_json(&mut out).expect("encodes");
        out
    }
    let names = [
        "Rex",
        "",
        "quote \" backslash \\ slash /",
        "tab\tnewline\ncr\rnul\u{0}bell\u{7}del\u{7f}",
        "ünïcødé 🐕 \u{2028}\u{2029}",
        "</script>",
    ];
    let statuses = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];
    let pets: Vec<Pet> = names
        .iter()
        .zip(statuses.iter().cycle())
        .zip([0, 1, -1, i64::MAX, i64::MIN, 42])
        .map(|((name, status), n)| Pet {
            id: n,
            name: (*name).to_owned(),
            category_id: n.wrapping_neg(),
            status: *status,
        })
        .collect();
    for pet in &pets {
        // A field of `Pet` that the encoder does not write (or writes otherwise) is named.
        let by_hand: serde_json::Value =
            serde_json::from_slice(&encoded(pet)).expect("the encoder writes JSON");
        let by_serde = serde_json::to_value(pet).expect("serialises");
        for (key, value) in by_serde.as_object().expect("an object") {
            assert_eq!(
                by_hand.get(key),
                Some(value),
                "`{key}` of Pet's JSON is not written as serde writes it by the hand-written \
                 encoder (petstore-http's encode.rs, `impl EncodeJson for Pet`)"
            );
        }
        assert_eq!(
            encoded(pet),
            serde_json::to_vec(pet).expect("serialises"),
            "{pet:?}"
        );
    }
    assert_eq!(
        encoded(pets.as_slice()),
        serde_json::to_vec(&pets).expect("serialises")
    );
    assert_eq!(encoded(&[] as &[Pet]), b"[]");
}
