//! Conditional `GET`: entity tags (RFC 9110 §8.8.3) and `If-None-Match` (§13.1.2).
//!
//! A representation's tag is a hash of what its body shows: the data, field by field
//! ([`Fingerprint`]), after the version of the JSON format ([`FORMAT`]). The same data gives the same tag on
//! every instance and after any restart; any change visible in the body gives another (a
//! page's tag covers its `next` link's cursor too). Hashing the data rather than the encoded
//! bytes lets a matching request be answered `304` without encoding anything
//! (`docs/performance.md`, "What conditional requests cost and save"). The tags are weak (`W/"..."`): they
//! promise the same content, not the same bytes; `If-None-Match` compares weakly anyway.
//! Documents the service holds as bytes (its OpenAPI description, the docs page's files) are
//! tagged by their bytes ([`ETag::of_bytes`]).

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use petstore_domain::{Inventory, Order, Pet};
use xxhash_rust::xxh3::xxh3_64;

/// The version of the JSON the service writes, hashed first into every [`ETag::of`]: a release
/// that changes what a body shows for the same data (a field added, a value written another
/// way) changes it, so that no client keeps the old body on a `304`.
pub const FORMAT: &[u8] = b"petstore/v1 format 1";

/// A weak entity tag: `W/"` and 16 hexadecimal digits of a 64-bit hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ETag(u64);

impl ETag {
    /// The tag of `value`'s representation: its fingerprint written out, then hashed at once
    /// (what that costs: `docs/performance.md`, "What conditional requests cost and save").
    pub fn of(value: &(impl Fingerprint + ?Sized)) -> Self {
        // Room for a page of 20 pets with short names, in one allocation.
        let mut bytes = Vec::with_capacity(1024);
        bytes.extend_from_slice(FORMAT);
        value.fingerprint(&mut bytes);
        Self(xxh3_64(&bytes))
    }

    /// The tag of a representation held as bytes.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(xxh3_64(bytes))
    }

    /// `W/"0123456789abcdef"`.
    pub fn header_value(self) -> HeaderValue {
        let mut text = *b"W/\"0000000000000000\"";
        text[2..].copy_from_slice(&self.quoted());
        HeaderValue::from_bytes(&text).expect("BUG: a weak tag is a valid header value")
    }

    /// The tag's opaque part, quoted: `"0123456789abcdef"`.
    fn quoted(self) -> [u8; 18] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = *b"\"0000000000000000\"";
        for (i, digit) in text[1..17].iter_mut().enumerate() {
            *digit = DIGITS[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        text
    }

    /// Whether the request's `If-None-Match` names this tag (weak comparison, RFC 9110
    /// §13.1.2), or is `*`: then the answer is `304 Not Modified`. Field lines are one list
    /// (§5.3); an element that is not an entity tag matches nothing, and `*` only as the whole
    /// field. A request without the field does not match. (Splitting at commas cannot make a
    /// tag of this service out of parts of another: they are hexadecimal digits.)
    pub fn matched_by(self, headers: &HeaderMap) -> bool {
        let mut values = headers.get_all(header::IF_NONE_MATCH).peekable();
        if values.peek().is_none() {
            return false;
        }
        let quoted = self.quoted();
        values.any(|value| {
            let value = value.as_bytes();
            value.trim_ascii() == b"*"
                || value.split(|&b| b == b',').any(|element| {
                    let element = element.trim_ascii();
                    element.strip_prefix(b"W/").unwrap_or(element) == quoted
                })
        })
    }
}

/// What a representation's tag is computed from: every value its body shows, in order, each
/// written so that no two different sequences of values write the same bytes (strings with
/// their length). A type whose JSON gains or loses a field changes [`FORMAT`] (`tests` below
/// hold the fields each one covers against its JSON).
pub trait Fingerprint {
    /// Appends the value's fingerprint to `out`.
    fn fingerprint(&self, out: &mut Vec<u8>);
}

fn int(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn text(out: &mut Vec<u8>, s: &str) {
    int(out, s.len() as i64);
    out.extend_from_slice(s.as_bytes());
}

impl Fingerprint for Pet {
    fn fingerprint(&self, out: &mut Vec<u8>) {
        int(out, self.id);
        int(out, self.category_id);
        text(out, self.status.as_str());
        text(out, &self.name);
    }
}

impl Fingerprint for Order {
    fn fingerprint(&self, out: &mut Vec<u8>) {
        int(out, self.id);
        int(out, self.pet_id);
        int(out, i64::from(self.quantity));
        text(out, self.status.as_str());
        int(out, self.created_at);
    }
}

impl Fingerprint for Inventory {
    fn fingerprint(&self, out: &mut Vec<u8>) {
        for count in [self.available, self.pending, self.sold] {
            out.extend_from_slice(&count.to_le_bytes());
        }
    }
}

impl<T: Fingerprint> Fingerprint for [T] {
    fn fingerprint(&self, out: &mut Vec<u8>) {
        int(out, self.len() as i64);
        for item in self {
            item.fingerprint(out);
        }
    }
}

/// A page: its items and the cursor of its `next` link, if it has one.
impl<T: Fingerprint> Fingerprint for (&[T], Option<i64>) {
    fn fingerprint(&self, out: &mut Vec<u8>) {
        self.0.fingerprint(out);
        match self.1 {
            Some(after) => {
                out.push(1);
                int(out, after);
            }
            None => out.push(0),
        }
    }
}

/// Who may keep a representation, and for how long without asking again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// A key's answer: `Cache-Control: private, no-cache` (a client's own cache keeps it, and
    /// asks before each use: the catalogue changes at any time, and the question is free when
    /// the answer is `304`), `Vary: Authorization` (another key's request is another question).
    Private,
    /// The same for everyone (the API's description, the docs page's files): `public, no-cache`
    /// (any cache keeps it, and asks before each use: a new version of the service may change it).
    Public,
}

impl Caching {
    /// Writes the representation's caching headers.
    pub fn write(self, headers: &mut HeaderMap) {
        match self {
            Self::Private => {
                headers.insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, no-cache"),
                );
                headers.insert(header::VARY, HeaderValue::from_static("Authorization"));
            }
            Self::Public => {
                headers.insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, no-cache"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use petstore_domain::{OrderStatus, PetStatus};

    use super::*;

    fn pet(name: &str, status: PetStatus) -> Pet {
        Pet {
            id: 7,
            name: name.to_owned(),
            category_id: 3,
            status,
        }
    }

    fn parse(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(value).expect("test value"),
        );
        headers
    }

    /// The JSON fields each fingerprint covers: a field added to a type's JSON must be added to
    /// its fingerprint, and here, and [`FORMAT`]'s version raised.
    #[test]
    fn fingerprints_cover_every_field_of_the_json() {
        let keys = |value: serde_json::Value| -> Vec<String> {
            value
                .as_object()
                .expect("test value")
                .keys()
                .cloned()
                .collect()
        };
        let order = Order {
            id: 1,
            pet_id: 2,
            quantity: 1,
            status: OrderStatus::Placed,
            created_at: 0,
            owner: Some(9),
        };
        let pet = serde_json::to_value(pet("Rex", PetStatus::Available)).expect("test value");
        let order = serde_json::to_value(order).expect("test value");
        let inventory = serde_json::to_value(Inventory::default()).expect("test value");
        assert_eq!(keys(pet), ["categoryId", "id", "name", "status"]);
        assert_eq!(
            keys(order),
            ["createdAt", "id", "petId", "quantity", "status"]
        );
        assert_eq!(keys(inventory), ["available", "pending", "sold"]);
    }

    #[test]
    fn any_visible_change_changes_the_tag() {
        let rex = pet("Rex", PetStatus::Available);
        let tag = ETag::of(&rex);
        assert_eq!(tag, ETag::of(&rex.clone()));
        let changes = [
            Pet {
                id: 8,
                ..rex.clone()
            },
            Pet {
                category_id: 4,
                ..rex.clone()
            },
            pet("Rex", PetStatus::Pending),
            pet("Rexy", PetStatus::Available),
        ];
        for changed in changes {
            assert_ne!(ETag::of(&changed), tag, "{changed:?}");
        }
        // Strings carry their lengths: moving a boundary changes the tag.
        let pets = [pet("ab", PetStatus::Available), pet("c", PetStatus::Sold)];
        let moved = [pet("a", PetStatus::Available), pet("bc", PetStatus::Sold)];
        assert_ne!(ETag::of(&pets[..]), ETag::of(&moved[..]));
        // A page's next link is part of it.
        let page: &[Pet] = &pets;
        assert_ne!(ETag::of(&(page, None)), ETag::of(&(page, Some(7))));
        assert_ne!(ETag::of(&(page, Some(7))), ETag::of(&(page, Some(8))));
        // Fixed values, so that a change of the hash or of the fingerprint's layout (which
        // every client's tags rely on, across instances and releases) is seen; computed with
        // Python's `xxhash` over the layout written out by hand.
        assert_eq!(tag.header_value(), "W/\"ed8d532fb73dc5fd\"");
        assert_eq!(ETag::of_bytes(b"").header_value(), "W/\"2d06800538d394c2\"");
        // The format's version comes first: a new one changes every tag.
        let mut unversioned = Vec::new();
        rex.fingerprint(&mut unversioned);
        assert_ne!(ETag(xxh3_64(&unversioned)), tag);
    }

    #[test]
    fn if_none_match_compares_weakly_in_lists_and_takes_a_star() {
        let tag = ETag::of_bytes(b"{}");
        let text = tag.header_value().to_str().expect("test value").to_owned();
        let strong = text.strip_prefix("W/").expect("test value").to_owned();
        for matching in [
            text.clone(),
            strong.clone(),
            format!("\"x\", {text}"),
            format!("W/\"x\",{strong} , \"y\""),
            "*".to_owned(),
        ] {
            assert!(tag.matched_by(&parse(&matching)), "{matching}");
        }
        for other in [
            "\"x\"",
            "W/\"x\"",
            "",
            ",",
            "W/",
            &strong[1..17],
            "**",
            "\"x\", *",
        ] {
            assert!(!tag.matched_by(&parse(other)), "{other}");
        }
        assert!(!tag.matched_by(&HeaderMap::new()));
        // Two field lines are one list.
        let mut headers = parse("\"x\"");
        headers.append(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&text).expect("test value"),
        );
        assert!(tag.matched_by(&headers));
    }
}
