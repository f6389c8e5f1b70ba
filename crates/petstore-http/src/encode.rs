//! Pets as JSON, written directly into the response buffer.
//!
//! `Pet`'s `Serialize` (in the domain) stays the definition of the JSON shape; the encoding here
//! produces the same bytes (a test compares them for every status and for names that need
//! escaping). It exists because a list page is mostly pets, and through serde every pet cost
//! four escaped field names and an escaped status: constants, written here as they are. Only
//! the name goes through `serde_json`'s string escaping.

use petstore_domain::Pet;

/// A value with a direct JSON encoding.
pub trait EncodeJson {
    /// Appends the value's JSON to `out`.
    fn encode_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

impl EncodeJson for Pet {
    fn encode_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut digits = itoa::Buffer::new();
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(digits.format(self.id).as_bytes());
        out.extend_from_slice(b",\"name\":");
        serde_json::to_writer(&mut *out, self.name.as_str())?;
        out.extend_from_slice(b",\"categoryId\":");
        out.extend_from_slice(digits.format(self.category_id).as_bytes());
        out.extend_from_slice(b",\"status\":\"");
        // Status names are lowercase ASCII letters: nothing to escape.
        out.extend_from_slice(self.status.as_str().as_bytes());
        out.extend_from_slice(b"\"}");
        Ok(())
    }
}

impl<T: EncodeJson> EncodeJson for [T] {
    fn encode_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.push(b'[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item.encode_json(out)?;
        }
        out.push(b']');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use petstore_domain::PetStatus;

    fn encoded<T: EncodeJson + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        value.encode_json(&mut out).expect("encodes");
        out
    }

    #[test]
    fn pets_encode_exactly_as_serde_does() {
        let names = [
            "Rex",
            "",
            "quote \" backslash \\ slash /",
            "tab\tnewline\ncr\rnul\u{0}bell\u{7}del\u{7f}",
            "ünïcødé 🐕 \u{2028}\u{2029}",
            "</script>",
        ];
        let statuses = [PetStatus::Available, PetStatus::Pending, PetStatus::Sold];
        let pets: Vec<Pet> = names
            .iter()
            .zip(statuses.iter().cycle())
            .zip([0, 1, -1, i64::MAX, i64::MIN, 42])
            .map(|((name, status), n)| Pet {
                id: n,
                name: (*name).to_owned(),
                category_id: n.wrapping_neg(),
                status: *status,
            })
            .collect();
        for pet in &pets {
            assert_eq!(
                encoded(pet),
                serde_json::to_vec(pet).expect("serialises"),
                "{pet:?}"
            );
        }
        assert_eq!(
            encoded(pets.as_slice()),
            serde_json::to_vec(&pets).expect("serialises")
        );
        assert_eq!(encoded(&[] as &[Pet]), b"[]");
    }
}
