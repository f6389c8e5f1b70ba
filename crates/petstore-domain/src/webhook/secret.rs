//! The signing secret ([`SigningSecret`]): shown once as `whsec_` + base64, kept and read as
//! base64 of the key (the form the Standard Webhooks specification's examples give too); and how
//! long a rotated-out secret keeps signing ([`grace_until`]).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::ValidationError;

/// How long a rotated-out secret keeps signing when a rotation does not say: a day.
pub const DEFAULT_GRACE_SECONDS: u64 = 24 * 3600;
/// The longest grace a rotation may give: a week.
pub const MAX_GRACE_SECONDS: u64 = 7 * 24 * 3600;

/// Until when (Unix seconds) the secret a rotation at `now` replaces keeps signing, for the
/// grace asked (`None`: [`DEFAULT_GRACE_SECONDS`]; 0: not at all, after a leak); more than
/// [`MAX_GRACE_SECONDS`] is refused, naming `graceSeconds`.
pub fn grace_until(now: i64, asked: Option<u64>) -> Result<i64, ValidationError> {
    let grace = asked.unwrap_or(DEFAULT_GRACE_SECONDS);
    if grace > MAX_GRACE_SECONDS {
        return Err(ValidationError::InvalidField {
            field: "graceSeconds".into(),
            reason: format!("must be at most {MAX_GRACE_SECONDS} (a week)"),
        });
    }
    Ok(now.saturating_add(i64::try_from(grace).unwrap_or(i64::MAX)))
}

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

    #[test]
    fn a_rotation_grants_a_day_by_default_and_at_most_a_week() {
        assert_eq!(grace_until(100, None), Ok(100 + 86_400));
        assert_eq!(grace_until(100, Some(0)), Ok(100));
        assert_eq!(grace_until(100, Some(604_800)), Ok(100 + 604_800));
        let refused = grace_until(100, Some(604_801)).expect_err("over a week");
        assert!(refused.to_string().contains("graceSeconds"), "{refused}");
        assert_eq!(grace_until(i64::MAX, Some(1)), Ok(i64::MAX));
    }
}
