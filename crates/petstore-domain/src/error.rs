//! The domain's two error types: an input that breaks a rule ([`ValidationError`]), and a
//! storage call that failed ([`StorageError`], whatever the backend); and [`Chain`], how any
//! error is shown in a log line, with its causes.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

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

    /// Checks the free text of `field`: at most `max` characters (else `too_long`), and no
    /// control characters.
    pub(crate) fn check_text(
        field: &'static str,
        text: &str,
        max: usize,
        too_long: &'static str,
    ) -> Result<(), Self> {
        if text.chars().count() > max {
            return Err(Self::invalid(field, too_long));
        }
        if text.chars().any(char::is_control) {
            return Err(Self::invalid(field, "must not contain control characters"));
        }
        Ok(())
    }
}

/// What a failed storage call means to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageErrorKind {
    /// The backend cannot answer now (unreachable, lost connection, timed out, busy): a retry
    /// later may succeed.
    Unavailable,
    /// The backend has no room left for writes (a full disk): reads still work, and writes will
    /// again once space is freed.
    Full,
    /// Anything else: a fault that a retry will not fix (a rejected statement, a corrupt row).
    Failed,
}

impl fmt::Display for StorageErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unavailable => "storage unavailable",
            Self::Full => "storage full",
            Self::Failed => "storage failed",
        })
    }
}

/// A failed storage call: its [`StorageErrorKind`] and the backend's own error as the source.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct StorageError {
    kind: StorageErrorKind,
    #[source]
    source: Box<dyn Error + Send + Sync>,
}

impl StorageError {
    /// A failure of `kind` caused by `source` (the backend's error).
    pub fn new(kind: StorageErrorKind, source: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self {
            kind,
            source: source.into(),
        }
    }

    /// What the failure means to the caller.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// The backend's error, for a caller that knows the backend (its tests, say).
    pub fn backend_error(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.source
    }
}

/// Displays an error and every error in its `source` chain, `outer: inner: innermost`, so that
/// a log line says what failed all the way down.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    /// Each cause after the error, `: `-separated; a cause whose words are there already (many
    /// errors repeat their source's text in their own) is left out, so nothing reads twice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = self.0.to_string();
        let mut source = self.0.source();
        while let Some(error) = source {
            let cause = error.to_string();
            if !text.contains(&cause) {
                text.push_str(": ");
                text.push_str(&cause);
            }
            source = error.source();
        }
        f.write_str(&text)
    }
}
