//! Secrets kept out of what the service shows: [`redacted_url`], a connection URL (a
//! database's, a cache's) as it may be shown in a log line, an error or a metric's label,
//! without any password that any of the drivers would read in it; [`redact_keys`], a text (a
//! log line, a request's path) without anything shaped like an API key or an admin token.

mod keys;

pub use keys::redact_keys;

/// Query parameter names (matched once percent-decoded, any case) whose value is a secret:
/// tokio-postgres reads `password`; redis reads `pass` (its socket URLs); the others are
/// spellings other clients accept, redacted in case one is given.
const SECRET_PARAMETERS: [&str; 5] = ["password", "pass", "passwd", "pwd", "sslpassword"];

/// What stands in for a secret.
const HIDDEN: &str = "***";

/// `text` (a `postgres://`, `mysql://`, `redis://`... URL, or a file path) with every password
/// replaced by `***`, however the URL is written. The drivers disagree on where the
/// credentials end (tokio-postgres reads them up to the first `@`, even past a `/` or `?`; the
/// URL standard's parser, which mysql_async and redis use, up to the last `@` before the path;
/// this service's cluster URLs up to the last `@` of all), and they decode parameter names
/// (`pass%77ord` is `password`). So this redacts what any of them could read as a password:
///
/// - from the first `:` after the scheme's `//` to the last `@` of the text, when that `:`
///   comes before it (the user name before it stays);
/// - the value of every query parameter (after the first `?`) whose name, percent-decoded
///   (`+` as a space), is `password`, `pass`, `passwd`, `pwd` or `sslpassword`, in any case.
///
/// A text without `://` that holds an `@` (a URL mistyped, `postgres:/u:pw@h/db`) is not shown
/// at all. What is kept is written as it came.
pub fn redacted_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|at| at + 3) else {
        return if text.contains('@') {
            "(not shown: it holds `@`, as credentials do)".to_owned()
        } else {
            text.to_owned()
        };
    };
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    if let Some(at) = text[scheme_end..].rfind('@').map(|at| scheme_end + at)
        && let Some(colon) = text[scheme_end..at].find(':').map(|c| scheme_end + c)
    {
        hidden.push((colon + 1, at));
    }
    if let Some(query) = text[scheme_end..].find('?').map(|q| scheme_end + q + 1) {
        let mut start = query;
        for pair in text[query..].split('&') {
            let end = start + pair.len();
            if let Some((name, _)) = pair.split_once('=')
                && is_secret_name(name)
            {
                hidden.push((start + name.len() + 1, end));
            }
            start = end + 1;
        }
    }
    hidden.sort_unstable();
    let mut shown = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in hidden {
        if end <= copied {
            continue;
        }
        let start = start.max(copied);
        shown.push_str(&text[copied..start]);
        shown.push_str(HIDDEN);
        copied = end;
    }
    shown.push_str(&text[copied..]);
    shown
}

/// Whether a query parameter's name, as written, names a password once decoded (percent
/// escapes, and `+` as a space, as the URL standard's form decoding reads it).
fn is_secret_name(name: &str) -> bool {
    let decoded: String = url::form_urlencoded::parse(name.as_bytes())
        .next()
        .map(|(name, _)| name.into_owned())
        .unwrap_or_default();
    SECRET_PARAMETERS
        .iter()
        .any(|secret| decoded.trim().eq_ignore_ascii_case(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_password_is_shown_however_the_url_is_written() {
        for (url, shown) in [
            (
                "postgres://app:s3cr%40t@db:5432/pets?sslmode=require",
                "postgres://app:***@db:5432/pets?sslmode=require",
            ),
            (
                "postgresql://app@db/pets?password=hunter2&sslmode=disable",
                "postgresql://app@db/pets?password=***&sslmode=disable",
            ),
            ("postgres://db/pets", "postgres://db/pets"),
            // tokio-postgres reads the credentials up to the first `@`, past a `?` or `/`.
            ("postgres://u:pw?x@host/db", "postgres://u:***@host/db"),
            ("postgres://u:se/cret@host/db", "postgres://u:***@host/db"),
            // Parameter names are decoded, as the drivers decode them.
            (
                "postgres://u@host/db?pass%77ord=pw&application_name=x",
                "postgres://u@host/db?pass%77ord=***&application_name=x",
            ),
            (
                "postgres://u@h/db?PASSWORD=pw",
                "postgres://u@h/db?PASSWORD=***",
            ),
            (
                "postgres://h/db?password=x@y",
                "postgres://h/db?password=***",
            ),
            // Several hosts; MariaDB; Redis, one server or a cluster.
            (
                "postgres://u:pw@a:5432,b:5433/db?target_session_attrs=read-write",
                "postgres://u:***@a:5432,b:5433/db?target_session_attrs=read-write",
            ),
            (
                "mysql://root:pw@127.0.0.1:3306/x",
                "mysql://root:***@127.0.0.1:3306/x",
            ),
            ("mariadb://u:p@ss@h/x", "mariadb://u:***@h/x"),
            ("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0"),
            (
                "rediss://app:s3cret@cache:6380",
                "rediss://app:***@cache:6380",
            ),
            (
                "redis+cluster://app:s3cret@a:7000,b:7001",
                "redis+cluster://app:***@a:7000,b:7001",
            ),
            (
                "redis+unix:///run/redis.sock?pass=pw",
                "redis+unix:///run/redis.sock?pass=***",
            ),
            ("redis://cache:6379", "redis://cache:6379"),
            // No `://`: a path is shown; a mistyped URL with credentials is not.
            ("data/petstore.db", "data/petstore.db"),
            (
                "postgres:/app:pw@h/x",
                "(not shown: it holds `@`, as credentials do)",
            ),
            (
                "redis:/:pw@h",
                "(not shown: it holds `@`, as credentials do)",
            ),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
    }
}
