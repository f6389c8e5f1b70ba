//! A bounded cache of key lookups, so that a busy key costs one database query per cache
//! period, not one per request.

use std::fmt;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;

use super::ApiClient;

/// What the key cache files a token's lookup under, and all it compares: the token's keyed
/// BLAKE3 hash, 256 bits, keyed at random when the cache is built. A hit therefore means the
/// presented token has the same 256-bit cryptographic hash as the one looked up (as strong a
/// check as comparing SHA-256s), which no one outside the process can compute or aim a
/// collision at, and which does not reveal the secret. One hash per request, a fraction of the
/// cost of the key's SHA-256 (the stored hash), which a request pays only on a cache miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyFingerprint([u8; 32]);

/// Recent key lookups, positive and negative, each trusted for `ttl`. Revoking a key therefore
/// takes effect on every instance within `ttl`.
///
/// Valid keys and tokens known not to be valid are kept apart, each at most `capacity`: anyone
/// can make up well-formed tokens, and a flood of them must not push valid keys out (each of
/// those would cost a database read again). Each side is a bounded cache that evicts (S3-FIFO:
/// entries seen once go before entries in use), so a full side loses its least useful entries,
/// not all of them. Fingerprints are keyed hashes already, which no one outside the process
/// can aim: the caches hash them with a fast hash rather than a second SipHash.
pub struct KeyCache {
    ttl: Duration,
    /// The fingerprints' key, random, never out of the process.
    secret: [u8; 32],
    /// `None`: caching is off (a zero TTL or capacity).
    sides: Option<Sides>,
}

struct Sides {
    valid: Cache<KeyFingerprint, (ApiClient, Instant)>,
    invalid: Cache<KeyFingerprint, Instant>,
}

impl fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl KeyCache {
    /// A cache trusting lookups for `ttl` (zero disables it), holding at most `capacity` valid
    /// keys and as many invalid tokens.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        let mut secret = [0u8; 32];
        if getrandom::fill(&mut secret).is_err() {
            // Without the operating system's random source, the standard library's randomly
            // keyed hasher (128 bits of key) stands in: unpredictable from outside all the same.
            let seeds = std::hash::RandomState::new();
            for (word, chunk) in secret.chunks_exact_mut(8).enumerate() {
                chunk.copy_from_slice(&seeds.hash_one(word).to_le_bytes());
            }
        }
        Self {
            ttl,
            secret,
            sides: (!ttl.is_zero() && capacity > 0).then(|| Sides {
                valid: Cache::new(capacity),
                invalid: Cache::new(capacity),
            }),
        }
    }

    /// The fingerprint of a presented key, under which its lookups are cached.
    pub fn fingerprint(&self, token: &[u8]) -> KeyFingerprint {
        KeyFingerprint(*blake3::keyed_hash(&self.secret, token).as_bytes())
    }

    /// The cached answer for the token whose fingerprint is `fingerprint`: `Some(None)` means
    /// "known not to be a valid key".
    pub fn get(&self, fingerprint: KeyFingerprint) -> Option<Option<ApiClient>> {
        let sides = self.sides.as_ref()?;
        if let Some((client, fetched)) = sides.valid.get(&fingerprint) {
            return (fetched.elapsed() < self.ttl).then_some(Some(client));
        }
        let fetched = sides.invalid.get(&fingerprint)?;
        (fetched.elapsed() < self.ttl).then_some(None)
    }

    /// The key the token whose fingerprint is `fingerprint` named when it was last looked up,
    /// however long ago: an answer past its TTL stays until the cache needs its room (or a
    /// lookup finds the key gone). Only a key the storage returned gets here, never a made-up
    /// token; whether it is still valid (expiry, a rotated-out secret) is the caller's to ask.
    pub fn last_found(&self, fingerprint: KeyFingerprint) -> Option<ApiClient> {
        let sides = self.sides.as_ref()?;
        sides.valid.peek(&fingerprint).map(|(client, _)| client)
    }

    /// Records the lookup of the token whose fingerprint is `fingerprint`.
    pub fn put(&self, fingerprint: KeyFingerprint, key: Option<ApiClient>) {
        let Some(sides) = &self.sides else {
            return;
        };
        let now = Instant::now();
        match key {
            Some(client) => {
                sides.invalid.remove(&fingerprint);
                sides.valid.insert(fingerprint, (client, now));
            }
            None => {
                sides.valid.remove(&fingerprint);
                sides.invalid.insert(fingerprint, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use petstore_domain::ApiKeySecret;

    #[test]
    fn fingerprints_tell_keys_apart_and_differ_between_caches() {
        let a = ApiKeySecret::from_random_bytes([1; 32]);
        let b = ApiKeySecret::from_random_bytes([2; 32]);
        let cache = KeyCache::new(Duration::from_secs(60), 10);
        assert_eq!(
            cache.fingerprint(a.expose().as_bytes()),
            cache.fingerprint(a.expose().as_bytes())
        );
        assert_ne!(
            cache.fingerprint(a.expose().as_bytes()),
            cache.fingerprint(b.expose().as_bytes())
        );
        // Keyed at random per cache: nothing outside the process can predict them.
        let other = KeyCache::new(Duration::from_secs(60), 10);
        assert_ne!(
            cache.fingerprint(a.expose().as_bytes()),
            other.fingerprint(a.expose().as_bytes())
        );
    }

    #[test]
    fn the_cache_forgets_after_its_ttl_and_stays_bounded() {
        let cache = KeyCache::new(Duration::from_secs(60), 2);
        let fp = |_: &KeyCache, n: u8| ApiKeySecret::from_random_bytes([n; 32]).expose().to_owned();
        put(&cache, fp(&cache, 1), None);
        assert!(matches!(get(&cache, fp(&cache, 1)), Some(None)));
        assert!(get(&cache, fp(&cache, 2)).is_none());
        put(&cache, fp(&cache, 2), None);
        put(&cache, fp(&cache, 3), None);
        assert!(cache.sides.as_ref().expect("on").invalid.len() <= 2);

        let short = KeyCache::new(Duration::from_millis(30), 10);
        put(&short, fp(&short, 1), None);
        assert!(matches!(get(&short, fp(&short, 1)), Some(None)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            get(&short, fp(&short, 1)).is_none(),
            "expired after its TTL"
        );

        // What was valid stays known as such past its TTL, until a lookup says otherwise.
        put(&short, fp(&short, 2), Some(client(2)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            get(&short, fp(&short, 2)).is_none(),
            "expired after its TTL"
        );
        let last_found = |n| short.last_found(short.fingerprint(fp(&short, n).as_bytes()));
        assert!(last_found(2).is_some());
        assert!(last_found(1).is_none());
        put(&short, fp(&short, 2), None);
        assert!(last_found(2).is_none());

        let disabled = KeyCache::new(Duration::ZERO, 10);
        put(&disabled, fp(&disabled, 1), None);
        assert!(get(&disabled, fp(&disabled, 1)).is_none());
    }

    fn client(id: i64) -> ApiClient {
        let key = petstore_domain::ApiKey {
            id,
            display_prefix: "pst_00000000".into(),
            plan: petstore_domain::Plan::Free,
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
        ApiClient::new(petstore_domain::KeyMatch::current(key))
    }

    fn numbered(_: &KeyCache, n: u32) -> String {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&n.to_le_bytes());
        ApiKeySecret::from_random_bytes(bytes).expose().to_owned()
    }

    /// Records `token`'s lookup under its own fingerprint.
    fn put(cache: &KeyCache, token: String, key: Option<ApiClient>) {
        cache.put(cache.fingerprint(token.as_bytes()), key);
    }

    /// Asks for `token` under its own fingerprint.
    fn get(cache: &KeyCache, token: String) -> Option<Option<ApiClient>> {
        cache.get(cache.fingerprint(token.as_bytes()))
    }

    #[test]
    fn a_valid_key_is_answered_only_to_a_token_with_its_whole_256_bit_fingerprint() {
        let cache = KeyCache::new(Duration::from_secs(60), 10);
        let (a, b) = (numbered(&cache, 1), numbered(&cache, 2));
        let filed = cache.fingerprint(a.as_bytes());
        cache.put(filed, Some(client(1)));
        assert!(matches!(get(&cache, a), Some(Some(_))));
        assert!(get(&cache, b).is_none());
        // A fingerprint equal to the filed one in its first 128 bits (what the cache used to
        // trust) but not in the rest finds nothing.
        let mut near = filed.0;
        near[31] ^= 1;
        assert!(cache.get(KeyFingerprint(near)).is_none());
        // The fingerprint is the keyed BLAKE3 of the token: 256 bits of it.
        assert_eq!(
            filed.0,
            *blake3::keyed_hash(&cache.secret, numbered(&cache, 1).as_bytes()).as_bytes()
        );
    }

    #[test]
    fn a_flood_of_made_up_tokens_does_not_push_out_valid_keys() {
        let cache = KeyCache::new(Duration::from_secs(60), 100);
        put(&cache, numbered(&cache, 0), Some(client(1)));
        for n in 1..10_000 {
            put(&cache, numbered(&cache, n), None);
        }
        let invalid = cache.sides.as_ref().expect("on").invalid.len();
        assert!(invalid <= 100, "bounded: {invalid}");
        assert!(
            matches!(get(&cache, numbered(&cache, 0)), Some(Some(_))),
            "the valid key stayed"
        );
    }

    #[test]
    fn a_flood_of_distinct_valid_keys_stays_bounded_and_keeps_the_keys_in_use() {
        let cache = KeyCache::new(Duration::from_secs(60), 100);
        put(&cache, numbered(&cache, 0), Some(client(0)));
        for n in 1..10_000 {
            put(&cache, numbered(&cache, n), Some(client(i64::from(n))));
            // The key in use is asked for all along; the flood's keys once each.
            assert!(
                matches!(get(&cache, numbered(&cache, 0)), Some(Some(_))),
                "the key in use was evicted after {n} others"
            );
        }
        let valid = cache.sides.as_ref().expect("on").valid.len();
        assert!(valid <= 100, "bounded: {valid}");
    }
}
