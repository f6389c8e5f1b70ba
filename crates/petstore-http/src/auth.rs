//! Bearer API-key authentication: the middleware, and a bounded cache of key lookups so that
//! a busy key costs one database query per cache period, not one per request.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::HttpMessage;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::middleware::Next;
use petstore_domain::ApiKey;

use crate::ApiError;
use crate::ratelimit::LimitHeaders;

/// The authenticated caller, put in the request extensions by the rate-limit gate. A shared
/// handle: the key cache holds the same one, so a request copies no part of the key.
#[derive(Debug, Clone)]
pub struct ApiClient(Arc<Caller>);

#[derive(Debug)]
struct Caller {
    key: ApiKey,
    limit_headers: LimitHeaders,
}

impl ApiClient {
    /// The caller with this key.
    pub fn new(key: ApiKey) -> Self {
        let limit_headers = LimitHeaders::new(key.limits());
        Self(Arc::new(Caller { key, limit_headers }))
    }

    /// The caller's key.
    pub fn key(&self) -> &ApiKey {
        &self.0.key
    }

    /// The rate-limit header values fixed by the key's limits.
    pub(crate) fn limit_headers(&self) -> &LimitHeaders {
        &self.0.limit_headers
    }
}

/// Rejects with `401` a request for which the rate-limit gate found no valid key. (The gate,
/// which runs first for every request, resolves the key: see `ratelimit::gate`.)
pub async fn require_key(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    if req.extensions().contains::<ApiClient>() {
        Ok(next.call(req).await?.map_into_left_body())
    } else {
        Ok(req
            .error_response(ApiError::Unauthorized)
            .map_into_right_body())
    }
}

/// The token of a single `Authorization: Bearer <token>` header (scheme case-insensitive,
/// RFC 7235), borrowed from the request; anything else is no token at all. Whether the token
/// has the form of a key is checked only when it is looked up: a cached token is a known one.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&[u8]> {
    let mut values = headers.get_all(header::AUTHORIZATION);
    let value = values.next()?.as_bytes();
    if values.next().is_some() {
        return None;
    }
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, mut token) = (&value[..space], &value[space..]);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    while let [b' ', rest @ ..] = token {
        token = rest;
    }
    while let [rest @ .., b' '] = token {
        token = rest;
    }
    (!token.is_empty()).then_some(token)
}

/// What the key cache files a key under: 128 bits of two SipHash functions keyed at random when
/// the cache is built. Computing it costs a small fraction of the key's SHA-256 (the stored
/// hash), which a request therefore only pays on a cache miss; and like that hash it does not
/// reveal the secret, while no one outside the process can aim a collision at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyFingerprint(u64, u64);

/// One cached lookup: the key (`None`: known not to be a valid key) and when it was read.
type CacheEntry = (Option<ApiClient>, Instant);

/// Recent key lookups, positive and negative, each trusted for `ttl`. Revoking a key therefore
/// takes effect on every instance within `ttl`. Bounded: when full, expired entries go first,
/// and if none has expired the cache starts over.
#[derive(Debug)]
pub struct KeyCache {
    ttl: Duration,
    capacity: usize,
    seeds: (RandomState, RandomState),
    entries: Mutex<HashMap<KeyFingerprint, CacheEntry>>,
}

impl KeyCache {
    /// A cache trusting lookups for `ttl` (zero disables it), holding at most `capacity` keys.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            seeds: (RandomState::new(), RandomState::new()),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The fingerprint of a presented key, under which its lookups are cached.
    pub fn fingerprint(&self, token: &[u8]) -> KeyFingerprint {
        KeyFingerprint(self.seeds.0.hash_one(token), self.seeds.1.hash_one(token))
    }

    /// The cached answer for `fingerprint`: `Some(None)` means "known not to be a valid key".
    pub fn get(&self, fingerprint: KeyFingerprint) -> Option<Option<ApiClient>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (key, fetched) = entries.get(&fingerprint)?;
        (fetched.elapsed() < self.ttl).then(|| key.clone())
    }

    /// Records a lookup.
    pub fn put(&self, fingerprint: KeyFingerprint, key: Option<ApiClient>) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity {
            entries.retain(|_, (_, fetched)| fetched.elapsed() < self.ttl);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(fingerprint, (key, Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;
    use petstore_domain::ApiKeySecret;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        map
    }

    #[test]
    fn only_one_bearer_header_carries_a_token() {
        let secret = ApiKeySecret::from_random_bytes([3; 32]);
        let key = secret.expose().to_owned();
        for good in [
            format!("Bearer {key}"),
            format!("bearer  {key}"),
            format!("BEARER {key} "),
        ] {
            assert_eq!(
                bearer_token(&headers(&[&good])),
                Some(key.as_bytes()),
                "{good:?}"
            );
        }
        for bad in [
            String::new(),
            key.to_owned(),
            format!("Basic {key}"),
            format!("Bearer{key}"),
            "Bearer ".to_owned(),
            "Bearer    ".to_owned(),
        ] {
            assert_eq!(bearer_token(&headers(&[&bad])), None, "{bad:?}");
        }
        let twice = format!("Bearer {key}");
        assert_eq!(bearer_token(&headers(&[&twice, &twice])), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

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
        assert!(cache.entries.lock().expect("lock").len() <= 2);

        let short = KeyCache::new(Duration::from_millis(30), 10);
        short.put(fp(&short, 1), None);
        assert!(matches!(short.get(fp(&short, 1)), Some(None)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(short.get(fp(&short, 1)).is_none(), "expired after its TTL");

        let disabled = KeyCache::new(Duration::ZERO, 10);
        disabled.put(fp(&disabled, 1), None);
        assert!(disabled.get(fp(&disabled, 1)).is_none());
    }
}
