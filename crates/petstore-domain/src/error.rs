//! The one error type of the domain: an input that breaks a rule.

use std::borrow::Cow;

/// Why an input was rejected. Every variant names the offending field or parameter with the
/// name a client sent or should send (`categoryId`, not `category_id`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// A required field is absent.
    #[error("`{0}` is required")]
    MissingField(Cow<'static, str>),
    /// A field is present that the schema does not have (or that a client may not set).
    #[error("`{field}` is not allowed{hint}")]
    UnknownField {
        /// The field as the client sent it.
        field: String,
        /// Extra guidance, starting with `: ` when present.
        hint: &'static str,
    },
    /// A field holds a value of the wrong type or one that breaks a rule.
    #[error("`{field}` {reason}")]
    InvalidField {
        /// The field's wire name.
        field: Cow<'static, str>,
        /// What is wrong, phrased to follow the field name.
        reason: String,
    },
    /// A query parameter the operation does not take.
    #[error("unknown query parameter `{0}`")]
    UnknownParameter(String),
    /// A query parameter with a malformed or out-of-range value.
    #[error("query parameter `{name}` {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong, phrased to follow the parameter name.
        reason: String,
    },
}

impl ValidationError {
    pub(crate) fn invalid(field: impl Into<Cow<'static, str>>, reason: impl Into<String>) -> Self {
        Self::InvalidField {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn parameter(name: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }
}
