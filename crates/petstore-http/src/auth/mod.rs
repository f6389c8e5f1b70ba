//! Bearer API-key authentication: the token of a request ([`bearer_token`]), its lookup in the
//! storage, and a bounded cache of lookups ([`KeyCache`]). It answers who is calling; what the
//! caller may do (rate limits, `401` on resources that need a key) is decided by the
//! middleware that uses it.

mod cache;
mod token;
mod usage;

use std::future::{Ready, ready};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::header::HeaderMap;
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use petstore_domain::{ApiKey, ApiKeySecret, KeyMatch};

pub use cache::{KeyCache, KeyFingerprint};
use metrics::Counter;
pub use token::bearer_token;
pub use usage::Usage;

use crate::db::Database;
use crate::db::storage_call;
use crate::error::ApiError;
use crate::telemetry::metric::{self, Kept};

/// The authenticated caller, put in the request extensions by the admission middleware. A
/// shared handle: the key cache holds the same one, so a request copies no part of the key.
#[derive(Debug, Clone)]
pub struct ApiClient(Arc<KeyMatch>);

impl ApiClient {
    /// The caller with this key, found by one of its secrets.
    pub fn new(found: KeyMatch) -> Self {
        Self(Arc::new(found))
    }

    /// The caller's key.
    pub fn key(&self) -> &ApiKey {
        &self.0.key
    }

    /// Whether the secret the caller presented authenticates at `now` (not expired, not past a
    /// rotation's grace period).
    pub fn is_valid_at(&self, now: u64) -> bool {
        self.0.is_valid_at(i64::try_from(now).unwrap_or(i64::MAX))
    }
}

/// The caller of an operation, as its handler's signature states it: `Caller<Read>` for any
/// valid key, `Caller<Write>` for a read-write key (a read-only key gets `403
/// insufficient_scope`). Whether a resource needs a key at all is declared with the resource
/// (`routes`), since its `401` precedes the `405` of a method it does not serve; every handler
/// of an operation that needs a key takes its `Caller` all the same (listing pets takes a
/// `Caller<Read>` it does not use), so that its signature says who may call it.
#[derive(Debug, Clone)]
pub struct Caller<S: Scope = Read> {
    client: ApiClient,
    scope: PhantomData<S>,
}

impl<S: Scope> Caller<S> {
    /// The caller's key and plan.
    pub fn client(&self) -> &ApiClient {
        &self.client
    }

    /// The caller's key.
    pub fn key(&self) -> &ApiKey {
        self.client.key()
    }
}

/// What an operation may need of its caller's key.
pub trait Scope {
    /// Whether `key` may call the operation.
    fn allows(key: &ApiKey) -> bool;
}

/// Any valid key: reading.
#[derive(Debug, Clone, Copy)]
pub struct Read;

/// A read-write key: creating or changing something.
#[derive(Debug, Clone, Copy)]
pub struct Write;

impl Scope for Read {
    fn allows(_: &ApiKey) -> bool {
        true
    }
}

impl Scope for Write {
    fn allows(key: &ApiKey) -> bool {
        key.scope.may_write()
    }
}

impl<S: Scope> FromRequest for Caller<S> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(match req.extensions().get::<ApiClient>() {
            None => Err(ApiError::Unauthorized {
                presented: bearer_token(req.headers()).is_some(),
            }),
            Some(client) if S::allows(client.key()) => Ok(Self {
                client: client.clone(),
                scope: PhantomData,
            }),
            Some(_) => Err(ApiError::InsufficientScope),
        })
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
    /// When keys' use was last recorded.
    pub usage: Usage,
    /// [`metric::KEY_CACHE_LOOKUPS`], by result.
    lookups: Kept<&'static str, Counter>,
}

impl Authenticator {
    /// Trusts a lookup for `ttl` (zero: never cached), caching at most `capacity` keys.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            cache: KeyCache::new(ttl, capacity),
            usage: Usage::default(),
            lookups: Kept::default(),
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

    /// The cached answer for `credentials`, when the cache has a fresh one: `Some(Some(..))`
    /// for the valid key they name at `now`, `Some(None)` for a token known not to be valid
    /// (malformed, unknown, revoked, expired, or a rotated-out secret past its grace period).
    /// `None`: ask the storage ([`Self::look_up`]). Expiry is checked on every request.
    pub fn cached(&self, credentials: Credentials<'_>, now: u64) -> Option<Option<ApiClient>> {
        let cached = self.cache.get(credentials.fingerprint);
        let result = if cached.is_some() { "hit" } else { "miss" };
        self.lookups
            .get(
                &result,
                || metrics::counter!(metric::KEY_CACHE_LOOKUPS, "result" => result),
            )
            .increment(1);
        cached.map(|found| found.filter(|client| client.is_valid_at(now)))
    }

    /// Whether `credentials` named a key when this instance last looked them up, however long
    /// ago (while the key cache keeps the answer), that is valid at `now` as it was then (not
    /// expired, not a rotated-out secret past its grace): only a real key's holder can present
    /// such credentials. Revocation is the storage's to tell: the lookup that follows.
    pub fn known_valid(&self, credentials: Credentials<'_>, now: u64) -> bool {
        self.cache
            .last_found(credentials.fingerprint)
            .is_some_and(|client| client.is_valid_at(now))
    }

    /// The valid key `credentials` name at `now`, read from the storage (one read per key and
    /// cache period, unknown keys included): for credentials the cache has no answer for.
    pub async fn fetch(
        &self,
        db: &Database,
        credentials: Credentials<'_>,
        now: u64,
    ) -> Result<Option<ApiClient>, ApiError> {
        let found = self.look_up(db, credentials).await?;
        Ok(found.filter(|client| client.is_valid_at(now)))
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
        let found = storage_call!(db, find_active_key(&hash))
            .await?
            .map(ApiClient::new);
        self.cache.put(credentials.fingerprint, found.clone());
        Ok(found)
    }
}
