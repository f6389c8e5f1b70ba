//! The limiter over counters in memory.

use std::sync::Arc;
use std::sync::atomic::AtomicU32;

use futures_util::FutureExt;

use super::*;
use crate::{Counted, TakenBack};

const NOW: u64 = 1_700_000_000;
const LIMITS: RateLimits = RateLimits {
    per_minute: 1,
    per_day: 100,
};
/// Two refusals in a minute are tolerated; the third starts a ban of 300 seconds.
const BANS: BanPolicy = BanPolicy {
    threshold: 2,
    base_seconds: 300,
    max_seconds: 3_600,
    forgive_after_seconds: 3_600,
};
const FIRST_BAN: Ban = Ban {
    until: NOW + BANS.base_seconds,
    level: 1,
};

/// A shared store that counts (in memory) but fails to start a ban: the store failing
/// between a request's count and its ban.
struct BanStartFails(MemoryCounters);

#[async_trait(?Send)]
impl CounterStore for BanStartFails {
    async fn hit(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        self.0.hit(subject, limits, now).await
    }

    async fn peek(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted {
        self.0.peek(subject, limits, now).await
    }

    async fn start_ban(&self, _: Subject, _: Option<Ban>, _: u64) -> BanStarted {
        Err(CounterError::new("connection reset by peer"))
    }

    async fn revalidated(&self, subject: Subject, allowance: RateLimits, now: u64) -> TakenBack {
        self.0.revalidated(subject, allowance, now).await
    }
}

fn limiter(on_failure: FailurePolicy) -> Limiter {
    let counters = MemoryCounters::new(BANS.forgive_after_seconds, 100);
    Limiter::shared(
        Box::new(BanStartFails(counters)),
        on_failure,
        BANS,
        LIMITS,
        AddressPolicy::default(),
    )
}

/// What the keys' storage does with a key's ban.
enum KeyStorage {
    /// Records it.
    Records,
    /// Answers, but has no ban in force after recording it.
    Loses,
    /// Fails.
    Fails,
}

#[async_trait(?Send)]
impl KeyBans for KeyStorage {
    async fn ban_key(&self, _: i64, ban: Ban, _: u64) -> Result<Option<BanInForce>, BoxError> {
        match self {
            Self::Records => Ok(Some(BanInForce { ban, started: true })),
            Self::Loses => Ok(None),
            Self::Fails => Err("database is locked".into()),
        }
    }
}

/// The verdict on a request of `account` at `now` (every future here is ready at once: the
/// counters are in memory).
fn verdict(
    limiter: &Limiter,
    account: &Account,
    key_bans: &KeyStorage,
    now: u64,
) -> Result<Verdict, LimitError> {
    limiter
        .check(account, now, key_bans)
        .now_or_never()
        .expect("in memory, a decision is ready at once")
        .map(|(verdict, _)| verdict)
}

/// The verdicts on `requests` requests of `account` at [`NOW`].
fn verdicts(
    limiter: &Limiter,
    account: &Account,
    key_bans: &KeyStorage,
    requests: usize,
) -> Vec<Result<Verdict, LimitError>> {
    (0..requests)
        .map(|_| verdict(limiter, account, key_bans, NOW))
        .collect()
}

/// One allowed request, then the two refusals the policy tolerates.
fn assert_allowed_then_limited(verdicts: &[Result<Verdict, LimitError>]) {
    assert!(
        matches!(verdicts[0], Ok(Verdict::Allowed(_))),
        "{verdicts:?}"
    );
    for verdict in &verdicts[1..3] {
        assert!(matches!(verdict, Ok(Verdict::Limited(_))), "{verdicts:?}");
    }
}

fn address() -> Account {
    Account {
        subject: Subject::Address("192.0.2.7".parse().expect("ip")),
        limits: LIMITS,
        ban: None,
    }
}

fn key() -> Account {
    Account {
        subject: Subject::Key(42),
        limits: LIMITS,
        ban: None,
    }
}

/// Five requests of an address whose ban the store cannot start (`on_failure`): one allowed,
/// two refused within the policy's tolerance, then the refusals past the ban threshold.
fn five_whose_ban_fails(on_failure: FailurePolicy) -> (Limiter, Vec<Result<Verdict, LimitError>>) {
    let limiter = limiter(on_failure);
    let verdicts = verdicts(&limiter, &address(), &KeyStorage::Records, 5);
    assert_allowed_then_limited(&verdicts);
    (limiter, verdicts)
}

#[test]
fn an_address_ban_the_store_cannot_start_is_a_refusal_when_failing_closed() {
    let (limiter, verdicts) = five_whose_ban_fails(FailurePolicy::Closed);
    // Never served: the request that crosses the threshold, and every one after it while
    // the store cannot record the ban, is refused as the store's failure.
    for verdict in &verdicts[3..] {
        assert!(
            matches!(verdict, Err(LimitError::Counters(_))),
            "{verdicts:?}"
        );
    }
    assert_eq!(limiter.failures.load(Ordering::Relaxed), 2);
}

#[test]
fn an_address_ban_the_store_cannot_start_holds_in_memory_when_failing_open() {
    let (limiter, verdicts) = five_whose_ban_fails(FailurePolicy::Open);
    // Started in this instance's memory, and the same ban (not a longer one) after it:
    // the next request is not counted in the store, which knows of no ban.
    for verdict in &verdicts[3..] {
        assert_eq!(verdict.as_ref().ok(), Some(&Verdict::Banned(FIRST_BAN)));
    }
    assert_eq!(limiter.failures.load(Ordering::Relaxed), 1);
    // It holds to its end, in the next minutes too, when the store's counts start afresh.
    for now in [NOW + 60, FIRST_BAN.until - 1] {
        let later = verdict(&limiter, &address(), &KeyStorage::Records, now);
        assert_eq!(later.ok(), Some(Verdict::Banned(FIRST_BAN)), "at {now}");
    }
    let after = verdict(&limiter, &address(), &KeyStorage::Records, FIRST_BAN.until);
    assert!(matches!(after, Ok(Verdict::Allowed(_))), "{after:?}");
}

#[test]
fn a_key_ban_is_kept_with_the_key_when_the_store_cannot_start_it() {
    let limiter = limiter(FailurePolicy::Closed);
    let verdicts = verdicts(&limiter, &key(), &KeyStorage::Records, 4);
    assert_allowed_then_limited(&verdicts);
    // Whatever the failure policy: the ban is in the keys' storage, the store's failure
    // only noted.
    assert_eq!(verdicts[3].as_ref().ok(), Some(&Verdict::Banned(FIRST_BAN)));
    assert_eq!(limiter.failures.load(Ordering::Relaxed), 1);
}

#[test]
fn a_key_ban_the_keys_storage_does_not_keep_is_a_refusal_with_the_counts() {
    for storage in [KeyStorage::Fails, KeyStorage::Loses] {
        let limiter = limiter(FailurePolicy::Open);
        let verdicts = verdicts(&limiter, &key(), &storage, 4);
        assert_allowed_then_limited(&verdicts);
        match &verdicts[3] {
            Err(LimitError::BanNotRecorded { key, decision, .. }) => {
                assert_eq!(*key, 42);
                assert!(!decision.allowed);
                assert_eq!(decision.rejected, 3);
            }
            other => panic!("expected BanNotRecorded, got {other:?}"),
        }
        // The counter store did not fail.
        assert_eq!(limiter.failures.load(Ordering::Relaxed), 0);
    }
}

#[test]
fn ipv6_clients_are_counted_per_prefix_and_ipv4_per_address() {
    let policy = AddressPolicy::default();
    let ip = |text: &str| text.parse::<IpAddr>().expect("ip");
    let together =
        |policy: AddressPolicy, a: &str, b: &str| policy.subject(ip(a)) == policy.subject(ip(b));
    assert!(together(
        policy,
        "2001:db8:1:2:aaaa::1",
        "2001:db8:1:2:ffff:ffff:ffff:ffff"
    ));
    assert!(!together(policy, "2001:db8:1:2::1", "2001:db8:1:3::1"));
    assert_eq!(
        policy.subject(ip("2001:db8:1:2::1")),
        Subject::Address(ip("2001:db8:1:2::"))
    );
    assert!(!together(policy, "192.0.2.1", "192.0.2.2"));
    let exact = AddressPolicy {
        ipv6_prefix: 128,
        ..policy
    };
    assert!(!together(exact, "2001:db8::1", "2001:db8::2"));
    let all = AddressPolicy {
        ipv6_prefix: 0,
        ..policy
    };
    assert!(together(all, "2001:db8::1", "ffff::1"));
}

/// A shared store that is down: every call fails, and is counted.
#[derive(Default)]
struct Down(AtomicU32);

impl Down {
    fn fail(&self) -> CounterError {
        self.0.fetch_add(1, Ordering::Relaxed);
        CounterError::new("connection refused")
    }
}

#[async_trait(?Send)]
impl CounterStore for Arc<Down> {
    async fn hit(&self, _: Subject, _: RateLimits, _: u64) -> Counted {
        Err(self.fail())
    }

    async fn peek(&self, _: Subject, _: RateLimits, _: u64) -> Counted {
        Err(self.fail())
    }

    async fn start_ban(&self, _: Subject, _: Option<Ban>, _: u64) -> BanStarted {
        Err(self.fail())
    }

    async fn revalidated(&self, _: Subject, _: RateLimits, _: u64) -> TakenBack {
        Err(self.fail())
    }
}

#[test]
fn a_304_is_taken_back_where_its_request_was_counted() {
    let store = Arc::new(Down::default());
    let limits = RateLimits {
        per_minute: 5,
        per_day: 100,
    };
    let account = Account { limits, ..key() };
    let limiter = Limiter::shared(
        Box::new(Arc::clone(&store)),
        FailurePolicy::Open,
        BANS,
        LIMITS,
        AddressPolicy::default(),
    );
    let check = |limiter: &Limiter| {
        limiter
            .check(&account, NOW, &KeyStorage::Records)
            .now_or_never()
            .expect("ready")
            .expect("fail open")
    };
    // Counted in memory while the store is down, and taken back there: the store is not
    // asked again.
    let (verdict, tally) = check(&limiter);
    assert!(matches!(verdict, Verdict::Allowed(_)));
    assert_eq!(tally, Tally::Fallback);
    let calls = store.0.load(Ordering::Relaxed);
    let taken_back = limiter
        .revalidated(&account, NOW, tally)
        .now_or_never()
        .expect("ready");
    assert!(taken_back);
    assert_eq!(
        store.0.load(Ordering::Relaxed),
        calls,
        "the store was not asked"
    );
    let (Verdict::Allowed(decision), _) = check(&limiter) else {
        panic!("allowed");
    };
    assert_eq!(decision.minute.used, 1, "the first one was taken back");
    // A request refused by a ban in force was counted nowhere: nothing to take back.
    let banned = Account {
        ban: Some(FIRST_BAN),
        ..account
    };
    let (verdict, tally) = limiter
        .check(&banned, NOW, &KeyStorage::Records)
        .now_or_never()
        .expect("ready")
        .expect("banned");
    assert!(matches!(verdict, Verdict::Banned(_)));
    assert_eq!(tally, Tally::Uncounted);
    assert!(
        !limiter
            .revalidated(&banned, NOW, tally)
            .now_or_never()
            .expect("ready")
    );
}
