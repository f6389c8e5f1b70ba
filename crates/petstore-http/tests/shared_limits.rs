//! Rate limits shared through Redis by two real `petstore` processes: hammered concurrently
//! through one key, they grant exactly the plan's limit between them. Skipped loudly without
//! Redis outside CI; fails in CI.

mod common;

use std::thread;

use common::redis_support::TestRedis;
use common::{Server, agent, run, wait_for_room_in_minute};

const THREADS_PER_INSTANCE: usize = 8;
const REQUESTS_PER_THREAD: usize = 20;

#[test]
fn two_instances_sharing_redis_grant_exactly_the_plan_limit() {
    let Some(redis) = TestRedis::new() else {
        return;
    };
    let (_dir, db) = common::temp_db();
    let db = db.as_str();
    let key = run(db, &["keys", "create", "--plan", "free"])
        .trim()
        .to_owned();
    let args = [
        "--bootstrap-key=false",
        "--rate-limit-store",
        redis.url.as_str(),
        "--rate-limit-prefix",
        redis.prefix.as_str(),
        "--rate-limit-on-failure",
        "closed",
    ];
    let first = Server::start(db, &args);
    let second = Server::start(db, &args);

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
