//! Pets: the wire types of the interface (`Pet`, `NewPet`, `PetStatus`) and their rules.

use serde::{Deserialize, Deserializer, Serialize};
use validator::Validate;

use crate::{Created, ValidationError};

/// Longest accepted pet name, in characters (Unicode scalar values).
pub const MAX_NAME_CHARS: usize = 255;

string_enum! {
    /// Availability of a pet. Serialised in lower case, as the interface lists it.
    pub enum PetStatus in "status", default Available {
        /// The pet can be bought. The status a new pet gets when none is sent.
        Available = "available",
        /// A sale is in progress.
        Pending = "pending",
        /// The pet has been sold.
        Sold = "sold",
    }
}

/// A pet as the service returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Pet {
    /// Assigned by the service on creation.
    #[cfg_attr(feature = "openapi", schema(examples(1)))]
    pub id: i64,
    /// The pet's name.
    #[cfg_attr(feature = "openapi", schema(examples("Rex")))]
    pub name: String,
    /// The category the pet belongs to.
    #[cfg_attr(feature = "openapi", schema(examples(1)))]
    pub category_id: i64,
    /// Availability.
    pub status: PetStatus,
}

impl Created for Pet {
    const COLLECTION: &'static str = "/pets";

    fn id(&self) -> i64 {
        self.id
    }
}

/// The body of `POST /pets`, exactly as a client sends it.
///
/// Deserialisation is strict: unknown fields (including `id`, which the service assigns) and a
/// `null` status are rejected. Rules beyond types are checked by [`NewPet::validate_into`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(
        description = "The body of `POST /pets`. Strict: an unknown field (`id` among \
        them: the service assigns it) or a `null` status is refused with `400 unknown_field` or \
        `400 invalid_field`."
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPet {
    /// At most 255 characters, no control characters (nor bidirectional controls, U+202A to
    /// U+202E and U+2066 to U+2069), and at least one that shows (neither white space nor an
    /// invisible character such as U+200B or U+FEFF).
    #[validate(custom(function = "validate_name"))]
    #[cfg_attr(
        feature = "openapi",
        schema(
            examples("Rex"),
            min_length = 1,
            max_length = 255,
            // Some character that is neither white space, nor invisible (`INVISIBLE`), nor a
            // control character, and no control character (nor bidirectional control)
            // anywhere (ECMA-262, as OpenAPI patterns are).
            pattern = r"^[^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u2066-\u2069\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0][^\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    pub name: String,
    /// At least 1.
    #[validate(range(min = 1, message = "must be an integer of at least 1"))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, examples(1)))]
    #[serde(deserialize_with = "whole_number")]
    pub category_id: i64,
    /// Optional; `available` when absent. `null` is not accepted.
    // No OpenAPI `default`: generators (openapi-typescript's default settings) make a field with
    // one required in the type a client fills in; the description says what absence means.
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    #[serde(
        default,
        deserialize_with = "present_status",
        skip_serializing_if = "Option::is_none"
    )]
    pub status: Option<PetStatus>,
}

/// The largest magnitude up to which every whole number is exact as an IEEE double (2^53).
const EXACT_DOUBLE: f64 = 9_007_199_254_740_992.0;

/// An int64 written as an integer (`3`), or as a whole number with a fraction or exponent
/// (`3.0`, `3e0`): JSON Schema, and so the OpenAPI document, counts those as integers too. A
/// number written that way is read as a double (as JavaScript reads every number), so it is
/// accepted only below 2^53, where doubles still hold every whole number exactly (2^53 itself is
/// also what 2^53 + 1 reads as); from there, or with a fraction, it is refused rather than
/// rounded.
pub fn whole_number<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct WholeNumber;

    impl serde::de::Visitor<'_> for WholeNumber {
        type Value = i64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("i64")
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i64, E> {
            i64::try_from(v)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<i64, E> {
            if v.fract() == 0.0 && v.abs() < EXACT_DOUBLE {
                #[allow(clippy::cast_possible_truncation)] // whole and below 2^53: exact
                Ok(v as i64)
            } else {
                Err(E::invalid_type(serde::de::Unexpected::Float(v), &self))
            }
        }
    }

    d.deserialize_i64(WholeNumber)
}

fn present_status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PetStatus>, D::Error> {
    d.deserialize_any(StatusVisitor).map(Some)
}

/// A status is a string; anything else (`null`, a number, a list) is a value of the wrong type
/// for the field, which deserialising the enum directly would report as a JSON syntax error.
struct StatusVisitor;

impl serde::de::Visitor<'_> for StatusVisitor {
    type Value = PetStatus;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("one of available, pending, sold")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PetStatus, E> {
        v.parse()
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(v), &self))
    }
}

/// Characters that show nothing: the default-ignorable code points of the Basic Multilingual
/// Plane (Unicode's `Default_Ignorable_Code_Point`: zero-width spaces and joiners, direction
/// marks, the byte-order mark, soft hyphen, variation selectors, ...). The same set stands in the
/// OpenAPI pattern of `name`.
const INVISIBLE: [(char, char); 13] = [
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
];

/// Whether `c` shows nothing: white space or an invisible character.
fn is_blank(c: char) -> bool {
    c.is_whitespace()
        || INVISIBLE
            .iter()
            .any(|&(low, high)| (low..=high).contains(&c))
}

/// An explicit bidirectional embedding, override or isolate: in a name, it would reorder the
/// text around it in any interface that shows it (spoofing what the name seems to say).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn validate_name(name: &str) -> Result<(), validator::ValidationError> {
    let reason = if name.chars().all(is_blank) {
        "must not be blank"
    } else if name.chars().count() > MAX_NAME_CHARS {
        "must be at most 255 characters long"
    } else if name.chars().any(char::is_control) {
        "must not contain control characters"
    } else if name.chars().any(is_bidi_control) {
        "must not contain bidirectional control characters (U+202A to U+202E, U+2066 to U+2069)"
    } else {
        return Ok(());
    };
    Err(validator::ValidationError::new("name").with_message(reason.into()))
}

impl NewPet {
    /// Checks every rule and returns the pet ready to be stored, with defaults applied.
    pub fn validate_into(self) -> Result<PetDraft, ValidationError> {
        if let Err(errors) = self.validate() {
            let fields = errors.field_errors();
            // Report the first broken field in declaration order, so the answer is stable.
            for (rust_name, wire_name) in [("name", "name"), ("category_id", "categoryId")] {
                if let Some(error) = fields.get(rust_name).and_then(|list| list.first()) {
                    let reason = error.message.as_deref().unwrap_or("is invalid").to_owned();
                    return Err(ValidationError::invalid(wire_name, reason));
                }
            }
            return Err(ValidationError::invalid("body", errors.to_string()));
        }
        Ok(PetDraft {
            name: self.name,
            category_id: self.category_id,
            status: self.status.unwrap_or_default(),
        })
    }
}

/// A new pet that has passed validation: what a repository stores. Only [`NewPet::validate_into`]
/// and [`PetDraft::new`] build one, so holding a `PetDraft` proves the rules hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PetDraft {
    name: String,
    category_id: i64,
    status: PetStatus,
}

impl PetDraft {
    /// Validates the parts of a new pet.
    pub fn new(
        name: impl Into<String>,
        category_id: i64,
        status: PetStatus,
    ) -> Result<Self, ValidationError> {
        NewPet {
            name: name.into(),
            category_id,
            status: Some(status),
        }
        .validate_into()
    }

    /// The validated name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The validated category id.
    pub fn category_id(&self) -> i64 {
        self.category_id
    }

    /// The status, defaults applied.
    pub fn status(&self) -> PetStatus {
        self.status
    }

    /// The pet this draft becomes once stored under `id`.
    pub fn into_pet(self, id: i64) -> Pet {
        Pet {
            id,
            name: self.name,
            category_id: self.category_id,
            status: self.status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> Result<NewPet, serde_json::Error> {
        serde_json::from_value(value)
    }

    #[test]
    fn a_minimal_new_pet_defaults_to_available() {
        let draft = parse(json!({"name": "Rex", "categoryId": 3}))
            .expect("valid body")
            .validate_into()
            .expect("valid pet");
        assert_eq!(draft.status(), PetStatus::Available);
        assert_eq!(draft.name(), "Rex");
        assert_eq!(draft.category_id(), 3);
    }

    #[test]
    fn a_name_with_a_bidirectional_control_is_refused_naming_the_field() {
        for c in [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}',
        ] {
            let name = format!("Rex{c}gnp.exe");
            let error = parse(json!({"name": name, "categoryId": 3}))
                .expect("well-formed body")
                .validate_into()
                .expect_err("refused");
            let message = error.to_string();
            assert!(
                message.contains("name") && message.contains("bidirectional"),
                "U+{:04X}: {message}",
                u32::from(c)
            );
        }
        // Right-to-left text itself is a name like any other.
        parse(json!({"name": "רקס", "categoryId": 3}))
            .expect("body")
            .validate_into()
            .expect("a Hebrew name");
    }

    #[test]
    fn a_pet_serialises_with_the_interface_field_names() {
        let pet = Pet {
            id: 7,
            name: "Rex".into(),
            category_id: 3,
            status: PetStatus::Sold,
        };
        let value = serde_json::to_value(&pet).expect("serialises");
        assert_eq!(
            value,
            json!({"id": 7, "name": "Rex", "categoryId": 3, "status": "sold"})
        );
        let back: Pet = serde_json::from_value(value).expect("round-trips");
        assert_eq!(back, pet);
    }

    #[test]
    fn a_new_pet_round_trips_through_json() {
        let new = NewPet {
            name: "Tom".into(),
            category_id: 1,
            status: Some(PetStatus::Pending),
        };
        let text = serde_json::to_string(&new).expect("serialises");
        assert_eq!(text, r#"{"name":"Tom","categoryId":1,"status":"pending"}"#);
        assert_eq!(serde_json::from_str::<NewPet>(&text).expect("parses"), new);
    }

    #[test]
    fn every_status_parses_from_its_own_spelling() {
        for status in PetStatus::ALL {
            assert_eq!(status.as_str().parse::<PetStatus>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).expect("serialises"),
                json!(status.as_str())
            );
        }
        assert!("Available".parse::<PetStatus>().is_err());
        assert!("".parse::<PetStatus>().is_err());
    }

    #[test]
    fn bodies_of_the_wrong_shape_are_rejected_by_deserialisation() {
        let cases = [
            (
                "id sent by the client",
                json!({"id": 1, "name": "a", "categoryId": 1}),
            ),
            (
                "unknown field",
                json!({"name": "a", "categoryId": 1, "colour": "red"}),
            ),
            ("missing name", json!({"categoryId": 1})),
            ("missing categoryId", json!({"name": "a"})),
            ("null name", json!({"name": null, "categoryId": 1})),
            ("null categoryId", json!({"name": "a", "categoryId": null})),
            (
                "null status",
                json!({"name": "a", "categoryId": 1, "status": null}),
            ),
            ("numeric name", json!({"name": 5, "categoryId": 1})),
            ("string categoryId", json!({"name": "a", "categoryId": "1"})),
            (
                "fractional categoryId",
                json!({"name": "a", "categoryId": 1.5}),
            ),
            (
                "categoryId over int64",
                json!({"name": "a", "categoryId": 9223372036854775808u64}),
            ),
            (
                "unknown status",
                json!({"name": "a", "categoryId": 1, "status": "lost"}),
            ),
            (
                "status in capitals",
                json!({"name": "a", "categoryId": 1, "status": "SOLD"}),
            ),
            ("array body", json!([{"name": "a", "categoryId": 1}])),
            ("string body", json!("a")),
        ];
        for (case, body) in cases {
            assert!(parse(body).is_err(), "{case} was accepted");
        }
    }

    #[test]
    fn rule_breaking_values_are_rejected_naming_the_field() {
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        let cases = [
            ("empty name", "", 1, "name"),
            ("blank name", "   \t ", 1, "name"),
            ("byte-order mark name", "\u{FEFF}", 1, "name"),
            ("zero-width name", "\u{200B}\u{2060} \u{200D}", 1, "name"),
            ("soft hyphen name", "\u{00AD}\u{00A0}", 1, "name"),
            ("name too long", long.as_str(), 1, "name"),
            ("newline in name", "Rex\nthe dog", 1, "name"),
            ("NUL in name", "Rex\0", 1, "name"),
            ("categoryId zero", "Rex", 0, "categoryId"),
            ("categoryId negative", "Rex", -5, "categoryId"),
            ("categoryId minimum int64", "Rex", i64::MIN, "categoryId"),
        ];
        for (case, name, category_id, field) in cases {
            let result = NewPet {
                name: name.into(),
                category_id,
                status: None,
            }
            .validate_into();
            match result {
                Err(ValidationError::InvalidField { field: got, .. }) => {
                    assert_eq!(got, field, "{case} named the wrong field")
                }
                other => panic!("{case}: expected an invalid field, got {other:?}"),
            }
        }
    }

    #[test]
    fn names_at_the_limits_are_accepted() {
        let longest: String = "é".repeat(MAX_NAME_CHARS);
        for name in ["R", longest.as_str(), "Mötley Crüe 🐶", " padded "] {
            assert!(
                PetDraft::new(name, i64::MAX, PetStatus::Sold).is_ok(),
                "{name:?} was rejected"
            );
        }
    }

    #[test]
    fn a_category_id_written_as_a_whole_number_with_a_fraction_is_that_integer() {
        for (text, expected) in [("3", 3), ("3.0", 3), ("3e0", 3), ("30e-1", 3), ("-0.0", 0)] {
            let body = format!(r#"{{"name":"Rex","categoryId":{text}}}"#);
            let pet: NewPet = serde_json::from_str(&body).expect(&body);
            assert_eq!(pet.category_id, expected, "{text}");
        }
        for text in [
            "1.5",
            "9007199254740994.0",
            // 2^53 + 1 and 2^53 read as the same double: neither is taken for the other.
            "9007199254740993e0",
            "9007199254740992.0",
            "1e19",
            "9223372036854775808",
            "-1e300",
        ] {
            let body = format!(r#"{{"name":"Rex","categoryId":{text}}}"#);
            assert!(
                serde_json::from_str::<NewPet>(&body).is_err(),
                "{text} accepted"
            );
        }
    }
}
