//! `Idempotency-Key` on `POST /pets`: replay, mismatch, scope, stored client errors, in-flight
//! and abandoned claims (and the late write of a claim lost), expiry and pruning; on every
//! backend.

use actix_web::http::header;
use actix_web::test::TestRequest;

use petstore_domain::{
    ClaimOutcome, Completion, CreatePet, Fingerprint, IdempotencyKey, IdempotentRequest, KeySpec,
    PetDraft, PetStatus, Plan, StorageErrorKind, StoredResponse,
};

use petstore_domain::Clock;

use crate::api_tests;
use crate::helpers::{Reply, TestApp};

const REX: &str = r#"{"name":"Rex","categoryId":1}"#;

/// `POST /v1/pets` with `body`, `key` as the API key and `idempotency` as the header.
fn post(key: &str, idempotency: Option<&str>, body: &str) -> TestRequest {
    let mut request = TestRequest::post()
        .uri("/v1/pets")
        .insert_header((header::AUTHORIZATION, format!("Bearer {key}")))
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .set_payload(body.to_owned());
    if let Some(idempotency) = idempotency {
        request = request.insert_header(("Idempotency-Key", idempotency));
    }
    request
}

async fn pet_count(app: &TestApp) -> usize {
    app.get("/v1/pets?limit=100")
        .await
        .json()
        .as_array()
        .expect("array")
        .len()
}

/// The id of the API key `secret`.
async fn key_id(app: &TestApp, secret: &str) -> i64 {
    let secret = petstore_domain::ApiKeySecret::parse(secret).expect("a key");
    app.store
        .find_active_key(&secret.hash())
        .await
        .expect("find")
        .expect("the key")
        .key
        .id
}

fn replayed(reply: &Reply) -> bool {
    reply.header("idempotent-replayed") == Some("true")
}

async fn a_retried_create_is_answered_from_the_first_without_a_second_pet(app: TestApp) {
    let first = app.send(post(&app.key, Some("create-rex-1"), REX)).await;
    assert_eq!(first.status, 201);
    assert!(!replayed(&first));
    let again = app.send(post(&app.key, Some("create-rex-1"), REX)).await;
    assert_eq!(again.status, 201);
    assert!(replayed(&again));
    assert_eq!(again.body, first.body, "the same body, the same id");
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("content-type"), Some("application/json"));
    assert!(
        again.header("x-ratelimit-remaining").is_some(),
        "a replay is a response like any"
    );
    assert_eq!(pet_count(&app).await, 1);
    // Without a key, the same body is a new pet each time.
    assert_eq!(app.send(post(&app.key, None, REX)).await.status, 201);
    assert_eq!(pet_count(&app).await, 2);
}

/// The answer and its replay carry the whole address, stored with the answer (so that every
/// release reads it alike); a record stored before is replayed as it was stored.
async fn a_replay_answers_the_whole_address_of_what_was_created(app: TestApp) {
    let first = app.send(post(&app.key, Some("where"), REX)).await;
    let id = first.json()["id"].as_i64().expect("an id");
    let address = format!("https://api.example.com/v1/pets/{id}");
    assert_eq!(first.header("location"), Some(address.as_str()));
    let again = app.send(post(&app.key, Some("where"), REX)).await;
    assert_eq!(again.header("location"), Some(address.as_str()));

    let owner = key_id(&app, &app.key).await;
    let request = IdempotentRequest {
        owner,
        key: IdempotencyKey::parse(b"from-before").expect("key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", REX.as_bytes()),
        now: app.clock.unix_seconds(),
        retention: 86_400,
        lease: 60,
    };
    let ClaimOutcome::Claimed(claim) = app
        .store
        .claim_idempotency_key(&request)
        .await
        .expect("claim")
    else {
        panic!("a fresh key is claimed");
    };
    let stored = StoredResponse {
        status: 201,
        location: Some("https://old.example.com/v1/pets/77".into()),
        body: r#"{"id":77,"name":"Rex","categoryId":1,"status":"available"}"#.into(),
    };
    app.store
        .complete_idempotency_key(&claim, &stored)
        .await
        .expect("complete");
    let old = app.send(post(&app.key, Some("from-before"), REX)).await;
    assert!(replayed(&old));
    assert_eq!(
        old.header("location"),
        Some("https://old.example.com/v1/pets/77")
    );
    assert_eq!(old.body, stored.body.as_bytes());
}

async fn a_key_reused_with_another_request_is_refused(app: TestApp) {
    assert_eq!(app.send(post(&app.key, Some("k"), REX)).await.status, 201);
    let other = app
        .send(post(
            &app.key,
            Some("k"),
            r#"{"name":"Max","categoryId":1}"#,
        ))
        .await;
    other.assert_error(422, "idempotency_key_reused");
    // Where the header is documented (draft-ietf-httpapi-idempotency-key-header-07 §2.7).
    assert_eq!(
        other.header("link"),
        Some(
            "<https://api.example.com/docs/#/pets/createPet>; rel=\"describedby\"; \
             type=\"text/html\""
        )
    );
    // The same fields in another order are another body: the fingerprint is the bytes.
    let reordered = app
        .send(post(
            &app.key,
            Some("k"),
            r#"{"categoryId":1,"name":"Rex"}"#,
        ))
        .await;
    reordered.assert_error(422, "idempotency_key_reused");
    assert_eq!(pet_count(&app).await, 1);
}

/// The header is a Structured Field string (draft-ietf-httpapi-idempotency-key-header-07): the
/// quotes are not part of the key, so the quoted and the bare form are one key; a quoted key may
/// hold spaces.
async fn a_quoted_key_is_the_same_key_as_its_bare_form(app: TestApp) {
    let first = app.send(post(&app.key, Some("\"8e03-978e\""), REX)).await;
    assert_eq!(first.status, 201);
    let bare = app.send(post(&app.key, Some("8e03-978e"), REX)).await;
    assert_eq!((bare.status.as_u16(), replayed(&bare)), (201, true));
    assert_eq!(bare.json(), first.json());
    let spaced = app
        .send(post(&app.key, Some("\"order 42, retry\""), REX))
        .await;
    assert_eq!((spaced.status.as_u16(), replayed(&spaced)), (201, false));
    let again = app
        .send(post(&app.key, Some("\"order 42, retry\""), REX))
        .await;
    assert_eq!((again.status.as_u16(), replayed(&again)), (201, true));
    assert_eq!(again.json(), spaced.json());
    assert_eq!(pet_count(&app).await, 2);
}

async fn keys_are_scoped_to_the_api_key_that_sent_them(app: TestApp) {
    let (_, other) = app
        .store
        .create_key(&KeySpec::new(Plan::Pro, "other", None).expect("spec"))
        .await
        .expect("create");
    let mine = app.send(post(&app.key, Some("shared"), REX)).await;
    let theirs = app.send(post(other.expose(), Some("shared"), REX)).await;
    assert_eq!((mine.status.as_u16(), theirs.status.as_u16()), (201, 201));
    assert!(!replayed(&theirs));
    assert_ne!(mine.json()["id"], theirs.json()["id"]);
}

async fn a_client_error_is_stored_and_replayed_too(app: TestApp) {
    let bad = r#"{"name":"Rex"}"#;
    let first = app.send(post(&app.key, Some("bad-1"), bad)).await;
    first.assert_error(400, "missing_field");
    let again = app.send(post(&app.key, Some("bad-1"), bad)).await;
    again.assert_error(400, "missing_field");
    assert!(replayed(&again));
    assert_eq!(again.body, first.body);
    // Fixing the body needs a new key: this one is spent on the bad request.
    app.send(post(&app.key, Some("bad-1"), REX))
        .await
        .assert_error(422, "idempotency_key_reused");
    assert_eq!(
        app.send(post(&app.key, Some("bad-2"), REX)).await.status,
        201
    );
}

async fn malformed_keys_are_refused_naming_the_header(app: TestApp) {
    for bad in [
        String::new(),
        "has space".into(),
        "x".repeat(256),
        "tab\there".into(),
        "\"\"".into(),
        "\"unclosed".into(),
        "\"a\";param=1".into(),
        format!("\"{}\"", "x".repeat(256)),
    ] {
        let reply = app.send(post(&app.key, Some(&bad), REX)).await;
        let message = reply.assert_error(400, "invalid_header");
        assert!(message.contains("Idempotency-Key"), "{message}");
    }
    let twice = post(&app.key, Some("one"), REX).append_header(("Idempotency-Key", "two"));
    let message = app.send(twice).await.assert_error(400, "bad_request");
    assert!(message.contains("Idempotency-Key"), "{message}");
    assert_eq!(
        app.send(post(&app.key, Some(&"x".repeat(255)), REX))
            .await
            .status,
        201
    );
    assert_eq!(pet_count(&app).await, 1);
}

async fn a_request_still_running_gets_409_and_an_abandoned_one_is_taken_over(app: TestApp) {
    let owner = key_id(&app, &app.key).await;
    let now = app.clock.unix_seconds();
    let claim = |at: u64| IdempotentRequest {
        owner,
        key: IdempotencyKey::parse(b"in-flight").expect("key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", REX.as_bytes()),
        now: at,
        retention: 86_400,
        lease: 60,
    };
    // Another request (on another instance, say) holds the key.
    let held = app
        .store
        .claim_idempotency_key(&claim(now))
        .await
        .expect("claim");
    let ClaimOutcome::Claimed(abandoned) = held else {
        panic!("expected a claim, got {held:?}");
    };
    let reply = app.send(post(&app.key, Some("in-flight"), REX)).await;
    reply.assert_error(409, "idempotency_request_in_progress");
    assert!(
        reply.header("link").is_some_and(|link| link.ends_with(
            "/docs/#/pets/createPet>; rel=\"describedby\"; \
                type=\"text/html\""
        )),
        "{:?}",
        reply.header("link")
    );
    assert_eq!(reply.header("retry-after"), Some("1"));
    // The same key with another body while in flight: still a mismatch.
    app.send(post(
        &app.key,
        Some("in-flight"),
        r#"{"name":"Max","categoryId":1}"#,
    ))
    .await
    .assert_error(422, "idempotency_key_reused");
    assert_eq!(pet_count(&app).await, 0);
    // Its process died: past the lease, a retry runs.
    app.clock.set(now + 61);
    let reply = app.send(post(&app.key, Some("in-flight"), REX)).await;
    assert_eq!(reply.status, 201);
    assert!(!replayed(&reply));
    assert_eq!(pet_count(&app).await, 1);
    // It was only slow, and now writes its pet under the claim it lost: nothing is stored
    // (`Unavailable`, a retry of that request gets the answer given since).
    let late = CreatePet {
        draft: PetDraft::new("Rex", 1, PetStatus::Available).expect("draft"),
        completion: Some(Completion {
            claim: abandoned,
            base: "https://api.example.com/v1".into(),
        }),
        creator: None,
    };
    let lost = app
        .store
        .create_pet(&late)
        .await
        .expect_err("the claim was lost");
    assert_eq!(lost.kind(), StorageErrorKind::Unavailable, "{lost:?}");
    assert_eq!(pet_count(&app).await, 1);
    let again = app.send(post(&app.key, Some("in-flight"), REX)).await;
    assert_eq!((again.status.as_u16(), replayed(&again)), (201, true));
    assert_eq!(again.json(), reply.json());
}

async fn records_expire_after_the_retention_and_are_pruned(app: TestApp) {
    let now = app.clock.unix_seconds();
    assert_eq!(app.send(post(&app.key, Some("old"), REX)).await.status, 201);
    // Within 24 hours, a replay.
    app.clock.set(now + 86_399);
    assert!(replayed(&app.send(post(&app.key, Some("old"), REX)).await));
    // After, the key is free: another request may use it.
    app.clock.set(now + 86_401);
    let reused = app
        .send(post(
            &app.key,
            Some("old"),
            r#"{"name":"Max","categoryId":1}"#,
        ))
        .await;
    assert_eq!(reused.status, 201);
    assert!(!replayed(&reused));
    assert_eq!(pet_count(&app).await, 2);
    // Pruning deletes what is older than its cut-off, and nothing else.
    assert_eq!(
        app.store
            .prune_idempotency_keys(now + 86_401)
            .await
            .expect("prune"),
        0
    );
    assert_eq!(
        app.store
            .prune_idempotency_keys(now + 86_402)
            .await
            .expect("prune"),
        1
    );
    assert_eq!(
        app.store
            .prune_idempotency_keys(now + 86_402)
            .await
            .expect("prune"),
        0
    );
}

async fn a_backlog_of_expired_records_is_pruned_in_batches(app: TestApp) {
    let owner = key_id(&app, &app.key).await;
    let claim = |n: usize, at: u64| IdempotentRequest {
        owner,
        key: IdempotencyKey::parse(format!("backlog-{n}").as_bytes()).expect("key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", b"{}"),
        now: at,
        retention: 86_400,
        lease: 60,
    };
    for n in 0..1_200 {
        let outcome = app
            .store
            .claim_idempotency_key(&claim(n, 1_000))
            .await
            .expect("claim");
        assert!(matches!(outcome, ClaimOutcome::Claimed(_)));
    }
    let fresh = app
        .store
        .claim_idempotency_key(&claim(5_000, 2_000))
        .await
        .expect("claim");
    assert!(matches!(fresh, ClaimOutcome::Claimed(_)));
    assert_eq!(
        app.store
            .prune_idempotency_keys(1_001)
            .await
            .expect("prune"),
        1_200,
        "every batch"
    );
    assert_eq!(
        app.store
            .prune_idempotency_keys(1_001)
            .await
            .expect("prune"),
        0
    );
    assert_eq!(
        app.store
            .prune_idempotency_keys(2_001)
            .await
            .expect("prune"),
        1,
        "the fresh one last"
    );
}

async fn a_read_only_key_cannot_write_even_idempotently(app: TestApp) {
    let spec = KeySpec::new(Plan::Pro, "reader", None)
        .expect("spec")
        .with_scope(petstore_domain::Scope::ReadOnly);
    let (_, reader) = app.store.create_key(&spec).await.expect("create");
    app.send(post(reader.expose(), Some("r"), REX))
        .await
        .assert_error(403, "insufficient_scope");
    app.send(post(reader.expose(), None, REX))
        .await
        .assert_error(403, "insufficient_scope");
    assert_eq!(app.get_as("/v1/pets", reader.expose()).await.status, 200);
    assert_eq!(pet_count(&app).await, 0);
}

api_tests!(
    a_quoted_key_is_the_same_key_as_its_bare_form,
    a_retried_create_is_answered_from_the_first_without_a_second_pet,
    a_replay_answers_the_whole_address_of_what_was_created,
    a_key_reused_with_another_request_is_refused,
    keys_are_scoped_to_the_api_key_that_sent_them,
    a_client_error_is_stored_and_replayed_too,
    malformed_keys_are_refused_naming_the_header,
    a_request_still_running_gets_409_and_an_abandoned_one_is_taken_over,
    records_expire_after_the_retention_and_are_pruned,
    a_backlog_of_expired_records_is_pruned_in_batches,
    a_read_only_key_cannot_write_even_idempotently,
);

/// A server error frees the key: the retry runs again (and, the storage back, succeeds).
#[actix_web::test]
async fn a_server_error_leaves_the_key_free_for_the_retry() {
    let storage = std::sync::Arc::new(crate::memory_storage::MemoryStorage::default());
    let app = TestApp::with_storage(storage.clone()).await;
    storage.fail_creates(true);
    app.send(post(&app.key, Some("retry-me"), REX))
        .await
        .assert_error(503, "service_unavailable");
    storage.fail_creates(false);
    let reply = app.send(post(&app.key, Some("retry-me"), REX)).await;
    assert_eq!(reply.status, 201);
    assert!(!replayed(&reply), "the failure was not stored");
    assert_eq!(pet_count(&app).await, 1);
}
