//! What happened: the event types ([`EventType`]), the set an endpoint subscribes to
//! ([`EventSet`]), and the event a change emits ([`NewEvent`], its body [`event_body`]): which
//! type an order's change emits ([`EventType::of_order`]) and whose the event is.

use std::borrow::Cow;
use std::time::SystemTime;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ValidationError;
use crate::order::{Order, OrderAction};
use crate::pet::Pet;
use crate::trace::TraceParent;

string_enum! {
    /// What happened. The strings are a stable contract with receivers.
    pub enum EventType in "events" {
        /// An order was placed (`POST /store/orders`).
        OrderPlaced = "order.placed",
        /// An operator approved an order.
        OrderApproved = "order.approved",
        /// An operator delivered an order.
        OrderDelivered = "order.delivered",
        /// An order was cancelled (by its key or an operator).
        OrderCancelled = "order.cancelled",
        /// A pet was created (`POST /pets`).
        PetCreated = "pet.created",
    }
}

impl EventType {
    /// The event an order's change by `action` emits: `order.placed`, `order.approved`,
    /// `order.delivered` or `order.cancelled`.
    pub fn of_order(action: OrderAction) -> Self {
        match action {
            OrderAction::Place => Self::OrderPlaced,
            OrderAction::Approve => Self::OrderApproved,
            OrderAction::Deliver => Self::OrderDelivered,
            OrderAction::Cancel => Self::OrderCancelled,
        }
    }
}

/// The events an endpoint subscribes to: a non-empty set of [`EventType`]s, sent as a list in
/// declaration order.
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
    /// The trace of the change that produced it, when traces are exported: each attempt's
    /// span links back to it.
    pub trace: Option<TraceParent>,
}

impl NewEvent {
    /// The event of `kind` about `data` (a resource), owned by `owner`, happening `at`.
    pub fn at(at: SystemTime, kind: EventType, owner: Option<i64>, data: &impl Serialize) -> Self {
        Self {
            kind,
            owner,
            body: event_body(kind, at, data),
            trace: None,
        }
    }

    /// The event, made in `trace`.
    pub fn in_trace(self, trace: Option<TraceParent>) -> Self {
        Self { trace, ..self }
    }

    /// The event of `order`'s change by `action` ([`EventType::of_order`]) `at`, about the order
    /// as the change left it, owned by the key that placed it.
    pub fn order_changed(at: SystemTime, action: OrderAction, order: &Order) -> Self {
        Self::at(at, EventType::of_order(action), order.owner, order)
    }

    /// The `pet.created` event of `pet` `at`, owned by `creator`, the key that created it
    /// (`None`: no key's).
    pub fn pet_created(at: SystemTime, pet: &Pet, creator: Option<i64>) -> Self {
        Self::at(at, EventType::PetCreated, creator, pet)
    }
}

/// An event's body with its resource's id left out, for a resource that the database numbers
/// as it writes it: the body is `before`, the id in decimal, then `after`. A pet and its
/// `pet.created` deliveries are written in one statement so (PostgreSQL's storage), the
/// database joining the parts around the id it gives the pet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyAroundId {
    /// Everything before the id: the event's type and time, and `"data":{"id":`.
    pub before: String,
    /// Everything after it: the rest of the resource, and the body's end.
    pub after: String,
}

impl BodyAroundId {
    /// The `pet.created` body of `pet` (whose id is ignored) `at`, around its id: joined around
    /// an id, what [`NewEvent::pet_created`] makes of the pet under that id. `None` only if
    /// the body's shape changed so that the resource is no longer its last member, with its id
    /// first (a test holds it there).
    pub fn pet_created(at: SystemTime, pet: &Pet) -> Option<Self> {
        let pet = Pet {
            id: 0,
            ..pet.clone()
        };
        let body = event_body(EventType::PetCreated, at, &pet);
        let data = serde_json::to_string(&pet).ok()?;
        // `data` is the body's last member: the body ends with it and its closing brace.
        let before = body.strip_suffix('}')?.strip_suffix(data.as_str())?;
        let after = data.strip_prefix(r#"{"id":0"#)?;
        Some(Self {
            before: format!(r#"{before}{{"id":"#),
            after: format!("{after}}}"),
        })
    }

    /// The body, joined around `id`.
    pub fn with_id(&self, id: i64) -> String {
        format!("{}{id}{}", self.before, self.after)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn event_sets_round_trip_through_json() {
        let set = EventSet::new([EventType::PetCreated, EventType::OrderPlaced]).expect("valid");
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
    fn a_body_around_an_id_is_the_body_of_the_pet_under_that_id() {
        use crate::pet::PetStatus;
        let at = UNIX_EPOCH + Duration::from_millis(1_795_000_000_123);
        // Names that look like the parts a body is cut at, or like the id.
        for name in ["Rex", r#"{"id":0"#, r#""data":{"id":0}"#, "0}", "}\"\\"] {
            let pet = Pet {
                id: 0,
                name: name.to_owned(),
                category_id: 7,
                status: PetStatus::Pending,
            };
            let around = BodyAroundId::pet_created(at, &pet).expect("the body's shape");
            for id in [1, 42, i64::MAX] {
                let numbered = Pet { id, ..pet.clone() };
                assert_eq!(
                    around.with_id(id),
                    NewEvent::pet_created(at, &numbered, None).body,
                    "{name:?} under {id}"
                );
            }
        }
    }

    #[test]
    fn each_order_action_emits_its_own_event() {
        let emitted: Vec<&str> = OrderAction::ALL
            .into_iter()
            .map(|action| EventType::of_order(action).as_str())
            .collect();
        assert_eq!(
            emitted,
            [
                "order.placed",
                "order.approved",
                "order.delivered",
                "order.cancelled"
            ]
        );
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
