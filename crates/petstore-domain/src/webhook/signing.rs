//! Standard Webhooks signatures (v1), written once for the service that signs deliveries and
//! the client that verifies them: `v1,` + base64 of HMAC-SHA256, under the secret's key, of
//! `id.timestamp.body` (the `webhook-id` value, the `webhook-timestamp` value as sent, and the
//! body's bytes).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The HMAC of `id.timestamp.body` under `key`.
fn mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .expect("BUG: HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature of a delivery under `key`: `v1,<base64>`.
pub fn signature(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> String {
    let tag = mac(key, id, timestamp, body).finalize().into_bytes();
    format!("v1,{}", STANDARD.encode(tag))
}

/// Whether `signatures` (a `webhook-signature` value: space-separated, other versions than
/// `v1` ignored) holds the signature of the delivery under `key`, each compared in constant
/// time.
pub fn signed_by(key: &[u8], id: &str, timestamp: &str, body: &[u8], signatures: &str) -> bool {
    let expected = mac(key, id, timestamp, body);
    signatures
        .split(' ')
        .filter_map(|signature| signature.strip_prefix("v1,"))
        .filter_map(|encoded| STANDARD.decode(encoded).ok())
        .any(|tag| expected.clone().verify_slice(&tag).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's published example (standardwebhooks.com, "Verifying signatures").
    #[test]
    fn signs_as_the_specification_example() {
        let key = STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .expect("base64");
        let body = br#"{"test": 2432232314}"#;
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let signed = signature(&key, id, "1614265330", body);
        assert_eq!(signed, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(signed_by(
            &key,
            id,
            "1614265330",
            body,
            &format!("v2,x {signed}")
        ));
        assert!(!signed_by(&key, id, "1614265331", body, &signed));
        assert!(!signed_by(b"other", id, "1614265330", body, &signed));
    }
}
