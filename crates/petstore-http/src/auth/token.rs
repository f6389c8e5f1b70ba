//! The bearer token of a request.

use actix_web::http::header::{self, HeaderMap};

/// The token of a single `Authorization: Bearer <token>` header (scheme case-insensitive,
/// RFC 7235), borrowed from the request; anything else is no token at all. Whether the token
/// has the form of a key is checked only when it is looked up: a cached token is a known one.
pub fn bearer_token(headers: &HeaderMap) -> Option<&[u8]> {
    let mut values = headers.get_all(header::AUTHORIZATION);
    let value = values.next()?.as_bytes();
    if values.next().is_some() {
        return None;
    }
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, mut token) = (&value[..space], &value[space..]);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    while let [b' ', rest @ ..] = token {
        token = rest;
    }
    while let [rest @ .., b' '] = token {
        token = rest;
    }
    (!token.is_empty()).then_some(token)
}
