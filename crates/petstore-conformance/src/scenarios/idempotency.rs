//! Idempotency claims: one winner among racing claims, replay of a completed request, release,
//! takeover of an abandoned claim, completion in the create's own transaction, pruning.

use futures_util::future::join_all;
use petstore_domain::{
    ClaimOutcome, Completion, CreatePet, Fingerprint, IdempotencyClaim, IdempotencyKey,
    IdempotentRequest, KeySpec, PetDraft, PetStatus, Plan, Storage, StorageErrorKind,
    StoredResponse,
};

use super::support::walk;

/// Records kept a day; claims held a minute.
const RETENTION: u64 = 86_400;
const LEASE: u64 = 60;
const NOW: u64 = 1_800_000_000;

/// The id of a new key: idempotency records belong to one.
async fn owner(storage: &dyn Storage) -> i64 {
    storage
        .create_key(&KeySpec::new(Plan::Pro, "retries", None).expect("spec"))
        .await
        .expect("create a key")
        .0
        .id
}

fn request(owner: i64, key: &str, body: &str, now: u64) -> IdempotentRequest {
    IdempotentRequest {
        owner,
        key: IdempotencyKey::parse(key.as_bytes()).expect("a valid key"),
        fingerprint: Fingerprint::of("POST", "/v1/pets", body.as_bytes()),
        now,
        retention: RETENTION,
        lease: LEASE,
    }
}

async fn claim(storage: &dyn Storage, request: &IdempotentRequest) -> ClaimOutcome {
    storage
        .claim_idempotency_key(request)
        .await
        .expect("claim the key")
}

fn claimed(outcome: ClaimOutcome) -> IdempotencyClaim {
    match outcome {
        ClaimOutcome::Claimed(claim) => claim,
        other => panic!("the key was free, but the claim found {other:?}"),
    }
}

/// Completes `claim` with a `400` answering `body`.
async fn complete(storage: &dyn Storage, claim: &IdempotencyClaim, body: &str) {
    storage
        .complete_idempotency_key(claim, &response(body))
        .await
        .expect("complete");
}

fn response(body: &str) -> StoredResponse {
    StoredResponse {
        status: 400,
        location: None,
        body: body.to_owned(),
    }
}

/// Ten claims of one key at once, for the same request: one claims it, the others find it in
/// flight.
pub async fn racing_claims_of_one_key_have_one_winner(storage: &dyn Storage) {
    let owner = owner(storage).await;
    let request = request(owner, "race", "{}", NOW);
    let outcomes = join_all((0..10).map(|_| storage.claim_idempotency_key(&request))).await;
    // A backend that detects the conflict when it commits may answer a loser unavailable
    // (retried, it finds the key in flight).
    let outcomes: Vec<ClaimOutcome> = outcomes
        .into_iter()
        .filter_map(|outcome| match outcome {
            Ok(outcome) => Some(outcome),
            Err(error) if error.kind() == StorageErrorKind::Unavailable => None,
            Err(error) => panic!("a claim failed: {error:?}"),
        })
        .collect();
    let won = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, ClaimOutcome::Claimed(_)))
        .count();
    assert_eq!(won, 1, "one claim wins: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|outcome| matches!(outcome, ClaimOutcome::Claimed(_) | ClaimOutcome::InFlight)),
        "the others find it in flight: {outcomes:?}"
    );
}

/// A completed request is answered again; the same key with another request is a mismatch; a
/// released claim runs again; an abandoned claim (past its lease) is taken over, and the
/// abandoned one's completion then changes nothing; keys are per owner; an expired record is
/// as good as absent.
pub async fn a_completed_claim_is_replayed_and_a_released_one_runs_again(storage: &dyn Storage) {
    let owner = owner(storage).await;
    let first = request(owner, "k1", r#"{"a":1}"#, NOW);
    let held = claimed(claim(storage, &first).await);
    assert_eq!(claim(storage, &first).await, ClaimOutcome::InFlight);
    complete(storage, &held, "done").await;
    assert_eq!(
        claim(storage, &first).await,
        ClaimOutcome::Completed(response("done"))
    );
    let other_body = request(owner, "k1", r#"{"a":2}"#, NOW);
    assert_eq!(claim(storage, &other_body).await, ClaimOutcome::Mismatch);
    // Keys are compared byte for byte: a trailing space (a quoted key may hold one) makes
    // another key.
    let spaced = IdempotentRequest {
        key: IdempotencyKey::parse(b"\"k1 \"").expect("a quoted key"),
        ..request(owner, "k1", r#"{"a":1}"#, NOW)
    };
    claimed(claim(storage, &spaced).await);
    // Another owner's key of the same name is another key.
    let someone = self::owner(storage).await;
    claimed(claim(storage, &request(someone, "k1", r#"{"a":1}"#, NOW)).await);
    // Released: free again.
    let second = request(owner, "k2", "{}", NOW);
    let held = claimed(claim(storage, &second).await);
    storage
        .release_idempotency_key(&held)
        .await
        .expect("release");
    claimed(claim(storage, &second).await);
    // Abandoned past its lease: taken over by the same request; the abandoned claim's
    // completion is refused silently, the new one's kept.
    let third = request(owner, "k3", "{}", NOW);
    let abandoned = claimed(claim(storage, &third).await);
    let later = request(owner, "k3", "{}", NOW + LEASE + 1);
    let takeover = claimed(claim(storage, &later).await);
    assert_ne!(
        takeover.token, abandoned.token,
        "a takeover is a claim of its own"
    );
    complete(storage, &abandoned, "late").await;
    assert_eq!(claim(storage, &later).await, ClaimOutcome::InFlight);
    complete(storage, &takeover, "new").await;
    assert_eq!(
        claim(storage, &later).await,
        ClaimOutcome::Completed(response("new"))
    );
    // Past the retention, a completed record no longer answers: the key is free.
    let expired = request(owner, "k1", r#"{"a":2}"#, NOW + RETENTION + 1);
    claimed(claim(storage, &expired).await);
}

/// A create sent with its claim completes it in the same transaction: a retry is answered the
/// create's `201` (its address under the base given, its JSON); a create whose claim was taken
/// over stores nothing and fails as unavailable (the client retries and gets the other's).
pub async fn a_create_completes_its_claim_in_its_own_transaction(storage: &dyn Storage) {
    let owner = owner(storage).await;
    let base = "https://api.example.com/v1";
    let first = request(owner, "create", r#"{"name":"Rex"}"#, NOW);
    let held = claimed(claim(storage, &first).await);
    let create = |claim: IdempotencyClaim, name: &str| CreatePet {
        draft: PetDraft::new(name, 1, PetStatus::Available).expect("draft"),
        completion: Some(Completion {
            claim,
            base: base.to_owned(),
        }),
        creator: None,
    };
    let pet = storage
        .create_pet(&create(held, "Rex"))
        .await
        .expect("create");
    assert_eq!(
        claim(storage, &first).await,
        ClaimOutcome::Completed(StoredResponse::created(&pet, base))
    );
    let second = request(owner, "lost", r#"{"name":"Tom"}"#, NOW);
    let abandoned = claimed(claim(storage, &second).await);
    claimed(
        claim(
            storage,
            &request(owner, "lost", r#"{"name":"Tom"}"#, NOW + LEASE + 1),
        )
        .await,
    );
    let lost = storage
        .create_pet(&create(abandoned, "Tom"))
        .await
        .expect_err("a create whose claim was taken over");
    assert_eq!(lost.kind(), StorageErrorKind::Unavailable, "{lost:?}");
    assert_eq!(
        walk(storage, 10, None).await,
        vec![pet.id],
        "nothing more stored"
    );
}

/// Pruning deletes the records created before a time, and only those; a pruned key is free.
pub async fn old_idempotency_records_are_pruned(storage: &dyn Storage) {
    let owner = owner(storage).await;
    let old = request(owner, "old", "{}", NOW);
    let held = claimed(claim(storage, &old).await);
    complete(storage, &held, "old").await;
    let recent = request(owner, "recent", "{}", NOW + 100);
    claimed(claim(storage, &recent).await);
    assert_eq!(
        storage
            .prune_idempotency_keys(NOW + 50)
            .await
            .expect("prune"),
        1
    );
    claimed(claim(storage, &old).await);
    assert_eq!(claim(storage, &recent).await, ClaimOutcome::InFlight);
}
