//! Claims: what sending a due delivery needs ([`DueDelivery`]), a sender's claim of due
//! deliveries ([`DeliveryClaim`]: how many, under which lease, with each owner's room), and which
//! of them it takes ([`take_in_turn`]: owners in turn).

use super::endpoint::EndpointOwner;
use super::events::EventType;
use super::secret::SigningSecret;
use crate::trace::TraceParent;

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
    /// The trace of the change that recorded it, when it was made in one: its attempts' spans
    /// link to it.
    pub trace: Option<TraceParent>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
