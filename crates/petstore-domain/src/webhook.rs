//! Webhooks: endpoints that receive events (an order placed, approved, delivered or cancelled; a
//! pet created), signed as the Standard Webhooks specification (v1, standardwebhooks.com) says.
//!
//! What is pure lives here: the event types and the wire shapes of an endpoint, an event and a
//! delivery; the rules an endpoint's URL must follow ([`EndpointUrl`], [`forbidden_address`]:
//! no request forgery towards the service's own network); the signing secret's form
//! ([`SigningSecret`], `whsec_` + base64); and the retry schedule ([`retry_delay`]). Storing
//! endpoints and deliveries is the storage's ([`WebhookRepository`](crate::WebhookRepository)),
//! sending them the program's.

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ValidationError;

string_enum! {
    /// What happened. The strings are a stable contract with receivers.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum EventType in "events" {
        /// An order was placed (`POST /store/orders`).
        #[serde(rename = "order.placed")]
        OrderPlaced = "order.placed",
        /// An operator approved an order.
        #[serde(rename = "order.approved")]
        OrderApproved = "order.approved",
        /// An operator delivered an order.
        #[serde(rename = "order.delivered")]
        OrderDelivered = "order.delivered",
        /// An order was cancelled (by its key or an operator).
        #[serde(rename = "order.cancelled")]
        OrderCancelled = "order.cancelled",
        /// A pet was created (`POST /pets`).
        #[serde(rename = "pet.created")]
        PetCreated = "pet.created",
    }
}

/// The events an endpoint subscribes to: a non-empty set of [`EventType`]s, sent and stored as
/// a list in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventSet(u8);

impl EventSet {
    /// Every event type.
    pub const ALL: Self = Self((1 << EventType::ALL.len()) - 1);

    /// The set of `types` (repeats ignored); refused when empty.
    pub fn new(types: impl IntoIterator<Item = EventType>) -> Result<Self, ValidationError> {
        let set = types.into_iter().fold(0, |set, kind| set | Self::bit(kind));
        if set == 0 {
            return Err(ValidationError::invalid(
                "events",
                "must name at least one event type",
            ));
        }
        Ok(Self(set))
    }

    fn bit(kind: EventType) -> u8 {
        let index = EventType::ALL
            .iter()
            .position(|candidate| *candidate == kind)
            .unwrap_or(0);
        1 << index
    }

    /// Whether the set holds `kind`.
    pub fn contains(self, kind: EventType) -> bool {
        self.0 & Self::bit(kind) != 0
    }

    /// The types in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = EventType> {
        EventType::ALL
            .into_iter()
            .filter(move |kind| self.contains(*kind))
    }

    /// How a set is stored: its types between commas, with a comma at each end
    /// (`,order.placed,pet.created,`), so that [`Self::stored_pattern`] finds one with `LIKE`.
    pub fn to_stored(self) -> String {
        let mut stored = String::from(",");
        for kind in self.iter() {
            stored.push_str(kind.as_str());
            stored.push(',');
        }
        stored
    }

    /// Reads [`Self::to_stored`]'s form back; `None` when it holds no known type.
    pub fn from_stored(stored: &str) -> Option<Self> {
        let kinds = stored
            .split(',')
            .filter(|part| !part.is_empty())
            .map(str::parse::<EventType>)
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Self::new(kinds).ok()
    }

    /// The `LIKE` pattern that matches a stored set holding `kind`.
    pub fn stored_pattern(kind: EventType) -> String {
        format!("%,{},%", kind.as_str())
    }
}

impl Serialize for EventSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for kind in self.iter() {
            seq.serialize_element(kind.as_str())?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for EventSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<Cow<'de, str>>::deserialize(d)?;
        let kinds = names
            .iter()
            .map(|name| name.parse::<EventType>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(serde::de::Error::custom)?;
        Self::new(kinds).map_err(serde::de::Error::custom)
    }
}

/// The longest endpoint URL accepted.
pub const MAX_URL_LENGTH: usize = 2048;
/// The most endpoints one API key (or the operators together) may have.
pub const MAX_ENDPOINTS: usize = 20;
/// The longest description accepted, in characters.
pub const MAX_DESCRIPTION: usize = 200;

/// What an endpoint's URL may be, beyond its form (the service's settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlPolicy {
    /// `http://` accepted as well as `https://` (`--webhook-allow-http`).
    pub allow_http: bool,
    /// Addresses of the service's own networks accepted (`--webhook-allow-private`): loopback,
    /// private, link-local, metadata.
    pub allow_private: bool,
}

/// An endpoint's URL, checked: absolute, `https` (or `http` when allowed), with a host, no
/// credentials, no fragment, at most [`MAX_URL_LENGTH`] bytes, and not an address of the
/// service's own networks when the host is one (a name is checked where it is resolved, at
/// registration and again at each delivery, with [`forbidden_address`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl {
    text: String,
    host: String,
    port: u16,
}

impl EndpointUrl {
    /// Checks `text` against the rules and `policy`: [`EndpointError::Invalid`] when it is
    /// not an absolute URL of at most [`MAX_URL_LENGTH`] bytes, [`EndpointError::Refused`] when
    /// it is one that the rules or the policy refuse.
    pub fn parse(text: &str, policy: UrlPolicy) -> Result<Self, EndpointError> {
        let refused = |reason: &str| EndpointError::Refused(reason.to_owned());
        if text.len() > MAX_URL_LENGTH {
            return Err(ValidationError::invalid("url", "must be at most 2048 bytes").into());
        }
        let url = url::Url::parse(text).map_err(|error| {
            ValidationError::invalid("url", format!("is not an absolute URL: {error}"))
        })?;
        match url.scheme() {
            "https" => {}
            "http" if policy.allow_http => {}
            "http" => return Err(refused("it must use https")),
            _ => return Err(refused("it must be an https URL")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refused(
                "it must not hold credentials: receivers authenticate deliveries by their signature",
            ));
        }
        if url.fragment().is_some() {
            return Err(refused("it must not have a fragment"));
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if !policy.allow_private && (name == "localhost" || name.ends_with(".localhost")) {
                    return Err(refused("it must not name this machine (localhost)"));
                }
                name
            }
            Some(url::Host::Ipv4(ip)) => checked_ip(IpAddr::V4(ip), policy)?,
            Some(url::Host::Ipv6(ip)) => checked_ip(IpAddr::V6(ip), policy)?,
            None => return Err(refused("it must have a host")),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        // Normalising may lengthen it (percent-encoding, an international name's `xn--` form):
        // the bound holds for what is stored and sent too.
        // (A refusal, not a malformed field: the text sent was within its bound.)
        if url.as_str().len() > MAX_URL_LENGTH {
            return Err(refused(
                "it is over 2048 bytes once normalised (percent-encoded, with an international \
                 name in its xn-- form)",
            ));
        }
        Ok(Self {
            text: url.into(),
            host,
            port,
        })
    }

    /// The URL as it is stored and sent to (normalised by the URL standard's parser).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The host: a lowercase name, or an address's text.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, the scheme's default when the URL names none.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host as an address, when the URL gives one rather than a name.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    }
}

/// Whether two endpoint URLs reach the same receiver: the same scheme, host (a trailing dot
/// aside), port and path, whatever their queries. An owner has one endpoint per receiver, so
/// that no owner multiplies each event towards a third party (`?1`, `?2`, ... would).
pub fn same_receiver(a: &str, b: &str) -> bool {
    let target = |text: &str| {
        let url = url::Url::parse(text).ok()?;
        let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
        Some((
            url.scheme().to_owned(),
            host,
            url.port_or_known_default(),
            url.path().trim_end_matches('/').to_owned(),
        ))
    };
    match (target(a), target(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// An endpoint's URL as it may be logged: scheme, host and port, and the path's first segment
/// (`https://hooks.example.com/services/…`), nothing more: receivers often carry a token in the
/// query or in the path (Slack's `/services/T/B/<token>`). A text that is no URL shows as
/// `(not a URL)`.
pub fn loggable_url(text: &str) -> String {
    let Ok(url) = url::Url::parse(text) else {
        return "(not a URL)".to_owned();
    };
    let host = url.host_str().unwrap_or_default();
    let port = url
        .port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    let path = url.path();
    let first = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let rest = if path.trim_start_matches('/').len() > first.len() {
        "/…"
    } else {
        ""
    };
    format!("{}://{host}{port}/{first}{rest}", url.scheme())
}

fn checked_ip(ip: IpAddr, policy: UrlPolicy) -> Result<String, EndpointError> {
    if !policy.allow_private && forbidden_address(ip) {
        return Err(EndpointError::Refused(format!(
            "it points at {ip}, an address of a private, loopback, link-local or reserved network"
        )));
    }
    Ok(ip.to_string())
}

/// Why an endpoint's fields were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// A field is not of its form (a URL that is not one, a description too long).
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The URL is one, but may not receive deliveries (the rules, or the service's policy),
    /// with why.
    #[error("`url` is refused: {0}")]
    Refused(String),
}

/// Whether a delivery must not go to `ip`: an address that is not a public unicast one
/// (loopback, unspecified, private, shared (CGNAT), link-local with the clouds' metadata
/// service, multicast, broadcast, documentation, benchmarking, reserved, the 6to4 relay; IPv6's
/// unique-local, link-local, site-local, multicast and discard-only ranges, and IPv4 addresses
/// mapped, translated or tunnelled into IPv6: NAT64, 6to4, Teredo).
pub fn forbidden_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => forbidden_v4(ip),
        IpAddr::V6(ip) => forbidden_v6(ip),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99) // the 6to4 relay anycast (deprecated)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    // The local-use NAT64 range (64:ff9b:1::/48) reaches whatever its operator maps it to.
    if segments[..3] == [0x64, 0xff9b, 1] {
        return true;
    }
    // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., high, low] = segments;
        let v4 = Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
        return forbidden_v4(v4);
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local (fc00::/7)
        || (segments[0] & 0xffc0) == 0xfe80 // link-local (fe80::/10)
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (fec0::/10, deprecated)
        || segments[0] == 0x2001 && segments[1] == 0x0db8 // documentation
        || segments[0] == 0x2002 // 6to4: an IPv4 address inside
        || segments[..2] == [0x2001, 0] // Teredo (2001::/32): a tunnel to an IPv4 address
        || segments[..4] == [0x100, 0, 0, 0] // discard-only (100::/64)
        || segments[..2] == [0, 0] // IPv4-compatible and other reserved forms
}

/// A webhook signing secret: 32 random bytes, shown once as `whsec_` + base64 (standard
/// alphabet, padded), the form Standard Webhooks libraries read. Its `Debug` output leaves the
/// key out.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(Vec<u8>);

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(hidden)")
    }
}

impl SigningSecret {
    /// A secret from random bytes (24 to 64 of them).
    pub fn from_random_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes.to_vec())
    }

    /// The key's bytes, for signing.
    pub fn key(&self) -> &[u8] {
        &self.0
    }

    /// `whsec_` + base64 of the key: how it is shown to the endpoint's owner, once.
    pub fn reveal(&self) -> String {
        format!("whsec_{}", STANDARD.encode(&self.0))
    }

    /// The stored form: base64 of the key.
    pub fn to_stored(&self) -> String {
        STANDARD.encode(&self.0)
    }

    /// Reads the stored form back; `None` if it is not base64 of 24 to 64 bytes.
    pub fn from_stored(stored: &str) -> Option<Self> {
        let key = STANDARD.decode(stored).ok()?;
        (24..=64).contains(&key.len()).then_some(Self(key))
    }
}

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
    if text.chars().count() > MAX_DESCRIPTION {
        return Err(ValidationError::invalid(
            "description",
            "must be at most 200 characters",
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(ValidationError::invalid(
            "description",
            "must not contain control characters",
        ));
    }
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
    #[serde(with = "optional_rfc3339", default)]
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

string_enum! {
    /// Where a delivery stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "lowercase")]
    pub enum DeliveryState in "state" {
        /// Waiting for its next attempt.
        Pending = "pending",
        /// Answered `2xx`.
        Delivered = "delivered",
        /// Given up on: its retries ran out, or the endpoint answered `410 Gone`.
        Failed = "failed",
    }
}

/// One event on its way to one endpoint: the delivery log's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Assigned by the service.
    pub id: i64,
    /// The event's id: `webhook-id` on every attempt (receivers deduplicate by it).
    pub event_id: String,
    /// What happened.
    pub event_type: EventType,
    /// The endpoint.
    pub endpoint_id: i64,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made.
    #[serde(rename = "attemptCount")]
    pub attempts: u32,
    /// The next attempt, while pending.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    #[serde(with = "optional_rfc3339", default)]
    pub next_attempt_at: Option<i64>,
    /// The last attempt's HTTP status, when it got an answer.
    pub last_status: Option<u16>,
    /// The last attempt's time to an answer (or failure), in milliseconds.
    pub last_latency_ms: Option<u32>,
    /// Why the last attempt failed, when it did.
    pub last_error: Option<String>,
    /// When the event happened.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(with = "rfc3339")]
    pub created_at: i64,
    /// The event's body, exactly as it is sent.
    #[serde(skip)]
    pub body: String,
}

/// One attempt to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// When it was made.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(with = "rfc3339")]
    pub attempted_at: i64,
    /// The HTTP status it got, if it got an answer.
    pub status: Option<u16>,
    /// Time to the answer (or the failure), in milliseconds.
    pub latency_ms: u32,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// A delivery with its attempts (the latest hundred, oldest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRecord {
    /// The delivery.
    #[serde(flatten)]
    pub delivery: Delivery,
    /// Its attempts.
    pub attempts: Vec<Attempt>,
}

/// A delivery due now, claimed by one sender until `lease_until`: what sending it needs.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    /// The delivery.
    pub id: i64,
    /// `webhook-id`.
    pub event_id: String,
    /// What happened.
    pub event_type: EventType,
    /// The body to send.
    pub body: String,
    /// The endpoint.
    pub endpoint_id: i64,
    /// Whose endpoint it is.
    pub owner: EndpointOwner,
    /// Where to send it.
    pub url: String,
    /// The secrets to sign with: the current one, and the previous while its grace lasts.
    pub secrets: Vec<SigningSecret>,
    /// Attempts made since it was created or last redelivered: the place in the schedule.
    pub tries: u32,
    /// The claim's token: the result is recorded only by the claim that holds it.
    pub lease: i64,
}

/// A claim of due deliveries: at most `limit` due at `now`, held until `lease_until` by the
/// claimant `token` (random per claim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryClaim {
    /// Now, Unix seconds.
    pub now: i64,
    /// Until when the claimed deliveries are held (Unix seconds).
    pub lease_until: i64,
    /// The most claimed.
    pub limit: u32,
    /// The claim's token.
    pub token: i64,
    /// Endpoints whose deliveries are not to be claimed now (the sender has as many under way
    /// to each as it allows one endpoint, or is letting it rest after it did not answer).
    pub skip_endpoints: Vec<i64>,
    /// The most deliveries of one owner the claim may take: the sender's bound on one owner's
    /// attempts under way (so that one owner's slow or dead receivers cannot take every slot).
    pub per_owner: u32,
    /// For owners with attempts under way already: how many more the claim may take (0: none
    /// now). An owner not listed has [`per_owner`](Self::per_owner).
    pub owner_room: Vec<(EndpointOwner, u32)>,
}

impl DeliveryClaim {
    /// How many of `owner`'s deliveries the claim may take.
    pub fn room(&self, owner: EndpointOwner) -> u32 {
        self.owner_room
            .iter()
            .find(|(listed, _)| *listed == owner)
            .map_or(self.per_owner, |(_, room)| *room)
    }

    /// The owners with no room: none of their deliveries is to be claimed now.
    pub fn full_owners(&self) -> impl Iterator<Item = EndpointOwner> + '_ {
        self.owner_room
            .iter()
            .filter(|(_, room)| *room == 0)
            .map(|(owner, _)| *owner)
    }
}

/// Which of `candidates` (due deliveries' ids with their endpoints' owners, the longest due
/// first) a claim takes: owners in turn, so that no owner's backlog delays another's
/// deliveries. Owners with the most room come first (those with fewer attempts under way),
/// then those whose deliveries have waited longest; each round takes the next delivery of each
/// owner with room left, until the claim's limit. Returns the ids taken.
pub fn take_in_turn(candidates: &[(i64, EndpointOwner)], claim: &DeliveryClaim) -> Vec<i64> {
    // Each owner, its room, and its candidates in due order; owners in order of first appearance.
    let mut queues: Vec<(EndpointOwner, u32, Vec<i64>)> = Vec::new();
    for &(id, owner) in candidates {
        match queues.iter_mut().find(|(listed, _, _)| *listed == owner) {
            Some((_, _, ids)) => ids.push(id),
            None => queues.push((owner, claim.room(owner), vec![id])),
        }
    }
    // Stable: among owners with as much room, the longest waiting first.
    queues.sort_by_key(|(_, room, _)| std::cmp::Reverse(*room));
    let limit = usize::try_from(claim.limit).unwrap_or(usize::MAX);
    let mut taken = Vec::with_capacity(limit.min(candidates.len()));
    for round in 0.. {
        let before = taken.len();
        for (_, room, ids) in &queues {
            if taken.len() >= limit {
                return taken;
            }
            if round < usize::try_from(*room).unwrap_or(usize::MAX)
                && let Some(&id) = ids.get(round)
            {
                taken.push(id);
            }
        }
        if taken.len() == before {
            break;
        }
    }
    taken
}

/// What became of an attempt, and so of its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// Answered `2xx`: delivered.
    Delivered,
    /// Failed; tried again at this time (Unix seconds).
    RetryAt(i64),
    /// Failed, and no retry is left: failed. The endpoint is turned off too when nothing was
    /// delivered to it since this delivery's event happened (it failed throughout).
    GaveUp,
    /// The endpoint answered `410 Gone`: the delivery failed and the endpoint is turned off.
    Gone,
}

/// An attempt's record: the delivery, the claim that made it, and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The delivery.
    pub delivery: i64,
    /// The claim's token.
    pub lease: i64,
    /// When it was made (Unix seconds).
    pub attempted_at: i64,
    /// The HTTP status, if any.
    pub status: Option<u16>,
    /// Time taken, in milliseconds.
    pub latency_ms: u32,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// What becomes of the delivery.
    pub result: AttemptResult,
}

/// The deliveries waiting, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Deliveries pending (to enabled endpoints).
    pub pending: u64,
    /// When the oldest of them was created (Unix seconds), if any.
    pub oldest_created_at: Option<i64>,
}

/// The waits between attempts after a failure, in seconds: the first retry within seconds, then
/// minutes, then hours (the Standard Webhooks schedule, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
/// extended to reach about three days): ten attempts over 75.6 hours.
pub const RETRY_SCHEDULE: [u64; 9] = [5, 300, 1_800, 7_200, 18_000, 36_000, 50_400, 72_000, 86_400];

/// How long to wait after the `tries`-th failed attempt (1 for the first), with `jitter` in
/// `0.0..1.0` spreading it over ±20% so that many failed deliveries do not return together;
/// `None` when the schedule has run out.
pub fn retry_delay(tries: u32, jitter: f64) -> Option<Duration> {
    let index = usize::try_from(tries.checked_sub(1)?).ok()?;
    let base = *RETRY_SCHEDULE.get(index)?;
    let factor = 0.8 + 0.4 * jitter.clamp(0.0, 1.0);
    Some(Duration::from_secs_f64(base as f64 * factor))
}

/// Builds an event's body: `{"type", "timestamp", "data"}`, `data` the resource as the API
/// returns it, `timestamp` when it happened (RFC 3339).
pub fn event_body(kind: EventType, at: SystemTime, data: &impl Serialize) -> String {
    #[derive(Serialize)]
    struct Body<'a, T> {
        #[serde(rename = "type")]
        kind: &'static str,
        timestamp: String,
        data: &'a T,
    }
    let body = Body {
        kind: kind.as_str(),
        timestamp: humantime::format_rfc3339_millis(at).to_string(),
        data,
    };
    // The service's resources always serialise (no map with non-string keys, no failing
    // serialiser); an empty object would still be a valid body.
    serde_json::to_string(&body).unwrap_or_else(|_| String::from("{}"))
}

/// An event to record with the change that produces it (in its transaction): the body, its
/// type, and the key whose it is (`None`: no key's; only the operators' endpoints get it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// What happened.
    pub kind: EventType,
    /// Whose it is.
    pub owner: Option<i64>,
    /// The body to send.
    pub body: String,
}

impl NewEvent {
    /// The event of `kind` about `data` (a resource), owned by `owner`, happening now.
    pub fn now(kind: EventType, owner: Option<i64>, data: &impl Serialize) -> Self {
        Self {
            kind,
            owner,
            body: event_body(kind, SystemTime::now(), data),
        }
    }
}

/// A time in Unix seconds on the wire: RFC 3339, in whole seconds.
mod rfc3339 {
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
}

/// [`rfc3339`], or `null`.
mod optional_rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(secs: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match secs {
            Some(secs) => super::rfc3339::serialize(secs, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        struct Time(#[serde(with = "super::rfc3339")] i64);
        Ok(Option::<Time>::deserialize(d)?.map(|Time(secs)| secs))
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    const OPEN: UrlPolicy = UrlPolicy {
        allow_http: false,
        allow_private: false,
    };

    #[test]
    fn event_sets_round_trip_through_storage_and_json() {
        let set = EventSet::new([EventType::PetCreated, EventType::OrderPlaced]).expect("valid");
        assert_eq!(set.to_stored(), ",order.placed,pet.created,");
        assert_eq!(EventSet::from_stored(&set.to_stored()), Some(set));
        assert_eq!(
            serde_json::to_string(&set).expect("valid"),
            r#"["order.placed","pet.created"]"#
        );
        let back: EventSet =
            serde_json::from_str(r#"["pet.created","order.placed","pet.created"]"#).expect("valid");
        assert_eq!(back, set);
        assert!(serde_json::from_str::<EventSet>("[]").is_err());
        assert!(serde_json::from_str::<EventSet>(r#"["order.shipped"]"#).is_err());
        assert_eq!(EventSet::ALL.iter().count(), EventType::ALL.len());
        assert!(set.contains(EventType::OrderPlaced) && !set.contains(EventType::OrderApproved));
    }

    #[test]
    fn urls_must_be_https_public_and_plain() {
        let ok = EndpointUrl::parse("https://Example.COM:8443/hooks?x=1", OPEN).expect("valid");
        assert_eq!(ok.host(), "example.com");
        assert_eq!(ok.port(), 8443);
        assert_eq!(
            EndpointUrl::parse("https://example.com/h", OPEN)
                .expect("valid")
                .port(),
            443
        );
        for refused in [
            "http://example.com/h",
            "ftp://example.com/h",
            "https://user:pw@example.com/h",
            "https://example.com/h#part",
            "https://127.0.0.1/h",
            "https://10.1.2.3/h",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/h",
            "https://[::ffff:10.0.0.1]/h",
            "https://[fd00:ec2::254]/h",
            "https://localhost/h",
            "https://api.localhost./h",
            "https://0.0.0.0/h",
            "not a url",
            "/relative",
        ] {
            assert!(
                EndpointUrl::parse(refused, OPEN).is_err(),
                "{refused} was accepted"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LENGTH));
        assert!(EndpointUrl::parse(&long, OPEN).is_err());
        // Within the bound as sent, past it once percent-encoded.
        let grows = format!(
            "https://example.com/{}",
            "é".repeat(MAX_URL_LENGTH / 2 - 20)
        );
        assert!(grows.len() <= MAX_URL_LENGTH);
        assert!(EndpointUrl::parse(&grows, OPEN).is_err());
        let lax = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let local = EndpointUrl::parse("http://127.0.0.1:9000/h", lax).expect("valid");
        assert_eq!(local.ip(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(local.port(), 9000);
    }

    #[test]
    fn forbidden_addresses_are_those_of_no_public_host() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::808:808",
            "2002:a00:1::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "192.88.99.1",
        ] {
            assert!(
                forbidden_address(ip.parse().expect("valid")),
                "{ip} allowed"
            );
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert!(
                !forbidden_address(ip.parse().expect("valid")),
                "{ip} refused"
            );
        }
    }

    #[test]
    fn one_receiver_whatever_its_query() {
        for (a, b) in [
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com/h?1",
            ),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com./h/",
            ),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com:443/h",
            ),
        ] {
            assert!(same_receiver(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("https://hooks.example.com/h", "https://hooks.example.com/g"),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com:8443/h",
            ),
            ("https://hooks.example.com/h", "http://hooks.example.com/h"),
        ] {
            assert!(!same_receiver(a, b), "{a} {b}");
        }
    }

    #[test]
    fn logged_urls_leave_the_query_out() {
        assert_eq!(
            loggable_url("https://hooks.example.com:8443/in?token=s3cret#x"),
            "https://hooks.example.com:8443/in"
        );
        assert_eq!(
            loggable_url("https://hooks.slack.com/services/T000/B000/s3cret"),
            "https://hooks.slack.com/services/…"
        );
        assert_eq!(loggable_url("https://example.com"), "https://example.com/");
        assert_eq!(
            loggable_url("https://u:pw@example.com/h?t=1"),
            "https://example.com/h"
        );
        assert_eq!(loggable_url("no url?token=s3cret"), "(not a URL)");
    }

    #[test]
    fn claims_take_owners_in_turn_within_their_room() {
        let (a, b, c) = (
            EndpointOwner::Key(1),
            EndpointOwner::Key(2),
            EndpointOwner::Operator,
        );
        let claim = |limit, owner_room| DeliveryClaim {
            now: 0,
            lease_until: 0,
            limit,
            token: 1,
            skip_endpoints: Vec::new(),
            per_owner: 3,
            owner_room,
        };
        // A's backlog is older, but B and the operators get their turn in the first round.
        let candidates = [
            (1, a),
            (2, a),
            (3, a),
            (4, a),
            (5, b),
            (6, a),
            (7, c),
            (8, b),
        ];
        assert_eq!(take_in_turn(&candidates, &claim(4, vec![])), [1, 5, 7, 2]);
        assert_eq!(
            take_in_turn(&candidates, &claim(16, vec![])),
            [1, 5, 7, 2, 8, 3],
            "at most per_owner of each"
        );
        // An owner with attempts under way has less room, and comes after those with more.
        assert_eq!(
            take_in_turn(&candidates, &claim(16, vec![(a, 1), (c, 0)])),
            [5, 1, 8]
        );
        assert_eq!(take_in_turn(&candidates, &claim(1, vec![(a, 2)])), [5]);
        assert!(take_in_turn(&[], &claim(4, vec![])).is_empty());
        let full = claim(4, vec![(a, 0), (b, 2)]);
        assert_eq!(full.full_owners().collect::<Vec<_>>(), [a]);
        assert_eq!((full.room(a), full.room(b), full.room(c)), (0, 2, 3));
    }

    #[test]
    fn descriptions_are_short_and_show_what_they_say() {
        let described = |text: &str| {
            NewEndpoint {
                url: "https://example.com/h".into(),
                events: EventSet::ALL,
                description: text.into(),
            }
            .validate(OPEN)
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

    #[test]
    fn secrets_show_as_standard_webhooks_secrets() {
        let secret = SigningSecret::from_random_bytes([7; 32]);
        assert!(secret.reveal().starts_with("whsec_"));
        assert_eq!(
            SigningSecret::from_stored(&secret.to_stored()),
            Some(secret.clone())
        );
        assert_eq!(SigningSecret::from_stored("c2hvcnQ="), None);
        assert_eq!(format!("{secret:?}"), "SigningSecret(hidden)");
    }

    #[test]
    fn retries_start_within_seconds_and_end_after_about_three_days() {
        assert_eq!(retry_delay(0, 0.5), None);
        assert_eq!(retry_delay(1, 0.5), Some(Duration::from_secs(5)));
        assert!(retry_delay(1, 0.0).expect("valid") >= Duration::from_secs(4));
        assert!(retry_delay(1, 1.0).expect("valid") <= Duration::from_secs(6));
        let total: u64 = RETRY_SCHEDULE.iter().sum();
        assert!((70 * 3600..80 * 3600).contains(&total), "{total}");
        assert_eq!(retry_delay(RETRY_SCHEDULE.len() as u32 + 1, 0.5), None);
    }

    #[test]
    fn bodies_carry_type_timestamp_and_data() {
        let body = event_body(
            EventType::OrderPlaced,
            UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            &serde_json::json!({"id": 1}),
        );
        assert_eq!(
            body,
            r#"{"type":"order.placed","timestamp":"2023-11-14T22:13:20.123Z","data":{"id":1}}"#
        );
    }
}
