//! When the sender makes a claim that passes endpoints or owners over ([`PassingOver`]).

use std::time::{Duration, Instant};

use petstore_domain::webhook::EndpointOwner;

/// What a claim passes over: endpoints (at their bound, or resting) and owners with no room
/// (at their bound, or held to the slots kept for owners with nothing under way).
#[derive(Debug, Default)]
pub(crate) struct PassedOver {
    pub(crate) endpoints: Vec<i64>,
    pub(crate) owners: Vec<EndpointOwner>,
}

impl PassedOver {
    fn is_empty(&self) -> bool {
        self.endpoints.is_empty() && self.owners.is_empty()
    }

    /// Whether it passes over all that `other` does (and maybe more).
    fn covers(&self, other: &Self) -> bool {
        other.endpoints.iter().all(|id| self.endpoints.contains(id))
            && other.owners.iter().all(|owner| self.owners.contains(owner))
    }
}

/// Whether a claim that passes endpoints or owners over is worth making. Such a claim reads
/// every due delivery of what it passes over to find none of them: with one endpoint's backlog
/// of thousands at its bound, each such claim read them all, after every claim that filled the
/// endpoint up, to find nothing else due. Once one finds nothing, no claim passing over as much
/// (the same, or more) is made until the poll interval has passed; a claim in which one of them
/// has room again is made at once (their own claims go on as their attempts end), and the
/// sender's next look comes when the interval ends: another endpoint's delivery made meanwhile
/// waits at most that long, as it would with nothing else due.
#[derive(Debug, Default)]
pub(crate) struct PassingOver {
    /// What the last claim that found nothing passed over, and until when it holds.
    found_nothing: Option<(PassedOver, Instant)>,
}

impl PassingOver {
    /// Whether a claim passing `passed` over may be made at `now`.
    pub(crate) fn may_claim(&self, passed: &PassedOver, now: Instant) -> bool {
        match &self.found_nothing {
            Some((before, until)) if now < *until && !passed.is_empty() => !passed.covers(before),
            _ => true,
        }
    }

    /// A claim that passed `passed` over found nothing (`empty`, then no claim passing over as
    /// much is made before `until`), or some: then, if it passed over as much as the one that
    /// found nothing, what lies behind is due again.
    pub(crate) fn claimed(&mut self, passed: PassedOver, empty: bool, until: Instant) {
        if passed.is_empty() {
            return;
        }
        if empty {
            self.found_nothing = Some((passed, until));
        } else if self
            .found_nothing
            .as_ref()
            .is_some_and(|(before, _)| passed.covers(before))
        {
            self.found_nothing = None;
        }
    }

    /// How long the sender waits, with nothing claimed, for an attempt to end: at most `poll`,
    /// and no longer than a claim passing over is held back.
    pub(crate) fn wait(&self, poll: Duration, now: Instant) -> Duration {
        match &self.found_nothing {
            Some((_, until)) if *until > now => poll.min(*until - now),
            _ => poll,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_passing_over_waits_once_one_found_nothing_else() {
        let over = |endpoints: &[i64], owners: &[EndpointOwner]| PassedOver {
            endpoints: endpoints.to_vec(),
            owners: owners.to_vec(),
        };
        let busy = EndpointOwner::Key(1);
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        let poll = Duration::from_secs(1);
        let mut passing_over = PassingOver::default();
        assert!(passing_over.may_claim(&over(&[7], &[]), now), "at first");
        passing_over.claimed(over(&[7], &[]), false, later);
        assert!(
            passing_over.may_claim(&over(&[7], &[]), now),
            "it found some"
        );
        passing_over.claimed(over(&[7, 8], &[busy]), true, later);
        assert!(
            !passing_over.may_claim(&over(&[7, 8], &[busy]), now),
            "it found nothing"
        );
        assert!(
            !passing_over.may_claim(&over(&[8, 9, 7], &[busy]), now),
            "passing over more"
        );
        assert!(
            passing_over.may_claim(&over(&[8], &[busy]), now),
            "7 has room again: its deliveries may be due"
        );
        assert!(
            passing_over.may_claim(&over(&[7, 8], &[]), now),
            "the owner has room again"
        );
        assert!(
            passing_over.may_claim(&over(&[], &[]), now),
            "passing nothing over"
        );
        assert!(
            passing_over.may_claim(&over(&[7, 8], &[busy]), later),
            "after the interval"
        );
        assert_eq!(passing_over.wait(poll, now + poll / 4), poll * 3 / 4);
        assert_eq!(passing_over.wait(poll, later), poll);
        // What a claim passing over less finds says nothing of what lies behind the rest.
        passing_over.claimed(over(&[8], &[busy]), false, later);
        passing_over.claimed(over(&[], &[]), true, later);
        assert!(!passing_over.may_claim(&over(&[7, 8], &[busy]), now));
        // One passing over as much that finds some: what lies behind is due again.
        passing_over.claimed(over(&[7, 8, 9], &[busy]), false, later);
        assert!(passing_over.may_claim(&over(&[7, 8], &[busy]), now));
        assert_eq!(passing_over.wait(poll, now), poll);
    }
}
