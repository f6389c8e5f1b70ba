//! A delivery attempt's `webhook-signature`: the domain's Standard Webhooks signature
//! (`petstore_domain::webhook::signature`), one per secret (space-separated, while a
//! rotated-out secret's grace lasts).

use petstore_domain::webhook::SigningSecret;
use petstore_domain::webhook::signature;

/// The signature of one delivery attempt with one secret: `v1,<base64>`.
pub fn sign(secret: &SigningSecret, id: &str, timestamp: u64, body: &[u8]) -> String {
    signature(secret.key(), id, &timestamp.to_string(), body)
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
