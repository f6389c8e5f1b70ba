//! Bearer API-key authentication: the middleware, and a bounded cache of key lookups so that
//! a busy key costs one database query per cache period, not one per request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::HttpMessage;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::middleware::Next;
use petstore_domain::{ApiKey, ApiKeySecret, KeyHash};

use crate::ApiError;

/// The authenticated caller, put in the request extensions by the rate-limit gate.
#[derive(Debug, Clone)]
pub struct ApiClient {
    /// The caller's key.
    pub key: ApiKey,
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

/// The key of a single well-formed `Authorization: Bearer <key>` header (scheme
/// case-insensitive, RFC 7235); anything else is no key at all.
pub(crate) fn bearer_secret(headers: &HeaderMap) -> Option<ApiKeySecret> {
    let mut values = headers.get_all(header::AUTHORIZATION);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    ApiKeySecret::parse(token.trim_matches(' '))
}

/// Recent key lookups, positive and negative, each trusted for `ttl`. Revoking a key therefore
/// takes effect on every instance within `ttl`. Bounded: when full, expired entries go first,
/// and if none has expired the cache starts over.
#[derive(Debug)]
pub struct KeyCache {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<KeyHash, (Option<ApiKey>, Instant)>>,
}

impl KeyCache {
    /// A cache trusting lookups for `ttl` (zero disables it), holding at most `capacity` keys.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The cached answer for `hash`: `Some(None)` means "known not to be a valid key".
    pub fn get(&self, hash: &KeyHash) -> Option<Option<ApiKey>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (key, fetched) = entries.get(hash)?;
        (fetched.elapsed() < self.ttl).then(|| key.clone())
    }

    /// Records a lookup.
    pub fn put(&self, hash: KeyHash, key: Option<ApiKey>) {
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
        entries.insert(hash, (key, Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

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
    fn only_one_well_formed_bearer_header_carries_a_key() {
        let secret = ApiKeySecret::from_random_bytes([3; 32]);
        let key = secret.expose().to_owned();
        assert_eq!(
            bearer_secret(&headers(&[&format!("Bearer {key}")])),
            Some(secret.clone())
        );
        assert_eq!(
            bearer_secret(&headers(&[&format!("bearer  {key}")])),
            Some(secret)
        );
        for bad in [
            String::new(),
            key.to_owned(),
            format!("Basic {key}"),
            format!("Bearer{key}"),
            "Bearer ".to_owned(),
            format!("Bearer {key}x"),
        ] {
            assert_eq!(bearer_secret(&headers(&[&bad])), None, "{bad:?}");
        }
        let twice = format!("Bearer {key}");
        assert_eq!(bearer_secret(&headers(&[&twice, &twice])), None);
        assert_eq!(bearer_secret(&HeaderMap::new()), None);
    }

    #[test]
    fn the_cache_forgets_after_its_ttl_and_stays_bounded() {
        let hash = |n: u8| ApiKeySecret::from_random_bytes([n; 32]).hash();
        let cache = KeyCache::new(Duration::from_secs(60), 2);
        cache.put(hash(1), None);
        assert_eq!(cache.get(&hash(1)), Some(None));
        assert_eq!(cache.get(&hash(2)), None);
        cache.put(hash(2), None);
        cache.put(hash(3), None);
        assert!(cache.entries.lock().expect("lock").len() <= 2);

        let short = KeyCache::new(Duration::from_millis(30), 10);
        short.put(hash(1), None);
        assert_eq!(short.get(&hash(1)), Some(None));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(short.get(&hash(1)), None, "expired after its TTL");

        let disabled = KeyCache::new(Duration::ZERO, 10);
        disabled.put(hash(1), None);
        assert_eq!(disabled.get(&hash(1)), None);
    }
}
