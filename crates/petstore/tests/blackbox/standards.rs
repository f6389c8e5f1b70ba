//! The HTTP standards the service follows, through the real binary: RFC 6750's bearer
//! challenges, RFC 9745 and RFC 8594's links on the deprecated operation, and
//! draft-ietf-httpapi-idempotency-key-header-07's quoted `Idempotency-Key` and `describedby`
//! link, RFC 9110's conditional `GET` and the bound on the free `304`s.

use crate::common::{TestServer, agent, run, temp_db, unlimited_key};

/// The answer to `method` `url` with these headers: status, `WWW-Authenticate`, every `Link`
/// value, `Idempotent-Replayed`.
fn call(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Option<String>, Vec<String>, bool) {
    let agent = agent();
    let mut response = match body {
        Some(body) => {
            let mut request = agent.post(url).header("Content-Type", "application/json");
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.send(body).expect(method)
        }
        None => {
            let mut request = agent.get(url);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.call().expect(method)
        }
    };
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().expect("ASCII").to_owned())
    };
    let challenge = header("www-authenticate");
    let replayed = header("idempotent-replayed").as_deref() == Some("true");
    let links = response
        .headers()
        .get_all("link")
        .iter()
        .map(|value| value.to_str().expect("ASCII").to_owned())
        .collect();
    let _ = response.body_mut().read_to_string();
    (response.status().as_u16(), challenge, links, replayed)
}

#[test]
fn challenges_deprecation_links_and_quoted_idempotency_keys_through_the_binary() {
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let read_only = run(
        &db,
        &["keys", "create", "--plan", "pro", "--scope", "read-only"],
    )
    .trim()
    .to_owned();
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let base = &server.base;
    let pets = format!("{base}/pets");
    // The docs page is at the site's root, not under the base path.
    let site = base.strip_suffix("/v1").expect("the base path");
    let bearer = format!("Bearer {key}");
    let rex = r#"{"name":"Rex","categoryId":1}"#;

    // RFC 6750 §3: no token, no error code; a token that is not a key, `invalid_token`; a key
    // whose scope does not allow the write, `insufficient_scope`.
    let plain = Some("Bearer realm=\"petstore\"".to_owned());
    assert_eq!(call("GET", &pets, &[], None).0, 401);
    assert_eq!(call("GET", &pets, &[], None).1, plain);
    let wrong = call("GET", &pets, &[("Authorization", "Bearer pst_wrong")], None);
    assert_eq!(
        (wrong.0, wrong.1),
        (
            401,
            Some("Bearer realm=\"petstore\", error=\"invalid_token\"".to_owned())
        )
    );
    let read_only = format!("Bearer {read_only}");
    let refused = call("POST", &pets, &[("Authorization", &read_only)], Some(rex));
    assert_eq!(
        (refused.0, refused.1),
        (
            403,
            Some("Bearer realm=\"petstore\", error=\"insufficient_scope\"".to_owned())
        )
    );

    // A quoted key is the bare key; a reused one links where the header is documented.
    let create = |idempotency: &str, body: &str| {
        call(
            "POST",
            &pets,
            &[("Authorization", &bearer), ("Idempotency-Key", idempotency)],
            Some(body),
        )
    };
    let first = create("\"a b-1\"", rex);
    assert_eq!((first.0, first.3), (201, false));
    let retried = create("\"a b-1\"", rex);
    assert_eq!((retried.0, retried.3), (201, true));
    let bare = create("k-2", rex);
    let quoted = create("\"k-2\"", rex);
    assert_eq!((bare.0, quoted.0, quoted.3), (201, 201, true));
    let reused = create("k-2", r#"{"name":"Max","categoryId":1}"#);
    assert_eq!(reused.0, 422);
    assert_eq!(
        reused.2,
        [format!(
            "<{site}/docs/#/pets/createPet>; rel=\"describedby\"; type=\"text/html\""
        )]
    );

    // The deprecated operation links its successor, its deprecation and its sunset.
    let deprecated = call(
        "GET",
        &format!("{pets}/1"),
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(deprecated.0, 200);
    let docs = format!("{site}/docs/#/pets/getPet");
    assert_eq!(
        deprecated.2,
        [format!(
            "<{pets}>; rel=\"successor-version\", <{docs}>; rel=\"deprecation\"; \
             type=\"text/html\", <{docs}>; rel=\"sunset\"; type=\"text/html\""
        )]
    );
    server.stop();
}

/// RFC 9110's conditional `GET` through the binary: a tagged answer, `304` with no body to a
/// request naming its tag (in a list, weakly), the caching headers, for a key's pages and for
/// the documents anyone may read.
#[test]
fn conditional_requests_through_the_binary() {
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let bearer = format!("Bearer {key}");
    let agent = agent();
    let (status, _) = crate::common::post(&server.base, &key, r#"{"name":"Rex","categoryId":1}"#);
    assert_eq!(status, 201);
    let pets = format!("{}/pets", server.base);
    let openapi = format!("{}/openapi.json", server.base);
    let css = format!("http://{}/docs/swagger-ui.css", server.addr());
    for (url, caching) in [
        (&pets, "private, no-cache"),
        (&openapi, "public, no-cache"),
        (&css, "public, no-cache"),
    ] {
        let mut ok = agent
            .get(url)
            .header("Authorization", &bearer)
            .call()
            .expect("GET");
        assert_eq!(ok.status().as_u16(), 200, "{url}");
        let header = |response: &ureq::http::Response<ureq::Body>, name: &str| {
            response
                .headers()
                .get(name)
                .map(|value| value.to_str().expect("ASCII").to_owned())
        };
        let tag = header(&ok, "etag").expect("ETag");
        assert!(tag.starts_with("W/\""), "{url}: {tag}");
        assert_eq!(header(&ok, "cache-control").as_deref(), Some(caching));
        let body = ok.body_mut().read_to_string().expect("body");
        assert!(!body.is_empty());
        let mut not_modified = agent
            .get(url)
            .header("Authorization", &bearer)
            .header("If-None-Match", format!("\"other\", {}", &tag[2..]))
            .call()
            .expect("conditional GET");
        assert_eq!(not_modified.status().as_u16(), 304, "{url}");
        assert_eq!(header(&not_modified, "etag"), Some(tag.clone()));
        assert_eq!(
            header(&not_modified, "cache-control").as_deref(),
            Some(caching)
        );
        assert!(header(&not_modified, "x-ratelimit-remaining").is_some());
        let rest = not_modified.body_mut().read_to_string().expect("body");
        assert!(rest.is_empty(), "{url}: a 304 has no body");
        if url == &pets {
            assert_eq!(header(&ok, "vary").as_deref(), Some("Authorization"));
            // Without a key, nothing: not even whether the tag matched.
            let anonymous = agent
                .get(url)
                .header("If-None-Match", &tag)
                .call()
                .expect("GET");
            assert_eq!(anonymous.status().as_u16(), 401);
        }
    }
    server.stop();
}

/// The bound on free revalidations, through the binary: a Free key (60 a minute) asking the
/// same page again and again with its tag gets 60 free `304`s, then 59 counted ones (after the
/// `200` that gave it the tag), then `429`.
#[test]
fn matching_conditional_requests_are_free_up_to_a_bound_then_refused() {
    let (_dir, db) = temp_db();
    let key = run(&db, &["keys", "create", "--plan", "free"])
        .trim()
        .to_owned();
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let bearer = format!("Bearer {key}");
    let url = format!("{}/pets", server.base);
    let agent = agent();
    crate::common::wait_for_room_in_minute(20);
    let first = agent
        .get(&url)
        .header("Authorization", &bearer)
        .call()
        .expect("GET");
    let tag = first.headers()["etag"].to_str().expect("ASCII").to_owned();
    let mut answers = Vec::new();
    for _ in 0..120 {
        let reply = agent
            .get(&url)
            .header("Authorization", &bearer)
            .header("If-None-Match", &tag)
            .call()
            .expect("GET");
        let remaining = reply.headers()["x-ratelimit-remaining"]
            .to_str()
            .expect("ASCII")
            .to_owned();
        answers.push((reply.status().as_u16(), remaining));
    }
    server.stop();
    let free = answers
        .iter()
        .take(60)
        .all(|(status, left)| *status == 304 && left == "59");
    assert!(free, "{:?}", &answers[..60]);
    let counted: Vec<(u16, String)> = (0..59).rev().map(|left| (304, left.to_string())).collect();
    assert_eq!(answers[60..119], counted[..]);
    assert_eq!(answers[119], (429, "0".to_owned()));
}
