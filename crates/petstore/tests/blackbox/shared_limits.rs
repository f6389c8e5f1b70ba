//! Rate limits shared through Redis by two real `petstore` processes: hammered concurrently
//! through one key, they grant exactly the plan's limit between them, on one Redis and on a
//! Redis Cluster; over TLS, a server whose certificate is not trusted stops the start. Skipped
//! loudly without Redis outside CI; fails in CI.

use std::thread;
use std::time::{Duration, Instant};

use crate::common::redis_support::{RedisCluster, TestRedis, TlsRedis};
use crate::common::{TestServer, agent, petstore, run, wait_for_room_in_minute};

const THREADS_PER_INSTANCE: usize = 8;
const REQUESTS_PER_THREAD: usize = 20;

#[test]
fn two_instances_sharing_redis_grant_exactly_the_plan_limit() {
    let Some(redis) = TestRedis::new() else {
        return;
    };
    hammer_two_instances(&redis.url, &redis.prefix);
}

#[test]
fn two_instances_sharing_a_redis_cluster_grant_exactly_the_plan_limit() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    hammer_two_instances(&cluster.url(), "petstore");
}

#[test]
fn over_tls_the_start_checks_the_certificate() {
    let Some(tls) = TlsRedis::start() else {
        return;
    };
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let key = run(db, &["keys", "create", "--plan", "free"])
        .trim()
        .to_owned();
    let ca = tls.ca_file().display().to_string();
    let good = format!("rediss://localhost:{}", tls.port);
    let server = TestServer::start(
        db,
        &[
            "--bootstrap-key=false",
            "--rate-limit-store",
            &good,
            "--rate-limit-ca-file",
            &ca,
            "--rate-limit-on-failure",
            "closed",
        ],
    );
    let (status, _) = server.list_pets("", &key);
    assert_eq!(
        status, 200,
        "counted over TLS (closed: a failure would be 503)"
    );
    server.stop();
    // A certificate this instance cannot trust stops the start, saying why.
    let other = tls.dir.path().join("other-ca.pem");
    std::fs::write(
        &other,
        petstore_store::testing::Authority::new("other").ca_pem,
    )
    .expect("write");
    for (url, ca_file, says) in [
        (good.clone(), other.display().to_string(), "not trusted"),
        (
            format!("rediss://127.0.0.1:{}", tls.port),
            ca.clone(),
            "not valid for name",
        ),
        (
            good.clone(),
            "/nonexistent/ca.pem".to_owned(),
            "cannot read --rate-limit-ca-file",
        ),
    ] {
        let mut command = petstore(db);
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--bootstrap-key=false"])
            .args(["--rate-limit-store", &url, "--rate-limit-ca-file", &ca_file]);
        let output = exits_within(command, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{url} {ca_file}: started");
        assert!(stderr.contains(says), "{says:?} not in {stderr}");
    }
}

/// `command`'s output once it exits by itself, which it must within `limit` (a server that
/// starts when it should not is killed, and the test fails).
fn exits_within(mut command: std::process::Command, limit: Duration) -> std::process::Output {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start petstore");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Two servers counting in `url` under `prefix`, hammered concurrently through one free key:
/// exactly 60 granted between them, the rest refused.
fn hammer_two_instances(url: &str, prefix: &str) {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let key = run(db, &["keys", "create", "--plan", "free"])
        .trim()
        .to_owned();
    let args = [
        "--bootstrap-key=false",
        "--rate-limit-store",
        url,
        "--rate-limit-prefix",
        prefix,
        "--rate-limit-on-failure",
        "closed",
    ];
    let first = TestServer::start(db, &args);
    let second = TestServer::start(db, &args);

    wait_for_room_in_minute(30);
    let workers: Vec<_> = (0..2 * THREADS_PER_INSTANCE)
        .map(|i| {
            let base = if i % 2 == 0 {
                first.base.clone()
            } else {
                second.base.clone()
            };
            let key = key.clone();
            thread::spawn(move || {
                let mut statuses = Vec::new();
                for _ in 0..REQUESTS_PER_THREAD {
                    let response = agent()
                        .get(format!("{base}/pets"))
                        .header("Authorization", format!("Bearer {key}"))
                        .call()
                        .expect("GET");
                    statuses.push(response.status().as_u16());
                }
                statuses
            })
        })
        .collect();
    let statuses: Vec<u16> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("thread"))
        .collect();
    let granted = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(
        granted, 60,
        "exactly the free plan's 60 per minute across both instances"
    );
    assert_eq!(
        granted + refused,
        statuses.len(),
        "nothing but 200 and 429: {statuses:?}"
    );
    first.stop();
    second.stop();
}
