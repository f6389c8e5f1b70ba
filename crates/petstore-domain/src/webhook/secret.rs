//! The signing secret ([`SigningSecret`]): shown once as `whsec_` + base64, kept and read as
//! base64 of the key (the form the Standard Webhooks specification's examples give too).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A webhook signing secret: 32 random bytes, shown once as `whsec_` + base64 (standard
/// alphabet, padded), the form Standard Webhooks libraries read. Its `Debug` output leaves the
/// key out.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(Vec<u8>);

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(hidden)")
    }
}

impl SigningSecret {
    /// A secret from random bytes (24 to 64 of them).
    pub fn from_random_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes.to_vec())
    }

    /// The key's bytes, for signing.
    pub fn key(&self) -> &[u8] {
        &self.0
    }

    /// `whsec_` + base64 of the key: how it is shown to the endpoint's owner, once.
    pub fn reveal(&self) -> String {
        format!("whsec_{}", STANDARD.encode(&self.0))
    }

    /// The stored form: base64 of the key (what [`Self::reveal`] shows, without `whsec_`).
    pub fn to_stored(&self) -> String {
        STANDARD.encode(&self.0)
    }

    /// Reads the stored form back (base64 of the key, as the Standard Webhooks specification's
    /// examples give a secret too); `None` if it is not base64 of 24 to 64 bytes.
    pub fn from_stored(stored: &str) -> Option<Self> {
        let key = STANDARD.decode(stored).ok()?;
        (24..=64).contains(&key.len()).then_some(Self(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_show_as_standard_webhooks_secrets() {
        let secret = SigningSecret::from_random_bytes([7; 32]);
        assert!(secret.reveal().starts_with("whsec_"));
        assert_eq!(
            SigningSecret::from_stored(&secret.to_stored()),
            Some(secret.clone())
        );
        assert_eq!(SigningSecret::from_stored("c2hvcnQ="), None);
        assert_eq!(format!("{secret:?}"), "SigningSecret(hidden)");
    }
}
