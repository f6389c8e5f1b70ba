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

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;
    use petstore_domain::ApiKeySecret;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        map
    }

    #[test]
    fn only_one_bearer_header_carries_a_token() {
        let secret = ApiKeySecret::from_random_bytes([3; 32]);
        let key = secret.expose().to_owned();
        for good in [
            format!("Bearer {key}"),
            format!("bearer  {key}"),
            format!("BEARER {key} "),
        ] {
            assert_eq!(
                bearer_token(&headers(&[&good])),
                Some(key.as_bytes()),
                "{good:?}"
            );
        }
        for bad in [
            String::new(),
            key.to_owned(),
            format!("Basic {key}"),
            format!("Bearer{key}"),
            "Bearer ".to_owned(),
            "Bearer    ".to_owned(),
        ] {
            assert_eq!(bearer_token(&headers(&[&bad])), None, "{bad:?}");
        }
        let twice = format!("Bearer {key}");
        assert_eq!(bearer_token(&headers(&[&twice, &twice])), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
