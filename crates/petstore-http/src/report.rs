//! What log lines are made of: [`Chain`], an error with its causes, and [`redact_keys`], which
//! every line goes through before it is written.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

use petstore_domain::ADMIN_TOKEN_PREFIX;
use petstore_domain::key::KEY_PREFIX;

/// Displays an error and every error in its `source` chain, `outer: inner: innermost`. The
/// service's logs use it, so that a line says what failed all the way down.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(error) = source {
            write!(f, ": {error}")?;
            source = error.source();
        }
        Ok(())
    }
}

/// `text` with anything of an API key's form (`pst_`, or `pst%5F` as a URL may carry it, and
/// the letters, digits and `%` escapes after it: a key, part of one, or a mistyped one) replaced
/// by `pst_[redacted]`, and the same for an admin token's (`psa_`). A client that puts its key
/// in a query string (`?api_key=pst_...`) or a path must not have it written to the logs.
pub fn redact_keys(text: &str) -> Cow<'_, str> {
    // Every prefix starts with `pst` or `psa`: a line without either (nearly every line) is not
    // copied.
    let bytes = text.as_bytes();
    let suspect = memchr::memchr2_iter(b'p', b'P', bytes).any(|at| {
        bytes.get(at + 1..at + 3).is_some_and(|next| {
            next.eq_ignore_ascii_case(b"st") || next.eq_ignore_ascii_case(b"sa")
        })
    });
    if !suspect {
        return Cow::Borrowed(text);
    }
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &lower[at..];
        let prefix = PREFIXES
            .into_iter()
            .find(|(prefix, _)| rest.starts_with(prefix));
        match prefix {
            Some((prefix, written)) => {
                let start = at + prefix.len();
                let secret = text[start..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '%'))
                    .unwrap_or(text.len() - start);
                out.push_str(written);
                if secret > 0 {
                    out.push_str("[redacted]");
                }
                at = start + secret;
            }
            None => {
                let c = text[at..].chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    Cow::Owned(out)
}

/// The prefixes of secrets, in lower case (matched case-insensitively; `%5f` is an underscore
/// percent-encoded), each with what is written in its place.
const PREFIXES: [(&str, &str); 4] = [
    (KEY_PREFIX, KEY_PREFIX),
    ("pst%5f", KEY_PREFIX),
    (ADMIN_TOKEN_PREFIX, ADMIN_TOKEN_PREFIX),
    ("psa%5f", ADMIN_TOKEN_PREFIX),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_parts_of_keys_are_redacted() {
        let key = format!("pst_{}", "ab12".repeat(16));
        let cases = [
            (
                format!("GET /v1/pets?api_key={key} HTTP/1.1"),
                "GET /v1/pets?api_key=pst_[redacted] HTTP/1.1",
            ),
            (format!("{key}&{key}"), "pst_[redacted]&pst_[redacted]"),
            ("token pst_abc".to_owned(), "token pst_[redacted]"),
            ("no key here".to_owned(), "no key here"),
            ("pst_".to_owned(), "pst_"),
            (
                format!("?k=pst%5F{}&x=1", &key[4..]),
                "?k=pst_[redacted]&x=1",
            ),
            (
                format!("?k=pst_{}%41{}", &key[4..20], &key[20..]),
                "?k=pst_[redacted]",
            ),
            ("PST_ABCD café".to_owned(), "pst_[redacted] café"),
            (
                format!("?t=psa_{} and psa%5F{}", &key[4..], &key[4..]),
                "?t=psa_[redacted] and psa_[redacted]",
            ),
            ("psalm".to_owned(), "psalm"),
        ];
        for (text, expected) in cases {
            assert_eq!(redact_keys(&text), expected, "{text}");
        }
    }
}
