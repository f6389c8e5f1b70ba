//! Standard Webhooks signatures: `v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`, one
//! per secret (space-separated, while a rotated-out secret's grace lasts).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use petstore_domain::webhook::SigningSecret;
use sha2::Sha256;

/// The signature of one delivery attempt with one secret: `v1,<base64>`.
pub fn sign(secret: &SigningSecret, id: &str, timestamp: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.key())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// `webhook-signature`: the signature with each secret, space-separated.
pub fn signature_header(
    secrets: &[SigningSecret],
    id: &str,
    timestamp: u64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|secret| sign(secret, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's published example (standardwebhooks.com, "Verifying signatures").
    #[test]
    fn signs_as_the_specification_example() {
        let secret =
            SigningSecret::from_stored("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        let signature = sign(
            &secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn one_signature_per_secret() {
        let one = SigningSecret::from_random_bytes([1; 32]);
        let two = SigningSecret::from_random_bytes([2; 32]);
        let header = signature_header(&[one.clone(), two.clone()], "msg_1", 5, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(
            parts,
            [sign(&one, "msg_1", 5, b"{}"), sign(&two, "msg_1", 5, b"{}")]
        );
    }
}
