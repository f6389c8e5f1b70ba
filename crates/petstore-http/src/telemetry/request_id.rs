//! Request ids: the one a proxy sent in `X-Request-Id` when it is well formed, else a new
//! UUIDv7 (time-ordered, so ids sort by arrival); and the W3C `traceparent` logged beside it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

/// `X-Request-Id`, on every response.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// W3C Trace Context's `traceparent`.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// The longest incoming id kept: room for the usual forms (a UUID is 36 characters, nginx's
/// `$request_id` 32, a ULID 26), none for a secret (an API key is 68: a client that sends its
/// key as its request id must not see it logged).
pub const MAX_LEN: usize = 40;

/// A request's id, as it goes out in `X-Request-Id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(HeaderValue);

impl RequestId {
    /// The id of a request with `headers`: its `X-Request-Id` when there is exactly one and it
    /// is 1 to [`MAX_LEN`] letters, digits, `-`, `_`, `.`, `:`, `+`, `/` or `=` (so a proxy's
    /// id follows the request, and no secret can ride in it), else a new UUIDv7.
    pub fn of(headers: &HeaderMap) -> Self {
        let mut sent = headers.get_all(X_REQUEST_ID);
        match (sent.next(), sent.next()) {
            (Some(value), None) if is_well_formed(value.as_bytes()) => Self(value.clone()),
            _ => Self::generate(),
        }
    }

    /// A new id: a UUIDv7 in its hyphenated form (RFC 9562, with a counter: the Unix time in
    /// milliseconds, a 12-bit counter that keeps ids made in the same millisecond in order,
    /// 62 random bits). The random bits come from a fast generator seeded once per thread, not
    /// from the kernel: `uuid`'s own `now_v7` asks the kernel for them on every call, a system
    /// call per request. An id must be unique and ordered, not unguessable.
    pub fn generate() -> Self {
        let (millis, counter) = next_stamp();
        let mut rand = [0; 10];
        rand[..2].copy_from_slice(&counter.to_be_bytes());
        rand[2..].copy_from_slice(&fastrand::u64(..).to_be_bytes());
        // The builder sets the version over the counter's top 4 bits (which are zero).
        let id = uuid::Builder::from_unix_timestamp_millis(millis, &rand).into_uuid();
        let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
        let text = id.hyphenated().encode_lower(&mut text);
        Self(
            HeaderValue::from_str(text)
                .expect("BUG: a hyphenated UUID is ASCII, a valid header value"),
        )
    }

    /// The header value.
    pub fn header_value(&self) -> HeaderValue {
        self.0.clone()
    }

    /// The id as text (always visible ASCII).
    pub fn as_str(&self) -> &str {
        // Both sources are visible ASCII: checked on the way in, or a UUID.
        self.0.to_str().unwrap_or_default()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The last id's time and counter, as `millis << 12 | counter`: ids made in the same millisecond
/// (on any thread) take the next counter, and one past 4,095 borrows the next millisecond.
static LAST_STAMP: AtomicU64 = AtomicU64::new(0);

/// The time (Unix milliseconds) and counter of a new id: never before the last id's.
fn next_stamp() -> (u64, u16) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(0))
        << 12;
    let stamp = match LAST_STAMP.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
        Some(now.max(last + 1))
    }) {
        Ok(last) | Err(last) => now.max(last + 1),
    };
    (stamp >> 12, (stamp & 0xfff) as u16)
}

/// 1 to [`MAX_LEN`] letters, digits, `-`, `_`, `.`, `:` or base64's `+`, `/` and `=` (no
/// spaces, no controls, no percent escapes: at most 240 bits of anything, where a key's secret
/// is 256).
fn is_well_formed(id: &[u8]) -> bool {
    (1..=MAX_LEN).contains(&id.len())
        && id.iter().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'+' | b'/' | b'=')
        })
}

/// The request's `traceparent` when there is exactly one and it has the W3C form
/// (`version-trace_id-parent_id-flags` in lowercase hex, ids not all zero); anything else is
/// not logged.
pub fn traceparent(headers: &HeaderMap) -> Option<&str> {
    let mut sent = headers.get_all(TRACEPARENT);
    let (Some(value), None) = (sent.next(), sent.next()) else {
        return None;
    };
    let text = value.to_str().ok()?;
    is_traceparent(text).then_some(text)
}

fn is_traceparent(text: &str) -> bool {
    let hex = |part: &str, len: usize| {
        part.len() == len && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let not_zero = |part: &str| part.bytes().any(|b| b != b'0');
    let mut parts = text.split('-');
    let (Some(version), Some(trace), Some(parent), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let shape = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && not_zero(trace)
        && hex(parent, 16)
        && not_zero(parent)
        && hex(flags, 2);
    // Version 00 has exactly four parts; later versions may append more.
    shape && (version != "00" || parts.next().is_none()) && text.len() <= 512
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_static(name),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    #[test]
    fn a_well_formed_incoming_id_is_kept() {
        let id = "req-1234_abc.DEF:9";
        assert_eq!(
            RequestId::of(&headers(&[("x-request-id", id)])).as_str(),
            id
        );
        let longest = "a".repeat(MAX_LEN);
        assert_eq!(
            RequestId::of(&headers(&[("x-request-id", &longest)])).as_str(),
            longest
        );
    }

    #[test]
    fn anything_else_gets_a_new_uuid_v7() {
        for sent in [
            vec![],
            vec![("x-request-id", "")],
            vec![("x-request-id", "has space")],
            vec![("x-request-id", "tab\there")],
            vec![("x-request-id", &*"a".repeat(MAX_LEN + 1))],
            vec![("x-request-id", "with%20escape")],
            vec![("x-request-id", "req~1!")],
            // A key sent as the request id is not kept (nor logged).
            vec![("x-request-id", &*format!("pst_{}", "ab12".repeat(16)))],
            vec![("x-request-id", &*"ab12".repeat(16))],
            vec![("x-request-id", "one"), ("x-request-id", "two")],
        ] {
            let id = RequestId::of(&headers(&sent));
            let parsed = uuid::Uuid::parse_str(id.as_str()).expect("a UUID");
            assert_eq!(parsed.get_version_num(), 7, "{sent:?}");
        }
        let bytes = HeaderValue::from_bytes(b"caf\xc3\xa9").expect("value");
        let mut map = HeaderMap::new();
        map.insert(X_REQUEST_ID, bytes);
        assert_ne!(RequestId::of(&map).as_str(), "café");
    }

    #[test]
    fn generated_ids_are_time_ordered() {
        let ids: Vec<String> = (0..1000)
            .map(|_| RequestId::generate().as_str().to_owned())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn generated_ids_are_distinct_across_threads_and_ordered_on_each() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    (0..10_000)
                        .map(|_| RequestId::generate().as_str().to_owned())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            let ids = thread.join().expect("thread");
            assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "in order");
            for id in ids {
                let parsed = uuid::Uuid::parse_str(&id).expect("a UUID");
                assert_eq!(parsed.get_version_num(), 7);
                assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
                assert!(all.insert(id), "distinct");
            }
        }
    }

    #[test]
    fn only_w3c_traceparents_are_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(traceparent(&headers(&[("traceparent", good)])), Some(good));
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert_eq!(
            traceparent(&headers(&[("traceparent", future)])),
            Some(future)
        );
        for bad in [
            "",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "hello world",
        ] {
            assert_eq!(
                traceparent(&headers(&[("traceparent", bad)])),
                None,
                "{bad}"
            );
        }
        assert_eq!(
            traceparent(&headers(&[("traceparent", good), ("traceparent", good)])),
            None
        );
    }
}
