//! How the webhook tables hold what the domain's types say: an event set as text that `LIKE`
//! searches, an endpoint's owner as a key's id (0 for the operators'). Encodings only: the
//! domain's types know nothing of them.

use petstore_domain::webhook::{EndpointOwner, EventSet, EventType};

/// The `owner_key_id` of the operators' endpoints (no key has id 0).
pub(super) const OPERATORS: i64 = 0;

/// The stored owner of `owner`'s endpoints.
pub(super) fn owner_id(owner: EndpointOwner) -> i64 {
    owner.key().unwrap_or(OPERATORS)
}

/// The owner a stored `owner_key_id` names.
pub(super) fn owner_of(stored: i64) -> EndpointOwner {
    match stored {
        OPERATORS => EndpointOwner::Operator,
        key => EndpointOwner::Key(key),
    }
}

/// How a set is stored: its types between commas, with a comma at each end
/// (`,order.placed,pet.created,`), so that [`events_pattern`] finds one with `LIKE`.
pub(super) fn events_to_stored(events: EventSet) -> String {
    let mut stored = String::from(",");
    for kind in events.iter() {
        stored.push_str(kind.as_str());
        stored.push(',');
    }
    stored
}

/// Reads [`events_to_stored`]'s form back; `None` when it holds no known type.
pub(super) fn events_from_stored(stored: &str) -> Option<EventSet> {
    let kinds = stored
        .split(',')
        .filter(|part| !part.is_empty())
        .map(str::parse::<EventType>)
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    EventSet::new(kinds).ok()
}

/// The `LIKE` pattern that matches a stored set holding `kind`.
pub(super) fn events_pattern(kind: EventType) -> String {
    format!("%,{},%", kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_sets_round_trip_through_storage() {
        let set = EventSet::new([EventType::PetCreated, EventType::OrderPlaced]).expect("valid");
        assert_eq!(events_to_stored(set), ",order.placed,pet.created,");
        assert_eq!(events_from_stored(&events_to_stored(set)), Some(set));
        assert_eq!(
            events_from_stored(&events_to_stored(EventSet::ALL)),
            Some(EventSet::ALL)
        );
        assert_eq!(events_from_stored(",,"), None);
        assert_eq!(events_from_stored(",order.shipped,"), None);
        assert_eq!(events_pattern(EventType::PetCreated), "%,pet.created,%");
    }

    #[test]
    fn the_operators_are_stored_as_owner_0() {
        for owner in [EndpointOwner::Operator, EndpointOwner::Key(7)] {
            assert_eq!(owner_of(owner_id(owner)), owner);
        }
        assert_eq!(owner_id(EndpointOwner::Operator), OPERATORS);
    }
}
