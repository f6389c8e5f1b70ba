//! Admin tokens: what an operator's own tooling authenticates with on the admin listener
//! (`/admin/v1`), separate from API keys. A token is `psa_` followed by 64 lowercase hex
//! digits (256 random bits); like a key, only its SHA-256 and a display prefix are stored and
//! the secret is shown once. An API key is never an admin token, nor the reverse: the prefixes
//! differ and the two are stored apart.

use crate::ValidationError;
use crate::key::validate_label;
use crate::secret::secret_kind;

/// What every admin token starts with (`pst_` is an API key's).
pub const ADMIN_TOKEN_PREFIX: &str = "psa_";

/// A stored admin token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminToken {
    /// Stable identifier, used by `petstore admin-tokens revoke ID` and in audit lines.
    pub id: i64,
    /// Who or what holds it, e.g. `billing-sync`.
    pub label: String,
    /// The first characters of the secret, to recognise it in listings.
    pub display_prefix: String,
    /// Creation time, Unix seconds.
    pub created_at: i64,
    /// Revocation time, Unix seconds; a revoked token authenticates nothing.
    pub revoked_at: Option<i64>,
}

/// A validated label for a new admin token (the rules of a key's label).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminTokenSpec {
    label: String,
}

impl AdminTokenSpec {
    /// At most 100 characters, no control characters, and not empty: an audit line names
    /// the token by it.
    pub fn new(label: impl Into<String>) -> Result<Self, ValidationError> {
        let label = label.into();
        if label.trim().is_empty() {
            return Err(ValidationError::invalid(
                "label",
                "must say who holds the token",
            ));
        }
        validate_label(&label)?;
        Ok(Self { label })
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }
}

secret_kind!(
    /// The kind of an admin token's secret.
    AdminTokenKind,
    /// An admin token's secret.
    AdminTokenSecret,
    ADMIN_TOKEN_PREFIX
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiKeySecret;

    #[test]
    fn a_token_is_not_a_key_and_a_key_is_not_a_token() {
        let token = AdminTokenSecret::from_random_bytes([7; 32]);
        assert!(token.expose().starts_with("psa_0707"));
        assert_eq!(AdminTokenSecret::parse(token.expose()), Some(token.clone()));
        assert_eq!(ApiKeySecret::parse(token.expose()), None);
        let key = ApiKeySecret::from_random_bytes([7; 32]);
        assert_eq!(AdminTokenSecret::parse(key.expose()), None);
        assert_ne!(token.hash(), key.hash());
        assert!(!format!("{token:?}").contains(&token.expose()[12..]));
    }

    #[test]
    fn a_token_label_says_who_holds_it() {
        assert!(AdminTokenSpec::new("billing-sync").is_ok());
        assert!(AdminTokenSpec::new("  ").is_err());
        assert!(AdminTokenSpec::new("a\nb").is_err());
        assert!(AdminTokenSpec::new("x".repeat(101)).is_err());
    }
}
