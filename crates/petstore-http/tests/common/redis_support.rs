//! A Redis key prefix of its own for one test, its keys deleted afterwards. Skipped loudly when
//! Redis is unreachable outside CI; a failure in CI.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use petstore_store::testing::in_ci;

pub struct TestRedis {
    pub url: String,
    pub prefix: String,
}

pub fn redis_url() -> String {
    std::env::var("PETSTORE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

impl TestRedis {
    pub fn new() -> Option<Self> {
        let url = redis_url();
        let reachable = redis::Client::open(url.as_str())
            .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(2)))
            .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
        if let Err(error) = reachable {
            if in_ci() {
                panic!("Redis unreachable at {url} in CI: {error}");
            }
            petstore_store::testing::loud_skip(&format!(
                "Redis unreachable at {url} ({error}); Redis tests did not run"
            ));
            return None;
        }
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let prefix = format!(
            "petstore-test-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        Some(Self { url, prefix })
    }

    /// How many keys the test's prefix holds now.
    pub fn keys(&self) -> Vec<String> {
        let client = redis::Client::open(self.url.as_str()).expect("client");
        let mut conn = client.get_connection().expect("connection");
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.prefix))
            .query(&mut conn)
            .expect("KEYS");
        keys
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys = self.keys();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}
