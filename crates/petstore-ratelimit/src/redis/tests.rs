//! The script replies, read.

use super::batch::*;
use super::script::*;
use super::*;
use crate::Hit;
use petstore_domain::{Ban, Counts};

fn counts(allowed: bool, minute_used: u32, day_used: u32, rejected: u32) -> Counts {
    Counts {
        allowed,
        minute_used,
        day_used,
        rejected,
    }
}

#[test]
fn a_reply_holds_seven_values_per_group() {
    let reply = "1,2,3,40,0,0,0,2,0,0,0,0,1700000600,2,1,0,60,90,5,100000000000000,1";
    let groups = group_hits(reply, [2, 4, 1].into_iter()).expect("three groups");
    let ban = Ban {
        until: 1_700_000_600,
        level: 2,
    };
    assert_eq!(
        groups,
        [
            GroupHit::Counted {
                fitted: 2,
                before: counts(false, 3, 40, 0),
                previous_ban: None,
            },
            GroupHit::Banned(ban),
            GroupHit::Counted {
                fitted: 0,
                before: counts(false, 60, 90, 5),
                previous_ban: Some(Ban {
                    until: 100_000_000_000_000,
                    level: 1,
                }),
            },
        ]
    );
}

#[test]
fn each_request_of_a_group_gets_the_counts_it_would_have_got_alone() {
    let group = GroupHit::Counted {
        fitted: 2,
        before: counts(false, 3, 40, 7),
        previous_ban: None,
    };
    let hits: Vec<Hit> = (0..4).map(|nth| group.nth(nth)).collect();
    let expected = [
        counts(true, 4, 41, 0),
        counts(true, 5, 42, 0),
        counts(false, 5, 42, 8),
        counts(false, 5, 42, 9),
    ];
    for (hit, counts) in hits.into_iter().zip(expected) {
        assert_eq!(
            hit,
            Hit::Counted {
                counts,
                previous_ban: None
            }
        );
    }
    let ban = Ban {
        until: 1_700_000_600,
        level: 2,
    };
    assert_eq!(GroupHit::Banned(ban).nth(5), Hit::Banned(ban));
}

#[test]
fn each_subject_is_counted_in_the_order_its_requests_came() {
    let limits = RateLimits::custom(10, 100).expect("limits");
    let other_limits = RateLimits::custom(5, 100).expect("limits");
    let (a, x) = (Subject::Key(1), Subject::Key(2));
    let batch = [
        (a, limits, 100),
        (x, limits, 100),
        (a, limits, 100),
        (a, limits, 101),
        (a, limits, 100),
        (a, other_limits, 100),
        (a, other_limits, 100),
    ];
    let batch = batch
        .into_iter()
        .map(|(subject, limits, now)| Pending {
            subject,
            limits,
            now,
            answer: oneshot::channel().0,
        })
        .collect();
    let groups: Vec<_> = Group::of(batch)
        .into_iter()
        .map(|group| (group.subject, group.limits, group.now, group.answers.len()))
        .collect();
    assert_eq!(
        groups,
        [
            (a, limits, 100, 2),
            (x, limits, 100, 1),
            (a, limits, 101, 1),
            (a, limits, 100, 1),
            (a, other_limits, 100, 2),
        ]
    );
}

#[test]
fn a_peek_reply_holds_six_values() {
    assert_eq!(
        peeked("0,60,90,5,0,0").expect("a hit"),
        Hit::Counted {
            counts: counts(false, 60, 90, 5),
            previous_ban: None,
        }
    );
}

#[test]
fn a_ban_start_answers_nothing_or_the_ban_in_force() {
    assert_eq!(in_force("").expect("started"), None);
    assert_eq!(
        in_force("100000000000000:3").expect("in force"),
        Some(Ban {
            until: 100_000_000_000_000,
            level: 3,
        })
    );
    for reply in ["1", "1:", ":1", "1:x", "1e+14:1", "1:2:3", "0:1"] {
        assert!(in_force(reply).is_err(), "{reply}");
    }
}

#[test]
fn a_malformed_reply_is_an_error_not_a_guess() {
    for (reply, sizes) in [
        ("1,0,3,40,0,0,0", &[1, 1][..]),
        ("1,0,3,40,0,0", &[1]),
        ("1,0,3,40,0,0,0,1", &[1]),
        ("1,0,3,x,0,0,0", &[1]),
        ("", &[1]),
        ("1,0,3,40,0,0,-1", &[1]),
        ("1,0,3,40,0,1e+14,1", &[1]),
        ("0,0,3,40,0,0,0", &[1]),
        ("2,0,0,0,0,0,0", &[1]),
        ("1,4,3,40,0,0,0", &[3]),
    ] {
        assert!(
            matches!(
                group_hits(reply, sizes.iter().copied()),
                Err(RoundTripError::Reply(_))
            ),
            "{reply:?} for {sizes:?}"
        );
    }
    for reply in ["1,3,40,0,0", "1,3,40,0,0,0,1", ""] {
        assert!(
            matches!(peeked(reply), Err(RoundTripError::Reply(_))),
            "{reply:?}"
        );
    }
}
