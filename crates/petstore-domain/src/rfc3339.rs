//! A time in Unix seconds on the wire, written once for orders and webhooks: RFC 3339 in UTC,
//! whole seconds (`#[serde(with = "rfc3339")]`), or that or `null` ([`optional`]). Read back
//! strictly (`humantime::parse_rfc3339`: a `T`, and `Z` or `+00:00`), as the service writes it.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(secs: &i64, s: S) -> Result<S::Ok, S::Error> {
    let instant = UNIX_EPOCH + Duration::from_secs(u64::try_from(*secs).unwrap_or(0));
    s.collect_str(&humantime::format_rfc3339_seconds(instant))
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let text = String::deserialize(d)?;
    let instant = humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)?;
    let secs = instant
        .duration_since(UNIX_EPOCH)
        .map_err(serde::de::Error::custom)?
        .as_secs();
    i64::try_from(secs).map_err(serde::de::Error::custom)
}

/// [`rfc3339`](self), or `null`.
pub(crate) mod optional {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(secs: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match secs {
            Some(secs) => super::serialize(secs, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        struct Time(#[serde(with = "super")] i64);
        Ok(Option::<Time>::deserialize(d)?.map(|Time(secs)| secs))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct At(#[serde(with = "super")] i64);

    #[test]
    fn a_time_is_written_in_whole_seconds_and_read_back() {
        let text = serde_json::to_string(&At(1_700_000_000)).expect("serialises");
        assert_eq!(text, r#""2023-11-14T22:13:20Z""#);
        assert_eq!(
            serde_json::from_str::<At>(&text).expect("parses"),
            At(1_700_000_000)
        );
    }

    #[test]
    fn a_time_in_utc_is_read_with_a_fraction_or_an_offset_of_zero() {
        for text in [
            r#""2023-11-14T22:13:20.250Z""#,
            r#""2023-11-14T22:13:20+00:00""#,
        ] {
            let at = serde_json::from_str::<At>(text).expect(text);
            assert_eq!(at, At(1_700_000_000), "{text}");
        }
    }

    #[test]
    fn a_time_without_its_zone_or_its_t_is_refused() {
        for text in [
            r#""2023-11-14 22:13:20Z""#,
            r#""2023-11-14T22:13:20""#,
            r#""1700000000""#,
        ] {
            assert!(serde_json::from_str::<At>(text).is_err(), "{text}");
        }
    }
}
