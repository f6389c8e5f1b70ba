use actix_web::test::TestRequest;
use petstore_http::HttpSettings;

use crate::api_tests;
use crate::helpers::{Reply, TestApp, get_from};

const SUNSET_UNIX: u64 = 1_922_659_200; // 2030-12-05T00:00:00Z

/// Every link of the reply's `Link` values (RFC 8288 lists, split at each link's start).
fn links(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("link")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(", <"))
        .map(|link| format!("<{}", link.trim_start_matches('<')))
        .collect()
}

/// The links of the deprecated operation on a server whose public base is `base` under the
/// base path `path` (the docs page is at the site's root, not under the base path).
fn deprecation_links(base: &str, path: &str) -> Vec<String> {
    let site = base
        .strip_suffix(path)
        .expect("the base ends with its path");
    let docs = format!("{site}/docs/#/pets/getPet");
    vec![
        format!("<{base}/pets>; rel=\"successor-version\""),
        format!("<{docs}>; rel=\"deprecation\"; type=\"text/html\""),
        format!("<{docs}>; rel=\"sunset\"; type=\"text/html\""),
    ]
}

#[track_caller]
fn assert_deprecated(reply: &Reply) {
    assert_eq!(reply.header("deprecation"), Some("@1767225600"));
    assert_eq!(
        reply.header("sunset"),
        Some("Thu, 05 Dec 2030 00:00:00 GMT")
    );
    let links = links(reply);
    for link in deprecation_links("https://api.example.com/v1", "/v1") {
        assert!(links.contains(&link), "{link} among {links:?}");
    }
}

#[actix_web::test]
async fn without_a_public_base_url_the_successor_link_follows_the_host_header() {
    let app = TestApp::with_settings(HttpSettings::new("/api/v1", None)).await;
    let reply = app
        .send(
            TestRequest::get()
                .uri("/api/v1/pets/424242")
                .insert_header(("authorization", format!("Bearer {}", app.key)))
                .insert_header(("host", "pets.example.org:8443")),
        )
        .await;
    reply.assert_error(404, "pet_not_found");
    assert_eq!(
        links(&reply),
        deprecation_links("http://pets.example.org:8443/api/v1", "/api/v1")
    );
}

#[actix_web::test]
async fn a_successor_link_built_for_one_host_is_never_sent_to_another() {
    // The link is kept for the last `Host` seen; alternating names must each get their own.
    let app = TestApp::with_settings(HttpSettings::new("/v1", None)).await;
    for host in [
        "a.example.org",
        "b.example.org",
        "b.example.org",
        "a.example.org",
    ] {
        let reply = app
            .send(
                TestRequest::get()
                    .uri("/v1/pets/424242")
                    .insert_header(("authorization", format!("Bearer {}", app.key)))
                    .insert_header(("host", host)),
            )
            .await;
        assert_eq!(
            links(&reply),
            deprecation_links(&format!("http://{host}/v1"), "/v1")
        );
    }
}

#[actix_web::test]
async fn a_host_header_that_could_end_a_link_is_not_used_in_one() {
    // Without a public base URL, links are built from `Host`: one holding `>` (or `,`, `;`,
    // quotes) would end the link's URI and add links of the client's choosing.
    let app = TestApp::with_settings(HttpSettings::new("/v1", None)).await;
    app.create_pet("Rex", "available").await;
    app.create_pet("Max", "available").await;
    let evil = "a>;rel=preload;as=script,<https://evil.example/x.js";
    let with_host = |request: TestRequest| {
        request
            .insert_header(("authorization", format!("Bearer {}", app.key)))
            .insert_header(("host", evil))
    };
    let deprecated = app
        .send(with_host(TestRequest::get().uri("/v1/pets/1")))
        .await;
    let page = app
        .send(with_host(TestRequest::get().uri("/v1/pets?limit=1")))
        .await;
    let created = app
        .send(
            with_host(TestRequest::post().uri("/v1/pets"))
                .insert_header(("content-type", "application/json"))
                .set_payload(r#"{"name":"Ace","categoryId":1}"#),
        )
        .await;
    assert_eq!(created.status, 201);
    let written = [
        links(&deprecated),
        links(&page),
        vec![created.header("location").expect("location").to_owned()],
    ];
    for value in written.iter().flatten() {
        assert!(
            !value.contains("evil") && !value.contains("preload"),
            "{value}"
        );
        assert_eq!(
            value.matches('<').count(),
            value.matches('>').count(),
            "{value}"
        );
    }
    // The deprecated operation's three links, the next page's, the location.
    assert_eq!(written.iter().flatten().count(), 5, "{written:?}");
}

async fn get_pet_returns_the_pet_with_deprecation_headers(app: TestApp) {
    let pet = app.create_pet("Rex", "sold").await;
    let reply = app.get(&format!("/v1/pets/{}", pet["id"])).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), pet);
    assert_deprecated(&reply);
}

async fn get_pet_for_an_unknown_id_returns_404(app: TestApp) {
    for id in ["424242", "0", "-1", "9223372036854775807"] {
        let reply = app.get(&format!("/v1/pets/{id}")).await;
        reply.assert_error(404, "pet_not_found");
        assert_deprecated(&reply);
    }
}

async fn get_pet_with_a_non_int64_id_returns_400(app: TestApp) {
    for id in ["abc", "1.5", "9223372036854775808", "+1", "1e3", "%20"] {
        let reply = app.get(&format!("/v1/pets/{id}")).await;
        let message = reply.assert_error(400, "invalid_path_parameter");
        assert!(message.contains("`petId`"), "{id}: {message}");
        assert_deprecated(&reply);
    }
}

async fn every_get_pet_error_carries_the_deprecation_headers(app: TestApp) {
    let unauthenticated = app.send(TestRequest::get().uri("/v1/pets/1")).await;
    unauthenticated.assert_error(401, "unauthorized");
    assert_deprecated(&unauthenticated);
    let wrong_method = app.post_json("/v1/pets/1", "{}").await;
    wrong_method.assert_error(405, "method_not_allowed");
    assert_eq!(wrong_method.header("allow"), Some("GET, HEAD"));
    assert_deprecated(&wrong_method);
    // Admission's own refusal too: an address over its limit (60 a minute without a key).
    let from = || get_from("/v1/pets/1", "203.0.113.40:5");
    for _ in 0..60 {
        app.send(from()).await.assert_error(401, "unauthorized");
    }
    let limited = app.send(from()).await;
    limited.assert_error(429, "rate_limited");
    assert_deprecated(&limited);
}

async fn get_pet_answers_410_from_the_sunset_instant_on(app: TestApp) {
    let pet = app.create_pet("Rex", "available").await;
    let uri = format!("/v1/pets/{}", pet["id"]);
    app.clock.set(SUNSET_UNIX - 1);
    assert_eq!(
        app.get(&uri).await.status,
        200,
        "one second before the sunset"
    );
    app.clock.set(SUNSET_UNIX);
    let gone = app.get(&uri).await;
    let message = gone.assert_error(410, "endpoint_removed");
    assert!(message.contains("GET /pets"), "{message}");
    assert_deprecated(&gone);
    app.clock.set(SUNSET_UNIX + 86_400 * 365);
    app.get(&uri).await.assert_error(410, "endpoint_removed");
    assert_eq!(
        app.get("/v1/pets").await.status,
        200,
        "the replacement stays"
    );
}

api_tests!(
    get_pet_returns_the_pet_with_deprecation_headers,
    get_pet_for_an_unknown_id_returns_404,
    get_pet_with_a_non_int64_id_returns_400,
    every_get_pet_error_carries_the_deprecation_headers,
    get_pet_answers_410_from_the_sunset_instant_on,
);
