//! Endpoints: what a client sends to register one ([`NewEndpoint`]) or change one
//! ([`EndpointChanges`]), checked into what the storage writes ([`EndpointSpec`],
//! [`EndpointUpdate`]); whose an endpoint is ([`EndpointOwner`]); how the API shows one
//! ([`WebhookEndpoint`], and [`IssuedEndpoint`] with its secret, once); and what became of a
//! write ([`EndpointWrite`]).

use serde::{Deserialize, Serialize};

use super::events::EventSet;
#[cfg(feature = "openapi")]
use super::events::EventType;
use super::secret::SigningSecret;
use super::url_policy::{EndpointError, EndpointUrl, UrlPolicy};
use crate::ValidationError;
use crate::rfc3339;

/// The most endpoints one API key (or the operators together) may have.
pub const MAX_ENDPOINTS: usize = 20;
/// The longest description accepted, in characters.
pub const MAX_DESCRIPTION: usize = 200;

/// The body of `POST /webhook_endpoints`, as a client sends it (strict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewEndpoint {
    /// Where deliveries are sent: `https://`, not an address of a private network.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 2048,
            format = "uri",
            examples("https://example.com/hooks/petstore")
        )
    )]
    pub url: String,
    /// The event types to receive (at least one).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<EventType>, min_items = 1))]
    pub events: EventSet,
    /// A note for the owner (at most 200 characters).
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 200, pattern = r"^[^\x00-\x1f\x7f-\x9f]*$")
    )]
    #[serde(default)]
    pub description: String,
}

/// A validated endpoint to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    /// Where deliveries go.
    pub url: EndpointUrl,
    /// What it receives.
    pub events: EventSet,
    /// The owner's note.
    pub description: String,
}

impl NewEndpoint {
    /// Checks the URL against `policy` and the description's length.
    pub fn validate(self, policy: UrlPolicy) -> Result<EndpointSpec, EndpointError> {
        Ok(EndpointSpec {
            url: EndpointUrl::parse(&self.url, policy)?,
            events: self.events,
            description: checked_description(self.description)?,
        })
    }
}

fn checked_description(text: String) -> Result<String, ValidationError> {
    let too_long = "must be at most 200 characters";
    ValidationError::check_text("description", &text, MAX_DESCRIPTION, too_long)?;
    if text.chars().any(crate::pet::is_bidi_control) {
        return Err(ValidationError::invalid(
            "description",
            "must not contain bidirectional control characters (U+202A to U+202E, U+2066 to \
             U+2069)",
        ));
    }
    Ok(text)
}

/// The body of `PATCH /webhook_endpoints/{id}`: the fields to change (strict). `enabled: true`
/// turns a disabled endpoint back on (its reason cleared); `false` turns it off: no event is
/// recorded for it from then on, and its pending deliveries fail (each may be redelivered once
/// it is on again).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointChanges {
    /// A new URL, under the same rules as on create.
    #[cfg_attr(feature = "openapi", schema(max_length = 2048, format = "uri"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// New event types (replacing the old).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<EventType>>, min_items = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventSet>,
    /// A new description.
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 200, pattern = r"^[^\x00-\x1f\x7f-\x9f]*$")
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether deliveries are sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// A validated [`EndpointChanges`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndpointUpdate {
    /// A new URL.
    pub url: Option<EndpointUrl>,
    /// New event types.
    pub events: Option<EventSet>,
    /// A new description.
    pub description: Option<String>,
    /// Enabled or disabled.
    pub enabled: Option<bool>,
}

impl EndpointChanges {
    /// Checks each field given as [`NewEndpoint::validate`] does.
    pub fn validate(self, policy: UrlPolicy) -> Result<EndpointUpdate, EndpointError> {
        Ok(EndpointUpdate {
            url: self
                .url
                .map(|url| EndpointUrl::parse(&url, policy))
                .transpose()?,
            events: self.events,
            description: self.description.map(checked_description).transpose()?,
            enabled: self.enabled,
        })
    }
}

/// What became of a write that registers an endpoint or changes one: done, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointWrite<T> {
    /// Done: the endpoint (with its secret, when one was made).
    Done(T),
    /// The owner has no such endpoint.
    NotFound,
    /// The owner has [`MAX_ENDPOINTS`] already (a create).
    LimitReached,
    /// The owner has an endpoint with this URL already (its id): one endpoint per URL, so that
    /// no owner multiplies each event towards a third party.
    UrlTaken(i64),
}

impl<T> EndpointWrite<T> {
    /// What was written, if it was.
    pub fn done(self) -> Option<T> {
        match self {
            Self::Done(value) => Some(value),
            _ => None,
        }
    }
}

/// Whose an endpoint is: an API key's (it receives that key's events), or the operators' (it
/// receives every event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointOwner {
    /// An API key's.
    Key(i64),
    /// The operators' (the admin API).
    Operator,
}

impl EndpointOwner {
    /// The key's id; `None` for the operators.
    pub fn key(self) -> Option<i64> {
        match self {
            Self::Key(id) => Some(id),
            Self::Operator => None,
        }
    }
}

/// A webhook endpoint, as the API shows it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpoint {
    /// Assigned by the service.
    pub id: i64,
    /// Where deliveries go.
    pub url: String,
    /// What it receives.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<EventType>))]
    pub events: EventSet,
    /// The owner's note.
    pub description: String,
    /// Whether deliveries are sent. The service turns an endpoint off when it answers `410 Gone`,
    /// or when every delivery to it failed for the whole retry schedule (about three days).
    pub enabled: bool,
    /// Why it was turned off, when it was.
    pub disabled_reason: Option<String>,
    /// When the secret rotated out last keeps signing deliveries until (both signatures are
    /// sent until then).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    #[serde(with = "rfc3339::optional", default)]
    pub previous_secret_expires_at: Option<i64>,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(with = "rfc3339")]
    pub created_at: i64,
    /// Whose it is: the id of the API key it belongs to, or `null` for the operators' (which
    /// receive every event).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    #[serde(rename = "ownerKeyId", with = "owner_key_id")]
    pub owner: EndpointOwner,
}

/// An [`EndpointOwner`] on the wire: the key's id, or `null` for the operators.
mod owner_key_id {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::EndpointOwner;

    pub(super) fn serialize<S: Serializer>(owner: &EndpointOwner, s: S) -> Result<S::Ok, S::Error> {
        owner.key().serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<EndpointOwner, D::Error> {
        Ok(Option::<i64>::deserialize(d)?.map_or(EndpointOwner::Operator, EndpointOwner::Key))
    }
}

/// An endpoint with its signing secret: the answer to a create or a rotation, the only time
/// the secret is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IssuedEndpoint {
    /// The endpoint.
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// The signing secret, `whsec_` + base64: verify each delivery's `webhook-signature` with
    /// it. Shown only in this answer.
    #[cfg_attr(
        feature = "openapi",
        schema(examples("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    )]
    pub secret: String,
}

impl IssuedEndpoint {
    /// `endpoint` with `secret` revealed.
    pub fn new(endpoint: WebhookEndpoint, secret: &SigningSecret) -> Self {
        Self {
            endpoint,
            secret: secret.reveal(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_short_and_show_what_they_say() {
        let described = |text: &str| {
            NewEndpoint {
                url: "https://example.com/h".into(),
                events: EventSet::ALL,
                description: text.into(),
            }
            .validate(UrlPolicy::default())
        };
        assert!(described("orders, for the warehouse").is_ok());
        assert!(described(&"é".repeat(MAX_DESCRIPTION)).is_ok());
        for (text, why) in [
            ("é".repeat(MAX_DESCRIPTION + 1), "at most 200"),
            ("a\nb".to_owned(), "control"),
            ("invoice \u{202E}fdp.exe".to_owned(), "bidirectional"),
            ("\u{2066}x\u{2069}".to_owned(), "bidirectional"),
        ] {
            let error = described(&text).expect_err(&text).to_string();
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }
}
