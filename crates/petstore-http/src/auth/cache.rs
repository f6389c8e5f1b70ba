//! A bounded cache of key lookups, so that a busy key costs one database query per cache
//! period, not one per request.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::ApiClient;

/// What the key cache files a key under: 128 bits of two SipHash functions keyed at random when
/// the cache is built. Computing it costs a small fraction of the key's SHA-256 (the stored
/// hash), which a request therefore only pays on a cache miss; and like that hash it does not
/// reveal the secret, while no one outside the process can aim a collision at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyFingerprint(u64, u64);

/// Recent key lookups, positive and negative, each trusted for `ttl`. Revoking a key therefore
/// takes effect on every instance within `ttl`.
///
/// Valid keys and tokens known not to be valid are kept apart, each at most `capacity`: anyone
/// can make up well-formed tokens, and a flood of them must not push valid keys out (each of
/// those would cost a database read again). When one side is full, its expired entries go
/// first, and if none has expired that side starts over; the other side is untouched.
#[derive(Debug)]
pub struct KeyCache {
    ttl: Duration,
    capacity: usize,
    seeds: (RandomState, RandomState),
    entries: Mutex<Entries>,
}

/// Fingerprints are keyed hashes already, which no one outside the process can aim: the maps
/// hash them with a fast hash rather than a second SipHash.
type Fingerprints<V> = HashMap<KeyFingerprint, V, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
struct Entries {
    valid: Fingerprints<(ApiClient, Instant)>,
    invalid: Fingerprints<Instant>,
}

impl KeyCache {
    /// A cache trusting lookups for `ttl` (zero disables it), holding at most `capacity` valid
    /// keys and as many invalid tokens.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            seeds: (RandomState::new(), RandomState::new()),
            entries: Mutex::default(),
        }
    }

    /// The fingerprint of a presented key, under which its lookups are cached.
    pub fn fingerprint(&self, token: &[u8]) -> KeyFingerprint {
        KeyFingerprint(self.seeds.0.hash_one(token), self.seeds.1.hash_one(token))
    }

    /// The cached answer for `fingerprint`: `Some(None)` means "known not to be a valid key".
    pub fn get(&self, fingerprint: KeyFingerprint) -> Option<Option<ApiClient>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((client, fetched)) = entries.valid.get(&fingerprint) {
            return (fetched.elapsed() < self.ttl).then(|| Some(client.clone()));
        }
        let fetched = entries.invalid.get(&fingerprint)?;
        (fetched.elapsed() < self.ttl).then_some(None)
    }

    /// Records a lookup.
    pub fn put(&self, fingerprint: KeyFingerprint, key: Option<ApiClient>) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Entries { valid, invalid } = &mut *entries;
        match key {
            Some(client) => {
                invalid.remove(&fingerprint);
                make_room(valid, self.capacity, |(_, fetched)| {
                    fetched.elapsed() < self.ttl
                });
                valid.insert(fingerprint, (client, now));
            }
            None => {
                valid.remove(&fingerprint);
                make_room(invalid, self.capacity, |fetched| {
                    fetched.elapsed() < self.ttl
                });
                invalid.insert(fingerprint, now);
            }
        }
    }
}

/// Keeps `map` under `capacity`: expired entries first, everything if none has expired.
fn make_room<V>(map: &mut Fingerprints<V>, capacity: usize, fresh: impl Fn(&V) -> bool) {
    if map.len() >= capacity {
        map.retain(|_, value| fresh(value));
        if map.len() >= capacity {
            map.clear();
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
        let fp = |cache: &KeyCache, n: u8| {
            cache.fingerprint(ApiKeySecret::from_random_bytes([n; 32]).expose().as_bytes())
        };
        cache.put(fp(&cache, 1), None);
        assert!(matches!(cache.get(fp(&cache, 1)), Some(None)));
        assert!(cache.get(fp(&cache, 2)).is_none());
        cache.put(fp(&cache, 2), None);
        cache.put(fp(&cache, 3), None);
        assert!(cache.entries.lock().expect("lock").invalid.len() <= 2);

        let short = KeyCache::new(Duration::from_millis(30), 10);
        short.put(fp(&short, 1), None);
        assert!(matches!(short.get(fp(&short, 1)), Some(None)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(short.get(fp(&short, 1)).is_none(), "expired after its TTL");

        let disabled = KeyCache::new(Duration::ZERO, 10);
        disabled.put(fp(&disabled, 1), None);
        assert!(disabled.get(fp(&disabled, 1)).is_none());
    }

    #[test]
    fn a_flood_of_made_up_tokens_does_not_push_out_valid_keys() {
        let cache = KeyCache::new(Duration::from_secs(60), 100);
        let fp = |cache: &KeyCache, n: u32| {
            let mut bytes = [0u8; 32];
            bytes[..4].copy_from_slice(&n.to_le_bytes());
            cache.fingerprint(ApiKeySecret::from_random_bytes(bytes).expose().as_bytes())
        };
        let key = petstore_domain::ApiKey {
            id: 1,
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
        cache.put(
            fp(&cache, 0),
            Some(ApiClient::new(petstore_domain::KeyMatch::current(key))),
        );
        for n in 1..10_000 {
            cache.put(fp(&cache, n), None);
        }
        let entries = cache.entries.lock().expect("lock");
        assert!(
            entries.invalid.len() <= 100,
            "bounded: {}",
            entries.invalid.len()
        );
        drop(entries);
        assert!(
            matches!(cache.get(fp(&cache, 0)), Some(Some(_))),
            "the valid key stayed"
        );
    }
}
