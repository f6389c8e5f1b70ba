//! What a resource declares about its callers, once, where it is registered (`routes`): whether
//! it needs a key, how its requests count, and what goes on every answer of its own.
//! Admission enforces it; the scope an operation needs is in its handler's signature
//! ([`Caller<Write>`](crate::auth::Caller)).

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::sunset::{DEPRECATED_AT, SUNSET};

/// A resource's declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Whether a valid key is needed: `401` without one, before anything else the resource
    /// answers (its `405` included).
    pub key_required: bool,
    /// How its requests count against the caller's limits.
    pub counting: Counting,
    /// What it adds to every answer, errors included (its `401` and `405`, and admission's
    /// refusals: `429`, `503`).
    pub marks: Marks,
}

impl Access {
    /// Anyone may call it (the API's description, the docs page, unknown paths); every request
    /// counts, against the key presented or else the client's address.
    pub const OPEN: Self = Self {
        key_required: false,
        counting: Counting::Counted,
        marks: Marks::None,
    };

    /// A valid key is needed; every request counts.
    pub const fn key(marks: Marks) -> Self {
        Self {
            key_required: true,
            counting: Counting::Counted,
            marks,
        }
    }
}

/// How a resource's requests count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Every request spends one of the caller's requests.
    Counted,
    /// The rate-limit status: a key's `GET` or `HEAD` reads the caller's standing without
    /// spending anything (a ban still refuses it); anything else is counted.
    StandingRead,
}

/// What a resource adds to every answer of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marks {
    /// Nothing.
    None,
    /// `Deprecation`, `Sunset`, and a `Link` to the replacement (`GET /pets` with a `status`
    /// filter): `GET /pets/{petId}`.
    Deprecated,
    /// `X-API-Stability: experimental`: the orders area, whose shape may change without a new
    /// version.
    Experimental,
}

const DEPRECATION: HeaderName = HeaderName::from_static("deprecation");
const SUNSET_HEADER: HeaderName = HeaderName::from_static("sunset");
const STABILITY: HeaderName = HeaderName::from_static("x-api-stability");

impl Marks {
    /// Adds the marks to `headers`; `successor` is the `Link` of a deprecated resource.
    pub fn write(self, headers: &mut HeaderMap, successor: Option<HeaderValue>) {
        match self {
            Self::None => {}
            Self::Deprecated => {
                headers.insert(DEPRECATION, HeaderValue::from_static(DEPRECATED_AT));
                headers.insert(SUNSET_HEADER, HeaderValue::from_static(SUNSET));
                if let Some(link) = successor {
                    headers.append(header::LINK, link);
                }
            }
            Self::Experimental => {
                headers.insert(STABILITY, HeaderValue::from_static("experimental"));
            }
        }
    }
}
