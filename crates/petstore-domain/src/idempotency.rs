//! Safe retries of writes: the `Idempotency-Key` a client sends with a `POST`, what the service
//! keeps of the first request that used it (a fingerprint, then its response), and the storage
//! trait that claims, completes and releases those records, shared by every instance.
//!
//! The rules (Stripe's): a key is scoped to the API key that sent it. The first request claims
//! it and runs; its response is stored when it is a success or a client error that the same
//! request would get again, in the same transaction as what it created. A retry of the same
//! request gets that response again; the same key with another request is refused; a retry while
//! the first is still running is told to wait. A server error or a refusal by the rate limiter
//! leaves the key free.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::key::push_hex;
use crate::{StorageError, ValidationError};

/// The longest accepted `Idempotency-Key`, in characters.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// A client's `Idempotency-Key`: 1 to 255 visible ASCII characters (`!` to `~`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key, if `value` is well formed.
    pub fn parse(value: &[u8]) -> Result<Self, ValidationError> {
        if value.is_empty() || value.len() > MAX_IDEMPOTENCY_KEY_LEN {
            return Err(ValidationError::invalid(
                "Idempotency-Key",
                format!("must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} characters long"),
            ));
        }
        if !value.iter().all(|b| (b'!'..=b'~').contains(b)) {
            return Err(ValidationError::invalid(
                "Idempotency-Key",
                "must be visible ASCII characters only (no spaces)",
            ));
        }
        // Visible ASCII is UTF-8.
        Ok(Self(String::from_utf8_lossy(value).into_owned()))
    }

    /// Wraps a key read back from storage.
    pub fn from_stored(key: String) -> Self {
        Self(key)
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What identifies a request for idempotency: the SHA-256 of its method, path and body, in
/// lowercase hex. The same key sent with another fingerprint is a mistake of the client's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint of a request.
    pub fn of(method: &str, path: &str, body: &[u8]) -> Self {
        let mut hash = Sha256::new();
        // Lengths first, so that no two different requests hash the same bytes.
        for part in [method.as_bytes(), path.as_bytes(), body] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part);
        }
        let mut hex = String::with_capacity(64);
        push_hex(&mut hex, &hash.finalize());
        Self(hex)
    }

    /// Wraps a fingerprint read back from storage.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A request asking to claim its idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotentRequest {
    /// The id of the API key that sent it: the scope of `key`.
    pub owner: i64,
    /// The client's key.
    pub key: IdempotencyKey,
    /// The request's fingerprint.
    pub fingerprint: Fingerprint,
    /// Now, Unix seconds.
    pub now: u64,
    /// Records older than this many seconds are expired: treated as absent, and pruned.
    pub retention: u64,
    /// A claim not completed after this many seconds was abandoned (its process died): another
    /// request may take it over. Longer than any request may run.
    pub lease: u64,
}

/// A claim on an idempotency key, held by the request that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The API key's id.
    pub owner: i64,
    /// The client's key.
    pub key: IdempotencyKey,
    /// Tells this claim from a later one that took over an abandoned claim.
    pub token: i64,
}

/// A response kept for replay: what a retry of the request gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Location` header, when the response had one.
    pub location: Option<String>,
    /// The JSON body.
    pub body: String,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key was free (or its record expired, or its claim was abandoned): run the request.
    Claimed(IdempotencyClaim),
    /// The same request completed before: answer its response again.
    Completed(StoredResponse),
    /// The same request is running now (on this instance or another): try again shortly.
    InFlight,
    /// The key was used with a different request.
    Mismatch,
}

/// Completes a claim with the response to what a write created, inside the write's own
/// transaction, so that neither can be stored without the other.
pub struct Completion<T> {
    /// The claim to complete.
    pub claim: IdempotencyClaim,
    /// The response to store, given what was created (its id, say).
    pub respond: Arc<dyn Fn(&T) -> StoredResponse + Send + Sync>,
}

impl<T> Clone for Completion<T> {
    fn clone(&self) -> Self {
        Self {
            claim: self.claim.clone(),
            respond: self.respond.clone(),
        }
    }
}

impl<T> fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}

/// Idempotency records, shared by every instance.
pub trait IdempotencyRepository {
    /// Claims `request`'s key, or reports what holds it.
    fn claim_idempotency_key(
        &self,
        request: &IdempotentRequest,
    ) -> Result<ClaimOutcome, StorageError>;

    /// Stores the response of a claimed request that wrote nothing (a client error).
    /// Does nothing if the claim was lost.
    fn complete_idempotency_key(
        &self,
        claim: &IdempotencyClaim,
        response: &StoredResponse,
    ) -> Result<(), StorageError>;

    /// Frees a claimed key without a response (the request failed on the server's side), so
    /// that a retry runs again.
    fn release_idempotency_key(&self, claim: &IdempotencyClaim) -> Result<(), StorageError>;

    /// Deletes the records created before `before` (Unix seconds); returns how many.
    fn prune_idempotency_keys(&self, before: u64) -> Result<u64, StorageError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_1_to_255_visible_ascii_characters() {
        for good in ["a", "order-2026-11-23/42", "~!#$%&'*+", &"k".repeat(255)] {
            assert_eq!(
                IdempotencyKey::parse(good.as_bytes()).map(|k| k.0),
                Ok(good.to_owned())
            );
        }
        for bad in [
            &b""[..],
            &b"has space"[..],
            &b"tab\t"[..],
            "caf\u{e9}".as_bytes(),
            "k".repeat(256).as_bytes(),
        ] {
            let error = IdempotencyKey::parse(bad).expect_err("refused");
            assert!(
                error.to_string().starts_with("`Idempotency-Key` "),
                "{error}"
            );
        }
    }

    #[test]
    fn a_fingerprint_tells_requests_apart_and_only_them() {
        let one = Fingerprint::of("POST", "/v1/pets", br#"{"name":"Rex"}"#);
        assert_eq!(
            one,
            Fingerprint::of("POST", "/v1/pets", br#"{"name":"Rex"}"#)
        );
        assert_eq!(one.as_str().len(), 64);
        assert_ne!(
            one,
            Fingerprint::of("POST", "/v1/pets", br#"{"name":"Max"}"#)
        );
        assert_ne!(
            one,
            Fingerprint::of("POST", "/v1/store/orders", br#"{"name":"Rex"}"#)
        );
        // Lengths are hashed: moving bytes from the path to the body changes the fingerprint.
        assert_ne!(
            Fingerprint::of("POST", "/v1/pets", b"x"),
            Fingerprint::of("POST", "/v1/petsx", b"")
        );
    }
}
