//! What log lines are made of: [`Chain`], an error with its causes, and [`redact_keys`], which
//! every line goes through before it is written.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

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

/// `text` with anything of an API key's form (`pst_` and the letters and digits after it: a key,
/// or part of one, or a mistyped one) replaced by `pst_[redacted]`. A client that puts its key
/// in a query string (`?api_key=pst_...`) or a path must not have it written to the logs.
pub fn redact_keys(text: &str) -> Cow<'_, str> {
    if !text.contains(KEY_PREFIX) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY_PREFIX) {
        let after = &rest[at + KEY_PREFIX.len()..];
        let secret = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        out.push_str(&rest[..at]);
        out.push_str(KEY_PREFIX);
        if secret > 0 {
            out.push_str("[redacted]");
        }
        rest = &after[secret..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

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
        ];
        for (text, expected) in cases {
            assert_eq!(redact_keys(&text), expected, "{text}");
        }
    }
}
