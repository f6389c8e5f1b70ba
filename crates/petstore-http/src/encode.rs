//! Pets as JSON, written directly into the response buffer.
//!
//! `Pet`'s `Serialize` (in the domain) stays the definition of the JSON shape; the encoding here
//! produces the same bytes (`tests/api/list_pets.rs` compares them for every status and for
//! names that need escaping). It exists because a list page is mostly pets, and through serde every pet cost
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
