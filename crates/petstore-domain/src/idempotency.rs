//! Safe retries of writes: the `Idempotency-Key` a client sends with a `POST`, what the service
//! keeps of the first request that used it (a fingerprint, then its response), and the rule by
//! which a request claims a key ([`decide_claim`]), which every storage backend applies.
//!
//! The rules (Stripe's): a key is scoped to the API key that sent it. The first request claims
//! it and runs; its response is stored when it is a success or a client error that the same
//! request would get again, in the same transaction as what it created. A retry of the same
//! request gets that response again; the same key with another request is refused; a retry while
//! the first is still running is told to wait. A server error or a refusal by the rate limiter
//! leaves the key free.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ValidationError;
use crate::secret::push_hex;

/// The longest accepted `Idempotency-Key`, in characters.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// A client's `Idempotency-Key`: 1 to 255 printable ASCII characters. The header's value is a
/// Structured Field string (draft-ietf-httpapi-idempotency-key-header-07, RFC 9651 §3.3.3):
/// `"8e03-..."`, whose quotes are not part of the key, and which may hold spaces and the escapes
/// `\"` and `\\`. The bare form, visible ASCII without spaces and not starting with a quote, is
/// the same key: `8e03-...` and `"8e03-..."` name one record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key the header's `value` names, if it is well formed.
    pub fn parse(value: &[u8]) -> Result<Self, ValidationError> {
        let key = match value {
            [b'"', quoted @ ..] => unquote(quoted)?,
            bare if bare.iter().all(|b| (b'!'..=b'~').contains(b)) => bare.to_vec(),
            _ => {
                return Err(ValidationError::invalid(
                    "Idempotency-Key",
                    "must be a quoted string (`\"...\"`, RFC 9651) or visible ASCII characters \
                     without spaces",
                ));
            }
        };
        if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_LEN {
            return Err(ValidationError::invalid(
                "Idempotency-Key",
                format!("must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} characters long"),
            ));
        }
        // Printable ASCII is UTF-8.
        Ok(Self(String::from_utf8_lossy(&key).into_owned()))
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

/// The characters of a Structured Field string after its opening quote, unescaped: printable
/// ASCII (spaces included), `\"` and `\\` for a quote and a backslash, and nothing after the
/// closing quote.
fn unquote(quoted: &[u8]) -> Result<Vec<u8>, ValidationError> {
    let malformed = |why: &str| {
        ValidationError::invalid(
            "Idempotency-Key",
            format!("is not a valid quoted string (RFC 9651): {why}"),
        )
    };
    let mut key = Vec::with_capacity(quoted.len());
    let mut bytes = quoted.iter();
    loop {
        match bytes.next() {
            None => return Err(malformed("no closing quote")),
            Some(b'"') if bytes.as_slice().is_empty() => return Ok(key),
            Some(b'"') => return Err(malformed("something follows the closing quote")),
            Some(b'\\') => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => key.push(escaped),
                _ => return Err(malformed("a backslash escapes only `\"` and `\\`")),
            },
            Some(&b) if (b' '..=b'~').contains(&b) => key.push(b),
            Some(_) => return Err(malformed("only printable ASCII characters")),
        }
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

/// A resource that a create makes (a pet, an order): answered `201` with its address and its
/// JSON, which is also what a retry of the create with the same `Idempotency-Key` gets.
pub trait Created: Serialize {
    /// The collection it is created in, as a path under the API's base (`/pets`).
    const COLLECTION: &'static str;

    /// Its id, the last segment of its address.
    fn id(&self) -> i64;
}

impl StoredResponse {
    /// The `201` of a create that made `made`: its `Location`, its address under the API's
    /// public `base` (`https://api.example.com/v1` + `/pets/7`), and its JSON. The storage stores
    /// it in the create's own transaction ([`Completion`]), so that neither is kept without the
    /// other. Serialising a resource cannot fail (plain fields); an empty body would show it.
    pub fn created<T: Created>(made: &T, base: &str) -> Self {
        Self {
            status: 201,
            location: Some(format!("{base}{}/{}", T::COLLECTION, made.id())),
            body: serde_json::to_string(made).unwrap_or_default(),
        }
    }
}

/// What a create sent with an `Idempotency-Key` completes in its own transaction: its claim,
/// with the create's answer, [`StoredResponse::created`] of what it made under `base`. Data
/// only: the storage computes the answer itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The claim to complete.
    pub claim: IdempotencyClaim,
    /// The API's public base address as the request named it (`https://api.example.com/v1`).
    pub base: String,
}

/// An idempotency record as the storage holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The fingerprint of the request that claimed the key.
    pub fingerprint: Fingerprint,
    /// When the key was first used, Unix seconds: the record expires `retention` after it.
    pub created_at: i64,
    /// Whether the request that holds it has completed.
    pub state: RecordState,
}

/// Where the request holding an idempotency key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// Claimed at this time (Unix seconds) by a request that has not completed yet.
    InFlight {
        /// When it was claimed (a takeover claims it again).
        claimed_at: i64,
    },
    /// Completed with this response.
    Completed(StoredResponse),
}

/// What a claim request must do, given what the storage holds under its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Claim the key: insert a new record, or replace the one held (it expired, or it is this
    /// same request's claim, abandoned past its lease), with `created_at` as its creation time.
    Claim {
        /// When the record counts as created: now, unless an abandoned claim of the same
        /// request is taken over, which keeps the original time (so it still expires on time).
        created_at: i64,
    },
    /// The same request completed: answer its response again.
    Replay(StoredResponse),
    /// The same request is running (here or on another instance): try again shortly.
    InFlight,
    /// The key was used with a different request.
    Mismatch,
}

/// The claim rule every backend applies: what `request` does with the record held under its
/// key (`None`: no record). A backend loads the record, calls this, and stores the outcome in
/// one step that only one request can win (an insert, or an update conditional on the record
/// it read), so that concurrent claims on any instance agree.
pub fn decide_claim(
    held: Option<&IdempotencyRecord>,
    request: &IdempotentRequest,
) -> ClaimDecision {
    let now = seconds(request.now);
    let Some(held) = held else {
        return ClaimDecision::Claim { created_at: now };
    };
    let expired = held.created_at <= now.saturating_sub(seconds(request.retention));
    if expired {
        return ClaimDecision::Claim { created_at: now };
    }
    if held.fingerprint != request.fingerprint {
        return ClaimDecision::Mismatch;
    }
    match &held.state {
        RecordState::Completed(response) => ClaimDecision::Replay(response.clone()),
        RecordState::InFlight { claimed_at }
            if *claimed_at <= now.saturating_sub(seconds(request.lease)) =>
        {
            ClaimDecision::Claim {
                created_at: held.created_at,
            }
        }
        RecordState::InFlight { .. } => ClaimDecision::InFlight,
    }
}

/// Unix seconds as stored (`i64`), saturating.
fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
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
    fn a_quoted_key_is_a_structured_field_string_and_the_same_key_as_its_bare_form() {
        let parse = |value: &str| IdempotencyKey::parse(value.as_bytes()).map(|k| k.0);
        assert_eq!(parse("\"8e03-978e\""), parse("8e03-978e"));
        assert_eq!(parse("\"8e03-978e\""), Ok("8e03-978e".to_owned()));
        assert_eq!(parse("\"has space\""), Ok("has space".to_owned()));
        assert_eq!(parse(r#""a\"b\\c""#), Ok(r#"a"b\c"#.to_owned()));
        assert_eq!(
            parse(&format!("\"{}\"", "k".repeat(255))).map(|k| k.len()),
            Ok(255)
        );
        // A bare key keeps every character it could always have, a quote inside included.
        assert_eq!(parse("a\"b"), Ok("a\"b".to_owned()));
        for bad in [
            "\"\"",
            "\"open",
            "\"a\"b",
            "\"a\";param=1",
            r#""a\nb""#,
            "\"tab\t\"",
            "\"caf\u{e9}\"",
            &format!("\"{}\"", "k".repeat(256)),
        ] {
            let error = parse(bad).expect_err(bad);
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

    fn request(fingerprint: &Fingerprint, now: u64) -> IdempotentRequest {
        IdempotentRequest {
            owner: 1,
            key: IdempotencyKey::parse(b"k").expect("key"),
            fingerprint: fingerprint.clone(),
            now,
            retention: 86_400,
            lease: 60,
        }
    }

    /// Every kind of record a key can hold, against the decision the rules give.
    #[test]
    fn the_claim_decision_follows_the_rules() {
        let mine = Fingerprint::of("POST", "/v1/pets", b"{}");
        let other = Fingerprint::of("POST", "/v1/pets", b"[]");
        let response = StoredResponse {
            status: 201,
            location: None,
            body: "{}".into(),
        };
        let now = 1_000_000;
        let record =
            |fingerprint: &Fingerprint, created_at: i64, state: RecordState| IdempotencyRecord {
                fingerprint: fingerprint.clone(),
                created_at,
                state,
            };
        let running = |claimed_at| RecordState::InFlight { claimed_at };
        let done = RecordState::Completed(response.clone());
        let fresh = now as i64 - 10;
        let stale = now as i64 - 86_400;
        let cases = [
            (
                "no record",
                None,
                ClaimDecision::Claim {
                    created_at: now as i64,
                },
            ),
            (
                "completed",
                Some(record(&mine, fresh, done.clone())),
                ClaimDecision::Replay(response.clone()),
            ),
            (
                "running",
                Some(record(&mine, fresh, running(fresh))),
                ClaimDecision::InFlight,
            ),
            (
                "abandoned: taken over, keeping its age",
                Some(record(&mine, fresh - 60, running(fresh - 50))),
                ClaimDecision::Claim {
                    created_at: fresh - 60,
                },
            ),
            (
                "another request's, running",
                Some(record(&other, fresh, running(fresh))),
                ClaimDecision::Mismatch,
            ),
            (
                "another request's, abandoned",
                Some(record(&other, fresh - 60, running(fresh - 60))),
                ClaimDecision::Mismatch,
            ),
            (
                "another request's, completed",
                Some(record(&other, fresh, done.clone())),
                ClaimDecision::Mismatch,
            ),
            (
                "expired",
                Some(record(&other, stale, done.clone())),
                ClaimDecision::Claim {
                    created_at: now as i64,
                },
            ),
            (
                "expired while running",
                Some(record(&mine, stale, running(fresh))),
                ClaimDecision::Claim {
                    created_at: now as i64,
                },
            ),
        ];
        for (case, held, expected) in cases {
            assert_eq!(
                decide_claim(held.as_ref(), &request(&mine, now)),
                expected,
                "{case}"
            );
        }
    }
}
