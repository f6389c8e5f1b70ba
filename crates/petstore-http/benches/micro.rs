//! Micro-benchmarks of the per-request pure work: the in-process rate-limit decision, input
//! validation, API-key hashing and cached lookup, and a page's JSON. `cargo bench -p petstore-http`; figures and
//! method in docs/performance.md. `cargo test --benches` runs each once as a smoke test.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use petstore_domain::{
    ApiKey, ApiKeySecret, NewPet, Pet, PetStatus, Plan, RateDecision, RateLimits,
};
use petstore_http::auth::{ApiClient, KeyCache};
use petstore_http::encode::EncodeJson;
use petstore_http::ratelimit::{Hit, MemoryCounters, Subject};

const KEYS: i64 = 10_000;
// 2026-11-21T12:34:00Z
const NOW: u64 = 1_795_264_440;

fn limiter(c: &mut Criterion) {
    let counters = MemoryCounters::new(86_400, 100_000);
    let limits = RateLimits {
        per_minute: u32::MAX,
        per_day: u32::MAX,
    };
    for id in 0..KEYS {
        counters.hit_now(Subject::Key(id), limits, NOW);
    }
    let mut id = 0;
    c.bench_function("limiter decision, 10,000 keys (in-process)", |b| {
        b.iter(|| {
            id = (id + 7_919) % KEYS;
            match counters.hit_now(Subject::Key(black_box(id)), limits, NOW) {
                Hit::Counted { counts, .. } => {
                    let decision = RateDecision::new(counts, limits, NOW);
                    black_box(decision.binding().remaining())
                }
                Hit::Banned(_) => unreachable!("no bans in this benchmark"),
            }
        })
    });
}

fn validation(c: &mut Criterion) {
    let body = br#"{"name":"Rex the third","categoryId":12,"status":"pending"}"#;
    c.bench_function("parse and validate a NewPet", |b| {
        b.iter(|| {
            let pet: NewPet = serde_json::from_slice(black_box(body)).expect("valid");
            black_box(pet.validate_into().expect("valid"))
        })
    });
}

fn key_hashing(c: &mut Criterion) {
    let secret = ApiKeySecret::from_random_bytes([0x42; 32]);
    let header = secret.expose().to_owned();
    c.bench_function("parse and hash an API key", |b| {
        b.iter(|| {
            let parsed = ApiKeySecret::parse(black_box(&header)).expect("well formed");
            black_box(parsed.hash())
        })
    });
}

/// What a request with a known key pays instead of the hash above: its fingerprint and a hit in
/// a cache of 10,000 keys.
fn key_lookup(c: &mut Criterion) {
    let cache = KeyCache::new(Duration::from_secs(3_600), 100_000);
    let secrets: Vec<ApiKeySecret> = (0..KEYS)
        .map(|id| {
            let mut bytes = [0; 32];
            bytes[..8].copy_from_slice(&id.to_le_bytes());
            ApiKeySecret::from_random_bytes(bytes)
        })
        .collect();
    for (id, secret) in (0..).zip(&secrets) {
        let key = ApiKey {
            id,
            display_prefix: secret.display_prefix().to_owned(),
            plan: Plan::Pro,
            label: String::new(),
            custom_limits: None,
            created_at: 0,
            revoked_at: None,
            ban: None,
            scope: petstore_domain::Scope::ReadWrite,
            expires_at: None,
            last_used_at: None,
            previous_secret_until: None,
        };
        let fingerprint = cache.fingerprint(secret.expose().as_bytes());
        cache.put(
            fingerprint,
            Some(ApiClient::new(petstore_domain::KeyMatch::current(key))),
        );
    }
    let header = secrets[KEYS as usize / 2].expose().to_owned();
    c.bench_function("look up a cached API key, 10,000 keys", |b| {
        b.iter(|| {
            let token = black_box(header.as_bytes());
            let fingerprint = cache.fingerprint(token);
            black_box(cache.get(fingerprint).flatten().expect("cached"))
        })
    });
}

fn page_json(c: &mut Criterion) {
    let page: Vec<Pet> = (1..=20)
        .map(|id| Pet {
            id,
            name: format!("pet number {id}"),
            category_id: id % 5 + 1,
            status: PetStatus::Available,
        })
        .collect();
    c.bench_function("serialise a page of 20 pets (serde)", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&page)).expect("serialises")))
    });
    c.bench_function("encode a page of 20 pets (as served)", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(2 + 96 * page.len());
            black_box(&page).encode_json(&mut out).expect("encodes");
            black_box(out)
        })
    });
}

criterion_group!(
    benches,
    limiter,
    validation,
    key_hashing,
    key_lookup,
    page_json
);
criterion_main!(benches);
