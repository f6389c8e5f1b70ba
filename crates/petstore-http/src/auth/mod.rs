//! Bearer API-key authentication: the token of a request ([`bearer_token`]), its lookup in the
//! storage, and a bounded cache of lookups ([`KeyCache`]). It answers who is calling; what the
//! caller may do (rate limits, `401` on resources that need a key) is decided by the
//! middleware that uses it.

mod cache;
mod token;

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::HeaderMap;
use petstore_domain::{ApiKey, ApiKeySecret};

pub use cache::{KeyCache, KeyFingerprint};
pub use token::bearer_token;

use crate::db::Database;
use crate::error::ApiError;
use crate::telemetry::metric;

/// The authenticated caller, put in the request extensions by the admission middleware. A
/// shared handle: the key cache holds the same one, so a request copies no part of the key.
#[derive(Debug, Clone)]
pub struct ApiClient(Arc<ApiKey>);

impl ApiClient {
    /// The caller with this key.
    pub fn new(key: ApiKey) -> Self {
        Self(Arc::new(key))
    }

    /// The caller's key.
    pub fn key(&self) -> &ApiKey {
        &self.0
    }
}

/// A bearer token as presented, with the fingerprint its lookups are cached under.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    token: &'a [u8],
    fingerprint: KeyFingerprint,
}

/// Finds the key a request presents: in the cache, else in the storage.
#[derive(Debug)]
pub struct Authenticator {
    cache: KeyCache,
}

impl Authenticator {
    /// Trusts a lookup for `ttl` (zero: never cached), caching at most `capacity` keys.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            cache: KeyCache::new(ttl, capacity),
        }
    }

    /// The bearer token of `headers`, if there is exactly one.
    pub fn credentials<'a>(&self, headers: &'a HeaderMap) -> Option<Credentials<'a>> {
        let token = bearer_token(headers)?;
        Some(Credentials {
            token,
            fingerprint: self.cache.fingerprint(token),
        })
    }

    /// The valid key `credentials` name, if any (`None` for a malformed, unknown or revoked
    /// one): from the cache when it has a fresh answer, else from the storage (one read per key
    /// and cache period, unknown keys included).
    pub async fn authenticate(
        &self,
        db: &Database,
        credentials: Credentials<'_>,
    ) -> Result<Option<ApiClient>, ApiError> {
        match self.cache.get(credentials.fingerprint) {
            Some(known) => {
                metrics::counter!(metric::KEY_CACHE_LOOKUPS, "result" => "hit").increment(1);
                Ok(known)
            }
            None => {
                metrics::counter!(metric::KEY_CACHE_LOOKUPS, "result" => "miss").increment(1);
                self.look_up(db, credentials).await
            }
        }
    }

    /// Reads the key from the storage, bypassing the cache, and caches the answer (after a
    /// write to the key, such as a ban).
    pub async fn look_up(
        &self,
        db: &Database,
        credentials: Credentials<'_>,
    ) -> Result<Option<ApiClient>, ApiError> {
        // A token that is not even shaped like a key is not worth a query, nor a cache entry.
        let secret = std::str::from_utf8(credentials.token)
            .ok()
            .and_then(ApiKeySecret::parse);
        let Some(hash) = secret.map(|secret| secret.hash()) else {
            return Ok(None);
        };
        let found = db
            .read("find_active_key", move |storage| {
                storage.find_active_key(&hash)
            })
            .await?
            .map(ApiClient::new);
        self.cache.put(credentials.fingerprint, found.clone());
        Ok(found)
    }
}
