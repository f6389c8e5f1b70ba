//! A time in Unix seconds on the wire: RFC 3339, in whole seconds (`#[serde(with = "rfc3339")]`),
//! or that or `null` ([`optional`]).

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serializer};

pub(super) fn serialize<S: Serializer>(secs: &i64, s: S) -> Result<S::Ok, S::Error> {
    let instant = UNIX_EPOCH + Duration::from_secs(u64::try_from(*secs).unwrap_or(0));
    s.collect_str(&humantime::format_rfc3339_seconds(instant))
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let text = std::borrow::Cow::<str>::deserialize(d)?;
    let instant = humantime::parse_rfc3339_weak(&text).map_err(serde::de::Error::custom)?;
    let secs = instant
        .duration_since(UNIX_EPOCH)
        .map_err(serde::de::Error::custom)?
        .as_secs();
    i64::try_from(secs).map_err(serde::de::Error::custom)
}

/// [`rfc3339`](self), or `null`.
pub(super) mod optional {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(in crate::webhook) fn serialize<S: Serializer>(
        secs: &Option<i64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match secs {
            Some(secs) => super::serialize(secs, s),
            None => s.serialize_none(),
        }
    }

    pub(in crate::webhook) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        struct Time(#[serde(with = "super")] i64);
        Ok(Option::<Time>::deserialize(d)?.map(|Time(secs)| secs))
    }
}
