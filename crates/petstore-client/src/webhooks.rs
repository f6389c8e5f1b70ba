//! Verifying webhook deliveries signed as the Standard Webhooks specification (v1,
//! standardwebhooks.com) says: `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature` (space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`; more
//! than one while a secret is being rotated), with a secret `whsec_` + base64.
//!
//! ```
//! use petstore_client::webhooks::WebhookSecret;
//!
//! let secret = WebhookSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
//! let body = br#"{"test": 2432232314}"#;
//! let signature = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
//! secret.verify_at(
//!     "msg_p5jXN8AQM9LWM0D4loKWxJek",
//!     "1614265330",
//!     &signature,
//!     body,
//!     1614265331,
//! )?;
//! # Ok::<(), petstore_client::webhooks::WebhookError>(())
//! ```

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use petstore_domain::webhook::{signature, signed_by};
use petstore_domain::{Clock, SystemClock};
use reqwest::header::HeaderMap;

/// How far a delivery's timestamp may be from the receiver's clock, either way: five minutes,
/// the specification's default. Older deliveries are refused as replays.
pub const TOLERANCE_SECONDS: u64 = 5 * 60;

/// Why a delivery was refused. Treat every one as "not from the service": answer it with a
/// `4xx` and do not act on its body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The secret is not `whsec_` followed by base64.
    #[error("a webhook secret is `whsec_` followed by base64")]
    InvalidSecret,
    /// A header the specification requires is missing (or not text).
    #[error("the `{0}` header is missing")]
    MissingHeader(&'static str),
    /// `webhook-timestamp` is not a number of seconds.
    #[error("`webhook-timestamp` is not a Unix time in seconds")]
    InvalidTimestamp,
    /// The delivery was signed too long ago (a replay?) or too far in the future.
    #[error("the delivery's timestamp is more than {TOLERANCE_SECONDS} s from now")]
    OutsideTolerance,
    /// No `v1` signature in `webhook-signature` is this secret's of this delivery.
    #[error("no signature matches")]
    NoMatchingSignature,
}

/// A webhook signing secret (`whsec_` + base64), as the sender shares it with the receiver. Its
/// `Debug` output leaves the key out.
#[derive(Clone)]
pub struct WebhookSecret {
    key: Vec<u8>,
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(hidden)")
    }
}

impl WebhookSecret {
    /// Parses `whsec_` + base64 (standard alphabet, padded).
    pub fn parse(text: &str) -> Result<Self, WebhookError> {
        let encoded = text
            .trim()
            .strip_prefix("whsec_")
            .ok_or(WebhookError::InvalidSecret)?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|_| WebhookError::InvalidSecret)?;
        if key.is_empty() {
            return Err(WebhookError::InvalidSecret);
        }
        Ok(Self { key })
    }

    /// The `webhook-signature` value of a delivery (`v1,` + base64): what a sender signing with
    /// this secret sends, for tests of a receiver.
    pub fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        signature(&self.key, id, &timestamp.to_string(), body)
    }

    /// Verifies a delivery: its `webhook-id`, `webhook-timestamp` and `webhook-signature`
    /// values and its body exactly as received (before any parsing), at `now` (Unix seconds).
    /// Each `v1` signature is compared in constant time; other versions are ignored.
    pub fn verify_at(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
        now: u64,
    ) -> Result<(), WebhookError> {
        let sent: u64 = timestamp
            .trim()
            .parse()
            .map_err(|_| WebhookError::InvalidTimestamp)?;
        if sent.abs_diff(now) > TOLERANCE_SECONDS {
            return Err(WebhookError::OutsideTolerance);
        }
        if signed_by(&self.key, id, timestamp.trim(), body, signatures) {
            Ok(())
        } else {
            Err(WebhookError::NoMatchingSignature)
        }
    }

    /// [`Self::verify_at`] now, the three values read from `headers` (an `http` header map, as
    /// hyper, axum and reqwest have).
    pub fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), WebhookError> {
        let header = |name: &'static str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .ok_or(WebhookError::MissingHeader(name))
        };
        let now = SystemClock.unix_seconds();
        self.verify_at(
            header("webhook-id")?,
            header("webhook-timestamp")?,
            header("webhook-signature")?,
            body,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const AT: u64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    /// Computed independently, with Python's `hmac` and `base64` modules:
    /// `base64.b64encode(hmac.new(base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    /// b'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}', "sha256").digest())`.
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret() -> WebhookSecret {
        WebhookSecret::parse(SECRET).expect("a secret")
    }

    #[test]
    fn signatures_are_the_specifications() {
        assert_eq!(secret().sign(ID, AT, BODY), EXPECTED);
        assert_eq!(
            secret().verify_at(ID, "1614265330", EXPECTED, BODY, AT),
            Ok(())
        );
    }

    #[test]
    fn any_of_several_signatures_may_match_and_other_versions_are_ignored() {
        let other = WebhookSecret::parse("whsec_c2VjcmV0LXR3bw==").expect("secret");
        let rotating = format!("v1,bm90LWl0 v2,abc {} {EXPECTED}", other.sign(ID, AT, BODY));
        assert_eq!(
            secret().verify_at(ID, "1614265330", &rotating, BODY, AT),
            Ok(())
        );
        assert_eq!(
            other.verify_at(ID, "1614265330", &rotating, BODY, AT),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_id_or_time_or_a_stale_delivery_is_refused() {
        let secret = secret();
        let refused = |id: &str, at: &str, body: &[u8], now: u64| {
            secret.verify_at(id, at, EXPECTED, body, now)
        };
        assert_eq!(
            refused(ID, "1614265330", br#"{"test": 2432232315}"#, AT),
            Err(WebhookError::NoMatchingSignature)
        );
        assert_eq!(
            refused("msg_other", "1614265330", BODY, AT),
            Err(WebhookError::NoMatchingSignature)
        );
        assert_eq!(
            refused(ID, "1614265331", BODY, AT),
            Err(WebhookError::NoMatchingSignature)
        );
        assert_eq!(
            refused(ID, "1614265330", BODY, AT + TOLERANCE_SECONDS + 1),
            Err(WebhookError::OutsideTolerance)
        );
        assert_eq!(
            refused(ID, "1614265330", BODY, AT - TOLERANCE_SECONDS - 1),
            Err(WebhookError::OutsideTolerance)
        );
        assert_eq!(
            refused(ID, "soon", BODY, AT),
            Err(WebhookError::InvalidTimestamp)
        );
        for garbled in [
            "",
            "v1,",
            "v1,!!!",
            "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ] {
            assert_eq!(
                secret.verify_at(ID, "1614265330", garbled, BODY, AT),
                Err(WebhookError::NoMatchingSignature),
                "{garbled}"
            );
        }
    }

    #[test]
    fn secrets_must_be_whsec_and_base64_and_never_show() {
        for bad in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_",
            "whsec_not base64!",
        ] {
            assert_eq!(
                WebhookSecret::parse(bad).map(|_| ()),
                Err(WebhookError::InvalidSecret),
                "{bad}"
            );
        }
        assert_eq!(format!("{:?}", secret()), "WebhookSecret(hidden)");
    }

    #[test]
    fn headers_are_read_from_a_header_map() {
        let now = SystemClock.unix_seconds();
        let secret = secret();
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", HeaderValue::from_static(ID));
        headers.insert("webhook-timestamp", HeaderValue::from(now));
        let signature = secret.sign(ID, now, BODY);
        headers.insert(
            "webhook-signature",
            HeaderValue::from_str(&signature).expect("ASCII"),
        );
        assert_eq!(secret.verify(&headers, BODY), Ok(()));
        headers.remove("webhook-id");
        assert_eq!(
            secret.verify(&headers, BODY),
            Err(WebhookError::MissingHeader("webhook-id"))
        );
    }
}
