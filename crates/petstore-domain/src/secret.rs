//! The secrets the service issues, API keys and admin tokens: a kind's prefix followed by 64
//! lowercase hex digits (256 random bits). The service stores only a secret's SHA-256
//! ([`KeyHash`]) and a short display prefix; the secret is shown once, when issued. Generating
//! the random bytes is I/O and happens in the store; everything here is pure.

use std::fmt;
use std::marker::PhantomData;

use sha2::{Digest, Sha256};

/// How many hex digits follow the prefix.
const SECRET_HEX_LEN: usize = 64;
/// How many of them are kept in clear, after the prefix, to tell secrets apart in listings.
pub(crate) const DISPLAY_HEX_LEN: usize = 8;

/// A kind of secret: what its secrets start with, so that a leaked one is recognisable (by
/// secret scanners, say) and one kind is never taken for another. Sealed: the kinds are this
/// crate's ([`ApiKeyKind`](crate::ApiKeyKind), [`AdminTokenKind`](crate::AdminTokenKind)).
pub trait SecretKind: sealed::Sealed {
    /// What every secret of this kind starts with.
    const PREFIX: &'static str;
    /// The secret type's name, in its redacted `Debug` output.
    const NAME: &'static str;
}

pub(crate) mod sealed {
    /// Implemented by this crate's secret kinds only.
    pub trait Sealed {}
}

/// Declares a kind of secret, `$kind` (sealed: only this crate declares kinds), whose secrets
/// start with `$prefix`, and `$secret`, the type of its secrets (named so in their redacted
/// `Debug` output).
macro_rules! secret_kind {
    ($(#[$kind_doc:meta])* $kind:ident, $(#[$secret_doc:meta])* $secret:ident, $prefix:expr) => {
        $(#[$kind_doc])*
        #[derive(Debug)]
        pub enum $kind {}

        impl $crate::secret::sealed::Sealed for $kind {}

        impl $crate::secret::SecretKind for $kind {
            const PREFIX: &'static str = $prefix;
            const NAME: &'static str = stringify!($secret);
        }

        $(#[$secret_doc])*
        pub type $secret = $crate::secret::Secret<$kind>;
    };
}
pub(crate) use secret_kind;

/// A secret of kind `K`. Its `Debug` output is redacted, so that it cannot end up in a log by
/// accident.
pub struct Secret<K> {
    text: String,
    kind: PhantomData<fn() -> K>,
}

impl<K: SecretKind> Secret<K> {
    fn new(text: String) -> Self {
        Self {
            text,
            kind: PhantomData,
        }
    }

    /// Builds a secret from 32 random bytes (the caller supplies the randomness).
    pub fn from_random_bytes(bytes: [u8; 32]) -> Self {
        let mut text = String::with_capacity(K::PREFIX.len() + SECRET_HEX_LEN);
        text.push_str(K::PREFIX);
        push_hex(&mut text, &bytes);
        Self::new(text)
    }

    /// Accepts a well-formed secret of this kind (its prefix and 64 lowercase hex digits), as
    /// a client sends it.
    pub fn parse(candidate: &str) -> Option<Self> {
        let well_formed = candidate.strip_prefix(K::PREFIX).is_some_and(|hex| {
            hex.len() == SECRET_HEX_LEN
                && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        well_formed.then(|| Self::new(candidate.to_owned()))
    }

    /// The hash under which the secret is stored.
    pub fn hash(&self) -> KeyHash {
        let digest = Sha256::digest(self.text.as_bytes());
        let mut hex = String::with_capacity(64);
        push_hex(&mut hex, &digest);
        KeyHash(hex)
    }

    /// The part kept in clear for listings.
    pub fn display_prefix(&self) -> &str {
        &self.text[..K::PREFIX.len() + DISPLAY_HEX_LEN]
    }

    /// The secret itself, to hand to its holder once.
    pub fn expose(&self) -> &str {
        &self.text
    }
}

// By hand rather than derived: a derive would ask the same of the kind, which is only a name.
impl<K> Clone for Secret<K> {
    fn clone(&self) -> Self {
        Self {
            text: self.text.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Secret<K> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<K> Eq for Secret<K> {}

impl<K: SecretKind> fmt::Debug for Secret<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({}…)", K::NAME, self.display_prefix())
    }
}

/// The SHA-256 of a secret (an API key or an admin token), in lowercase hex: what the store
/// keeps and looks up by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyHash(String);

impl KeyHash {
    /// Wraps a hash read back from storage.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Appends `bytes` to `out` in lowercase hex.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0x0f)] as char);
    }
}
