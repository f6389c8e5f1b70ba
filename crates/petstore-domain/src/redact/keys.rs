//! [`redact_keys`], which every log line goes through before it is written, and every path a
//! trace exports.

use std::borrow::Cow;

use crate::admin::ADMIN_TOKEN_PREFIX;
use crate::key::KEY_PREFIX;

/// `text` with every secret that may be in it replaced, so that a client that puts its key in
/// a query string (`?api_key=pst_...`), a path or a header that is logged does not have it
/// written to the logs:
///
/// - anything of an API key's form (`pst_` and the letters and digits after it: a key, part of
///   one, or a mistyped one) becomes `pst_[redacted]`, and the same for an admin token's
///   (`psa_`);
/// - any run of 64 or more hexadecimal digits (a key's secret without its prefix, a token's)
///   becomes `[redacted]`.
///
/// Both are matched on the text percent-decoded (`%70st_`, `p%73t%5F...`, `%61%62...`), since a
/// URL may carry any character escaped; what is kept is written as it came, escapes and all.
pub fn redact_keys(text: &str) -> Cow<'_, str> {
    if !suspect(text.as_bytes()) {
        return Cow::Borrowed(text);
    }
    let decoded = decode(text);
    let mut out = String::with_capacity(text.len());
    // `text[..copied]` is written (or redacted) already.
    let mut copied = 0;
    let mut at = 0;
    while at < decoded.len() {
        let (end, written) = if let Some((prefix, written)) = prefix_at(&decoded[at..]) {
            let secret = decoded[at + prefix..]
                .iter()
                .take_while(|unit| unit.byte.is_ascii_alphanumeric())
                .count();
            let end = at + prefix + secret;
            (end, if secret > 0 { written } else { "" })
        } else {
            let run = decoded[at..]
                .iter()
                .take_while(|unit| unit.byte.is_ascii_hexdigit())
                .count();
            if run < SECRET_HEX_DIGITS {
                at += run.max(1);
                continue;
            }
            (at + run, "[redacted]")
        };
        if written.is_empty() {
            // A bare prefix: nothing after it to hide.
            at = end;
            continue;
        }
        out.push_str(&text[copied..decoded[at].start]);
        out.push_str(written);
        copied = decoded[end - 1].end;
        at = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// A run of this many hexadecimal digits is taken for a secret: a key's random part is 64.
const SECRET_HEX_DIGITS: usize = 64;

/// Whether `bytes` may hold a secret: a secret's prefix (`pst`, `psa`, any case), a percent
/// escape (behind which either may hide), or a run of [`SECRET_HEX_DIGITS`]. Nearly every line
/// holds none, and is not copied.
fn suspect(bytes: &[u8]) -> bool {
    let mut hex_run = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if byte == b'%' {
            return true;
        }
        if byte.is_ascii_hexdigit() {
            hex_run += 1;
            if hex_run >= SECRET_HEX_DIGITS {
                return true;
            }
            continue;
        }
        hex_run = 0;
        if byte.eq_ignore_ascii_case(&b'p')
            && bytes.get(at + 1..at + 3).is_some_and(|next| {
                next.eq_ignore_ascii_case(b"st") || next.eq_ignore_ascii_case(b"sa")
            })
        {
            return true;
        }
    }
    false
}

/// One byte of the decoded text (in lower case), and the bytes of the original it came from.
struct Unit {
    byte: u8,
    start: usize,
    end: usize,
}

/// `text` percent-decoded, byte by byte (`%XX` with two hexadecimal digits is one byte; any
/// other `%` is itself).
fn decode(text: &str) -> Vec<Unit> {
    let bytes = text.as_bytes();
    let mut units = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        let (byte, len) = escaped.map_or((bytes[at], 1), |byte| (byte, 3));
        units.push(Unit {
            byte: byte.to_ascii_lowercase(),
            start: at,
            end: at + len,
        });
        at += len;
    }
    units
}

/// The length of the secret prefix `units` start with, and what is written in place of the
/// prefix and the secret after it.
fn prefix_at(units: &[Unit]) -> Option<(usize, &'static str)> {
    PREFIXES.into_iter().find_map(|(prefix, written)| {
        let matches = units.len() >= prefix.len()
            && units
                .iter()
                .zip(prefix.bytes())
                .all(|(unit, byte)| unit.byte == byte);
        matches.then_some((prefix.len(), written))
    })
}

/// The prefixes of secrets, in lower case (matched case-insensitively, once decoded), each
/// with what is written in place of a secret that has it.
const PREFIXES: [(&str, &str); 2] = [
    (KEY_PREFIX, "pst_[redacted]"),
    (ADMIN_TOKEN_PREFIX, "psa_[redacted]"),
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
            // Escaped letters of the prefix, and the secret's digits escaped.
            (format!("?k=%70st_{}", &key[4..]), "?k=pst_[redacted]"),
            (format!("?k=p%73t_{}", &key[4..]), "?k=pst_[redacted]"),
            (format!("?k=%50%53%54%5f{}", &key[4..]), "?k=pst_[redacted]"),
            (
                format!("?k=pst_%{}{}", "61", &key[5..]),
                "?k=pst_[redacted]",
            ),
            // A key's secret without its prefix, bare or escaped; a shorter run is kept.
            (format!("id={} end", &key[4..]), "id=[redacted] end"),
            (
                format!("x-request-id: {}{}", &key[4..], "cafe"),
                "x-request-id: [redacted]",
            ),
            (
                format!(
                    "?x=%{}",
                    key[4..]
                        .bytes()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join("%")
                ),
                "?x=[redacted]",
            ),
            // What is kept is written as it came.
            (
                "GET /v1/pets?name=a%20b&q=%zz".to_owned(),
                "GET /v1/pets?name=a%20b&q=%zz",
            ),
            (
                "https://example.com/psx".to_owned(),
                "https://example.com/psx",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact_keys(&text), expected, "{text}");
        }
        // 62 hexadecimal digits (a trace id is 32): not a secret's run.
        let short = format!("trace {}", "ab".repeat(31));
        assert_eq!(redact_keys(&short), short);
    }
}
