//! The shared counters past one plain Redis: over TLS (the server's certificate verified,
//! against a private CA), and in a Redis Cluster (several instances counting exactly, bans seen
//! by all, a failover that keeps the failure policy, hangs nothing, and counts exactly after).
//! The servers are the test's own `redis-server`s on free loopback ports.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use petstore_domain::{Ban, Plan, RateLimits};
use petstore_http::ratelimit::{
    AddressPolicy, CounterStore, FailurePolicy, Hit, Limiter, RedisCounters, Subject,
};
use petstore_store::testing::{Authority, TestDatabase};

use crate::helpers::{TestApp, anonymous_limits};
use crate::redis_support::{OwnRedis, RedisCluster, TlsRedis};

const NOW: u64 = 1_800_000_005;

fn limits(per_minute: u32) -> RateLimits {
    RateLimits::custom(per_minute, 1_000_000).expect("limits")
}

fn allowed(hit: &Hit) -> bool {
    matches!(hit, Hit::Counted { counts, .. } if counts.allowed)
}

/// The reason a `PING` failed, all of it.
async fn refusal(counters: &RedisCounters) -> String {
    let error = counters.ping().await.expect_err("refused");
    petstore_http::error::Chain(&error).to_string()
}

#[actix_web::test]
async fn counters_over_tls_trust_only_a_certificate_for_the_host_from_the_ca() {
    let Some(tls) = TlsRedis::start() else {
        return;
    };
    let ca = || Some(tls.authority.ca_pem.clone().into_bytes());
    let timeout = Duration::from_secs(2);
    let good = format!("rediss://localhost:{}", tls.port);
    let counters = RedisCounters::with_ca(&good, ca(), "tls-test", timeout, 86_400)
        .expect("counters over TLS");
    counters.ping().await.expect("TLS with the CA");
    let subject = Subject::Key(7);
    for expected in [true, true, false] {
        let hit = counters.hit(subject, limits(2), NOW).await.expect("hit");
        assert_eq!(allowed(&hit), expected, "{hit:?}");
    }

    // A name the certificate does not carry (it names `localhost`, not `127.0.0.1`).
    let by_address = format!("rediss://127.0.0.1:{}", tls.port);
    let counters =
        RedisCounters::with_ca(&by_address, ca(), "tls-test", timeout, 86_400).expect("counters");
    let reason = refusal(&counters).await;
    assert!(reason.contains("not valid for name"), "{reason}");
    // A CA that did not sign it; and the system's authorities, which know nothing of it.
    let other = Authority::new("another CA").ca_pem.into_bytes();
    let counters =
        RedisCounters::with_ca(&good, Some(other), "tls-test", timeout, 86_400).expect("counters");
    let reason = refusal(&counters).await;
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    let counters = RedisCounters::new(&good, "tls-test", timeout, 86_400).expect("counters");
    let reason = refusal(&counters).await;
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    // Plain TCP to a TLS port never answers a command.
    let plain = format!("redis://localhost:{}", tls.port);
    let counters = RedisCounters::new(&plain, "tls-test", timeout, 86_400).expect("counters");
    counters.ping().await.expect_err("not TLS");
    // A CA for a plain URL, and a URL that turns verification off, are refused outright.
    for (url, ca) in [
        (plain.as_str(), ca()),
        (&*format!("{good}/#insecure"), None),
        ("redis+cluster://", None),
        ("memcached://localhost:1", None),
    ] {
        assert!(
            RedisCounters::with_ca(url, ca, "tls-test", timeout, 86_400).is_err(),
            "{url}"
        );
    }
}

/// Counters on `cluster`, as one instance of the service holds them once started (its start-up
/// check passed: the cluster answers, every node has the scripts).
async fn on_cluster(cluster: &RedisCluster, prefix: &str, timeout: Duration) -> RedisCounters {
    let counters =
        RedisCounters::new(&cluster.url(), prefix, timeout, 86_400).expect("cluster counters");
    counters.ping().await.expect("the cluster answers");
    counters
}

#[actix_web::test]
async fn instances_sharing_a_cluster_count_exactly_and_share_bans() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let timeout = Duration::from_secs(2);
    let first = on_cluster(&cluster, "cluster-test", timeout).await;
    let second = on_cluster(&cluster, "cluster-test", timeout).await;
    // Many subjects, so that they land on every master; each one hammered from both
    // instances at once.
    for id in 1..=12 {
        let subject = Subject::Key(id);
        let hits = (0..40).map(|i| {
            let counters = if i % 2 == 0 { &first } else { &second };
            counters.hit(subject, limits(25), NOW)
        });
        let hits = futures_util::future::join_all(hits).await;
        let granted = hits
            .iter()
            .filter(|hit| allowed(hit.as_ref().expect("hit")))
            .count();
        assert_eq!(granted, 25, "subject {subject}: exactly its limit");
    }
    // A ban started by one instance holds on the other, and the status peek sees it.
    let address = Subject::Address("192.0.2.7".parse::<IpAddr>().expect("ip"));
    let ban = Ban {
        until: NOW + 300,
        level: 1,
    };
    assert_eq!(
        first.start_ban(address, Some(ban), NOW).await.expect("ban"),
        None,
        "started"
    );
    assert_eq!(
        second.hit(address, limits(25), NOW).await.expect("hit"),
        Hit::Banned(ban)
    );
    // A revalidation is taken back on the subject's node (its keys share a slot).
    let subject = Subject::Key(100);
    let counted = first.hit(subject, limits(25), NOW).await.expect("hit");
    assert!(allowed(&counted));
    assert!(
        second
            .revalidated(subject, limits(25), NOW)
            .await
            .expect("revalidated")
    );
    // The other instance, its requests counted before the ban, does not start one again: the
    // ban in force is the answer.
    let later = Ban {
        until: NOW + 310,
        level: 1,
    };
    assert_eq!(
        second
            .start_ban(address, Some(later), NOW + 10)
            .await
            .expect("ban"),
        Some(ban)
    );
    assert_eq!(
        first.hit(address, limits(25), NOW + 10).await.expect("hit"),
        Hit::Banned(ban)
    );
    assert_eq!(
        second.peek(address, limits(25), NOW).await.expect("peek"),
        Hit::Banned(ban)
    );
    // Once it has ended, the next one starts.
    assert_eq!(
        second
            .start_ban(address, Some(later), NOW + 300)
            .await
            .expect("ban"),
        None,
        "started"
    );
}

#[actix_web::test]
async fn a_failover_keeps_the_failure_policy_hangs_nothing_and_counts_exactly_after() {
    let Some(mut cluster) = RedisCluster::start() else {
        return;
    };
    let timeout = Duration::from_millis(300);
    let db = TestDatabase::sqlite();
    let store = db.store().await;
    let limiter = Limiter::shared(
        Box::new(on_cluster(&cluster, "failover-test", timeout).await),
        FailurePolicy::Closed,
        petstore_domain::BanPolicy::default(),
        anonymous_limits(),
        AddressPolicy::default(),
    );
    let app = TestApp::with_limiter(Some(db), store, limiter).await;
    let custom = RateLimits::custom(30, 100_000).expect("limits");
    let (key, secret) = app
        .store
        .create_key(
            &petstore_domain::KeySpec::new(Plan::Enterprise, "failover", Some(custom))
                .expect("spec"),
        )
        .await
        .expect("key");
    let secret = secret.expose().to_owned();
    let remaining = |reply: &crate::helpers::Reply| -> Option<u64> {
        reply
            .header("x-ratelimit-remaining")
            .and_then(|v| v.parse().ok())
    };
    for expected in [29, 28, 27] {
        let reply = app.get_as("/v1/pets", &secret).await;
        assert_eq!(
            (reply.status.as_u16(), remaining(&reply)),
            (200, Some(expected))
        );
    }

    // The master of this key's slot dies; its replica takes over within a few seconds.
    let master = cluster.master_of(&format!("{{{}}}", Subject::Key(key.id)));
    cluster.kill(master);
    let started = Instant::now();
    let mut unavailable = 0;
    let mut served_after_switch = None;
    while started.elapsed() < Duration::from_secs(30) {
        let asked = Instant::now();
        let reply =
            actix_web::rt::time::timeout(Duration::from_secs(5), app.get_as("/v1/pets", &secret))
                .await
                .expect("no request waits past the limiter's deadline (and its one retry)");
        assert!(
            asked.elapsed() < Duration::from_secs(3),
            "answered in {:?}",
            asked.elapsed()
        );
        match reply.status.as_u16() {
            // Closed: while the slot has no master, refused, never served uncounted.
            503 => {
                reply.assert_error(503, "service_unavailable");
                unavailable += 1;
            }
            200 => {
                served_after_switch = remaining(&reply);
                break;
            }
            other => panic!("during the failover: {other}"),
        }
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    let first_after = served_after_switch.expect("served again once the replica took over");
    assert!(unavailable > 0, "the switch was seen");
    // The counts written before the failover were replicated (or, at worst, a few lost); from
    // here on each request is counted exactly once, to the limit.
    let mut expected = first_after;
    while expected > 0 {
        expected -= 1;
        let reply = app.get_as("/v1/pets", &secret).await;
        assert_eq!(
            (reply.status.as_u16(), remaining(&reply)),
            (200, Some(expected))
        );
    }
    app.get_as("/v1/pets", &secret)
        .await
        .assert_error(429, "rate_limited");
}

/// The allowed hits' minute counts and the refused hits' refusal counts, each sorted.
fn tallies(hits: &[Result<Hit, petstore_http::ratelimit::CounterError>]) -> (Vec<u32>, Vec<u32>) {
    let (mut used, mut refused) = (Vec::new(), Vec::new());
    for hit in hits {
        match hit.as_ref().expect("hit") {
            Hit::Counted { counts, .. } if counts.allowed => used.push(counts.minute_used),
            Hit::Counted { counts, .. } => refused.push(counts.rejected),
            Hit::Banned(ban) => panic!("banned: {ban:?}"),
        }
    }
    used.sort_unstable();
    refused.sort_unstable();
    (used, refused)
}

#[actix_web::test]
async fn the_start_up_check_leaves_the_connection_open_and_the_scripts_loaded() {
    let Some(redis) = OwnRedis::start() else {
        return;
    };
    let counters = RedisCounters::new(&redis.url(), "ready-test", Duration::from_secs(2), 86_400)
        .expect("counters");
    counters.ping().await.expect("ping");
    // Before any request, the requests' connection is open (its last command a script's load)...
    let clients: String = redis.query(redis::cmd("CLIENT").arg("LIST"));
    assert!(
        clients
            .lines()
            .any(|client| client.contains(" cmd=script|load ")),
        "{clients}"
    );
    assert_eq!(
        redis.calls("script|load"),
        4,
        "hit, peek, start a ban, take a revalidation back"
    );
    // ...and the first request finds its script: one `EVALSHA`, not a `NOSCRIPT` refusal, a
    // `SCRIPT LOAD` and the `EVALSHA` again.
    counters
        .hit(Subject::Key(1), limits(5), NOW)
        .await
        .expect("hit");
    assert_eq!((redis.calls("script|load"), redis.calls("evalsha")), (4, 1));
}

/// Requests answered `304`, taken back from `counters` as free revalidations: the store's
/// answers for a subject counted 6 times in a minute with a limit of 3 and an allowance of 2
/// a minute and 3 a day, then once in the next minute and twice in the one after; the counts
/// it shows after each.
async fn revalidations(counters: &dyn CounterStore, subject: Subject) -> Vec<(bool, u32, u32)> {
    let limits = RateLimits::custom(3, 100).expect("limits");
    // Two free a minute, three a day.
    let allowance = RateLimits::custom(2, 3).expect("allowance");
    let mut seen = Vec::new();
    let mut note = |allowed: bool, taken_back: bool, hit: Hit| {
        let Hit::Counted { counts, .. } = hit else {
            panic!("banned: {hit:?}");
        };
        seen.push((allowed && taken_back, counts.minute_used, counts.day_used));
    };
    for (at, requests) in [(NOW, 6), (NOW + 60, 1), (NOW + 120, 2)] {
        for _ in 0..requests {
            let hit = counters.hit(subject, limits, at).await.expect("hit");
            let taken_back = allowed(&hit)
                && counters
                    .revalidated(subject, allowance, at)
                    .await
                    .expect("revalidated");
            let standing = counters.peek(subject, limits, at).await.expect("peek");
            note(allowed(&hit), taken_back, standing);
        }
    }
    seen
}

#[actix_web::test]
async fn revalidations_are_taken_back_in_redis_as_in_memory() {
    let Some(redis) = OwnRedis::start() else {
        return;
    };
    let counters = RedisCounters::new(&redis.url(), "reval-test", Duration::from_secs(2), 86_400)
        .expect("counters");
    let memory = petstore_http::ratelimit::MemoryCounters::new(86_400, 100);
    let expected = [
        (true, 0, 0),
        (true, 0, 0),
        (false, 1, 1),
        (false, 2, 2),
        (false, 3, 3),
        (false, 3, 3),
        (true, 0, 3),
        (false, 1, 4),
        (false, 2, 5),
    ];
    assert_eq!(revalidations(&memory, Subject::Key(1)).await, expected);
    assert_eq!(revalidations(&counters, Subject::Key(1)).await, expected);
    // A request counted in a minute that has ended is not taken back from the next one.
    assert!(
        !counters
            .revalidated(Subject::Key(1), limits(2), NOW + 180)
            .await
            .expect("revalidated")
    );
}

#[actix_web::test]
async fn concurrent_decisions_go_to_redis_together_each_with_its_own_exact_answer() {
    let Some(redis) = OwnRedis::start() else {
        return;
    };
    let counters = RedisCounters::new(&redis.url(), "batch-test", Duration::from_secs(2), 86_400)
        .expect("counters");
    let (busy, quiet) = (Subject::Key(1), Subject::Key(2));
    let before = redis.script_calls();
    // 600 requests at once, two subjects interleaved: more than one batch carries.
    let hits = (0..600).map(|i| {
        if i % 3 == 0 {
            counters.hit(quiet, limits(150), NOW)
        } else {
            counters.hit(busy, limits(300), NOW)
        }
    });
    let hits = futures_util::future::join_all(hits).await;
    let calls = redis.script_calls() - before;
    let (quiet_hits, busy_hits): (Vec<_>, Vec<_>) =
        hits.into_iter().enumerate().partition(|(i, _)| i % 3 == 0);
    let strip = |hits: Vec<(usize, _)>| hits.into_iter().map(|(_, hit)| hit).collect::<Vec<_>>();
    // Each request got its own count: every value once, none shared, none lost.
    let (used, refused) = tallies(&strip(busy_hits));
    assert_eq!(used, (1..=300).collect::<Vec<u32>>());
    assert_eq!(refused, (1..=100).collect::<Vec<u32>>());
    let (used, refused) = tallies(&strip(quiet_hits));
    assert_eq!(used, (1..=150).collect::<Vec<u32>>());
    assert_eq!(refused, (1..=50).collect::<Vec<u32>>());
    // Three batches of at most 256 (and the script's first load), not 600 round trips.
    assert!(
        calls <= 6,
        "600 concurrent decisions took {calls} script calls"
    );

    // A batch of one subject cut by its day window, then refused whole by a ban.
    let daily = Subject::Key(5);
    let day_limits = RateLimits::custom(40, 50).expect("limits");
    let earlier = (0..30).map(|_| counters.hit(daily, day_limits, NOW - 60));
    futures_util::future::join_all(earlier).await;
    let hits = (0..60).map(|_| counters.hit(daily, day_limits, NOW));
    let hits = futures_util::future::join_all(hits).await;
    let (used, refused) = tallies(&hits);
    assert_eq!(used, (1..=20).collect::<Vec<u32>>());
    assert_eq!(refused, (1..=40).collect::<Vec<u32>>());
    for hit in &hits {
        if let Ok(Hit::Counted { counts, .. }) = hit {
            let counted = if counts.allowed {
                counts.minute_used
            } else {
                20
            };
            assert_eq!(counts.day_used, 30 + counted, "{hit:?}");
        }
    }
    // Keys a group created (its windows, its refusals) expire like a single request's.
    let client = redis::Client::open(redis.url()).expect("client");
    let mut conn = client.get_connection().expect("connection");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("batch-test:{key:5}:*")
        .query(&mut conn)
        .expect("keys");
    assert_eq!(
        keys.len(),
        4,
        "two minutes, a day, one minute's refusals: {keys:?}"
    );
    for key in keys {
        let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut conn).expect("ttl");
        assert!(ttl > 0, "{key} has TTL {ttl}");
    }
    let ban = Ban {
        until: NOW + 600,
        level: 1,
    };
    counters
        .start_ban(daily, Some(ban), NOW)
        .await
        .expect("ban recorded");
    let hits = (0..30).map(|_| counters.hit(daily, day_limits, NOW));
    for hit in futures_util::future::join_all(hits).await {
        assert_eq!(hit.expect("hit"), Hit::Banned(ban));
    }

    // One request alone does not wait for company.
    let alone = actix_web::rt::time::timeout(
        Duration::from_secs(1),
        counters.hit(Subject::Key(3), limits(5), NOW),
    )
    .await
    .expect("answered at once")
    .expect("hit");
    assert!(allowed(&alone));

    // Redis gone: every request of a batch gets the failure, none waits past the deadline.
    let deadline = Duration::from_millis(300);
    let counters =
        RedisCounters::new(&redis.url(), "batch-test", deadline, 86_400).expect("counters");
    drop(redis);
    let hits = (0..50).map(|_| counters.hit(Subject::Key(4), limits(100), NOW));
    let hits =
        actix_web::rt::time::timeout(Duration::from_secs(5), futures_util::future::join_all(hits))
            .await
            .expect("no request hangs");
    assert!(hits.iter().all(Result::is_err), "{hits:?}");
}

#[actix_web::test]
async fn a_connection_redis_refused_is_replaced_once_redis_accepts_it() {
    let Some(redis) = OwnRedis::start() else {
        return;
    };
    // The service's URL carries a password Redis does not require yet (its user set up after
    // the service started, say): every connection is refused at its `AUTH`.
    let url = redis.url().replacen("redis://", "redis://:s3cret@", 1);
    let counters = RedisCounters::new(&url, "auth-test", Duration::from_millis(500), 86_400)
        .expect("counters");
    let subject = Subject::Key(7);
    assert!(counters.hit(subject, limits(100), NOW).await.is_err());
    assert!(counters.hit(subject, limits(100), NOW).await.is_err());
    redis.query::<()>(
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("requirepass")
            .arg("s3cret"),
    );
    // Then Redis accepts the password: the instance counts in it again, without a restart.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(hit) = counters.hit(subject, limits(100), NOW).await {
            assert!(allowed(&hit), "{hit:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still refused after Redis accepted the password"
        );
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
}
