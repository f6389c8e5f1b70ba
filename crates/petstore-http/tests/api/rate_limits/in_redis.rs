//! What only the Redis counters have: a far ban read back exactly, keys that expire by
//! themselves, and an outage, failing open or closed as configured, then recovery.

use super::*;

/// A ban whose end is past 10^14 seconds (a very long `--ban-max-duration`) is read back from
/// the script exactly (Lua would write such a number with an exponent by itself).
#[actix_web::test]
async fn a_far_ban_in_redis_is_read_back_exactly() {
    let Some(redis) = TestRedis::new() else {
        return;
    };
    let until: u64 = 1_000_000_000_000_000;
    let client = redis::Client::open(redis.url.as_str()).expect("client");
    let mut connection = client.get_connection().expect("connection");
    let () = redis::cmd("SET")
        .arg(format!("{}:{{addr:203.0.113.77}}:ban", redis.prefix))
        .arg(format!("{until}:3"))
        .query(&mut connection)
        .expect("SET");
    let app = limited_app(Some(redis)).await;
    let request = get_from("/v1/pets", "203.0.113.77:5");
    let banned = app.send(request).await;
    banned.assert_error(429, "temporarily_banned");
    let wait = (until - (T0 + 5)).to_string();
    assert_eq!(banned.header("retry-after"), Some(wait.as_str()));
}

#[actix_web::test]
async fn redis_keys_expire_by_themselves() {
    let Some(redis) = TestRedis::new() else {
        return;
    };
    let prefix = redis.prefix.clone();
    let url = redis.url.clone();
    let app = limited_app(Some(redis)).await;
    assert_eq!(app.get("/v1/pets").await.status, 200);
    let client = redis::Client::open(url.as_str()).expect("client");
    let mut conn = client.get_connection().expect("connection");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query(&mut conn)
        .expect("keys");
    assert!(!keys.is_empty());
    for key in keys {
        let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut conn).expect("ttl");
        assert!(ttl > 0 && ttl <= 86_400 + 3_600, "{key} has TTL {ttl}");
    }
}

#[actix_web::test]
async fn a_redis_outage_fails_open_or_closed_as_configured_and_recovers() {
    // Cut: Redis refuses and resets. Frozen: connections stay open and nothing answers (a
    // stopped process, a partition), which only the client-side timeout notices.
    for (policy, frozen) in [
        (FailurePolicy::Open, false),
        (FailurePolicy::Closed, false),
        (FailurePolicy::Open, true),
        (FailurePolicy::Closed, true),
    ] {
        let Some(redis) = TestRedis::new() else {
            return;
        };
        let proxy = crate::outage::Proxy::start("127.0.0.1:6379");
        let url = format!("redis://127.0.0.1:{}", proxy.port);
        let counters = RedisCounters::new(&url, &redis.prefix, Duration::from_millis(300), 86_400)
            .expect("counters");
        let db = TestDatabase::sqlite();
        let store = db.store().await;
        let limiter = Limiter::shared(
            Box::new(counters),
            policy,
            bans(),
            anonymous_limits(),
            AddressPolicy::default(),
        );
        let mut app = TestApp::with_limiter(Some(db), store, limiter).await;
        app.redis = Some(redis);
        app.clock.set(T0 + 5);
        let (_, key) = new_key(&app, Plan::Free, None).await;
        for remaining in [59, 58, 57] {
            let reply = app.get_as("/v1/pets", &key).await;
            assert_eq!(limit_headers(&reply).1, remaining, "{policy:?}, Redis up");
        }

        if frozen {
            proxy.freeze();
        } else {
            proxy.cut();
        }
        // Bounded by the limiter's timeout (300 ms here); the guard only keeps a hang from
        // stalling the suite.
        let during =
            actix_web::rt::time::timeout(Duration::from_secs(20), app.get_as("/v1/pets", &key))
                .await
                .unwrap_or_else(|_| panic!("{policy:?}, frozen {frozen}: hung on Redis"));
        match policy {
            FailurePolicy::Open => {
                assert_eq!(during.status, 200, "fail-open serves");
                assert_eq!(
                    limit_headers(&during),
                    (60, 59, T0 + 60),
                    "counted in memory"
                );
                for _ in 0..59 {
                    assert_eq!(app.get_as("/v1/pets", &key).await.status, 200);
                }
                app.get_as("/v1/pets", &key)
                    .await
                    .assert_error(429, "rate_limited");
            }
            FailurePolicy::Closed => {
                during.assert_error(503, "service_unavailable");
                // The counts are unknown: nothing available until the `Retry-After`, and no
                // field says otherwise (a reset a minute away would contradict it).
                assert_eq!(during.header("retry-after"), Some("1"));
                assert_eq!(limit_headers(&during), (60, 0, T0 + 5 + 1));
                assert_eq!(
                    during.header("ratelimit"),
                    Some("\"minute\";r=0;t=1, \"day\";r=0;t=1")
                );
            }
        }
        assert!(app.state.limiter.failures() > 0, "failures are counted");

        if frozen {
            proxy.thaw();
            // What was held in the freeze now reaches Redis and is counted there (this minute
            // is spent). Recovered means Redis answers: requests stop failing over to memory.
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            loop {
                let failures = app.state.limiter.failures();
                let reply = app.get_as("/v1/pets", &key).await;
                assert!(
                    matches!(reply.status.as_u16(), 200 | 429 | 503),
                    "{}",
                    reply.status
                );
                if app.state.limiter.failures() == failures {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{policy:?}, frozen: no recovery"
                );
                actix_web::rt::time::sleep(Duration::from_millis(200)).await;
            }
            continue;
        }
        proxy.restore();
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let reply = app.get_as("/v1/pets", &key).await;
            if reply.status == 200 {
                let (_, remaining, _) = limit_headers(&reply);
                assert!(
                    remaining < 57,
                    "{policy:?}: counting resumed in Redis ({remaining})"
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{policy:?}: no recovery"
            );
            actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
