//! `TestApp`: the production `app()` over a throwaway database, with a manual clock and a key.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::body::MessageBody;
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap};
use actix_web::test as atest;
use actix_web::web::{self, Bytes};
use petstore_domain::ManualClock;
use petstore_domain::{KeySpec, Plan, RateLimits, Storage};
use petstore_http::ratelimit::Limiter;
use petstore_http::{AppState, Config, HttpSettings, admin_app, app};
use petstore_store::testing::{TestBackend, TestDatabase};
use petstore_store::{Store, StoreConfig};
use petstore_webhooks::resolve::Resolver;
use serde_json::Value;

pub struct TestApp {
    pub db: Option<TestDatabase>,
    /// The Redis prefix of a Redis-backed limiter, cleaned up on drop.
    pub redis: Option<crate::redis_support::TestRedis>,
    /// The storage the app runs on, through the interface the HTTP layer uses.
    pub store: Arc<dyn Storage>,
    pub clock: Arc<ManualClock>,
    pub state: web::Data<AppState>,
    /// A valid enterprise key with limits no test reaches.
    pub key: String,
}

/// The settings most tests run with: `/v1` and a public base URL.
fn default_settings() -> HttpSettings {
    HttpSettings::new("/v1", Some("https://api.example.com/v1".into()))
}

/// Free-plan numbers for requests without a valid key.
pub fn anonymous_limits() -> RateLimits {
    Plan::Free.standard_limits().expect("free limits")
}

/// A response, read to the end.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts an Error object with this status and code, whose `status` field matches.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) -> String {
        let body = self.json();
        assert_eq!(self.status.as_u16(), status, "status; body {body}");
        assert_eq!(body["code"], code, "code; body {body}");
        assert_eq!(body["status"], status, "status field; body {body}");
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "content type"
        );
        assert_eq!(
            self.header("cache-control"),
            Some("no-store"),
            "no cache keeps an error"
        );
        let object = body.as_object().expect("object");
        assert_eq!(object.len(), 3, "exactly code, message, status: {body}");
        body["message"]
            .as_str()
            .expect("message is a string")
            .to_owned()
    }

    /// The target of `Link: <...>; rel="next"`, if any.
    pub fn next_link(&self) -> Option<String> {
        self.headers.get_all(header::LINK).find_map(|value| {
            let value = value.to_str().ok()?;
            let (target, params) = value.split_once(';')?;
            params
                .contains("rel=\"next\"")
                .then(|| target.trim().trim_matches(['<', '>']).to_owned())
        })
    }
}

/// A response as the tests read it: status, headers and the whole body.
async fn reply_of(response: ServiceResponse<impl MessageBody>) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let body = atest::read_body(response).await;
    Reply {
        status,
        headers,
        body,
    }
}

/// `GET uri` from the client address `peer` (`"203.0.113.7:5"`, `"[2001:db8::1]:5"`): a
/// request without a key is counted against its address.
pub fn get_from(uri: &str, peer: &str) -> atest::TestRequest {
    atest::TestRequest::get()
        .uri(uri)
        .peer_addr(peer.parse().expect("a socket address"))
}

pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

impl TestApp {
    /// An app on a fresh database of `backend`; `None` when that backend is unavailable
    /// outside CI (a loud SKIPPED line has been printed).
    pub async fn spawn(backend: TestBackend) -> Option<Self> {
        let db = TestDatabase::new(backend)?;
        let store = db.store().await;
        Some(Self::with_store(Some(db), store).await)
    }

    /// An app over `store` as it is (migrated or not), counting rate limits in memory.
    pub async fn with_store(db: Option<TestDatabase>, store: Store) -> Self {
        Self::build(db, Arc::new(store), None, default_settings()).await
    }

    /// An app over a storage backend of the test's own (not `petstore-store`'s).
    pub async fn with_storage(storage: Arc<dyn Storage>) -> Self {
        Self::build(None, storage, None, default_settings()).await
    }

    /// An app over a storage backend of the test's own whose configuration `change` adjusts.
    pub async fn with_storage_and_config(
        storage: Arc<dyn Storage>,
        change: impl FnOnce(&mut Config),
    ) -> Self {
        Self::build_with(None, storage, None, default_settings(), change).await
    }

    /// An app over `store` with the given limiter.
    pub async fn with_limiter(db: Option<TestDatabase>, store: Store, limiter: Limiter) -> Self {
        Self::build(db, Arc::new(store), Some(limiter), default_settings()).await
    }

    /// An app on a fresh SQLite database with other path and link settings.
    pub async fn with_settings(settings: HttpSettings) -> Self {
        let db = TestDatabase::sqlite();
        let store = db.store().await;
        Self::build(Some(db), Arc::new(store), None, settings).await
    }

    /// An app on a fresh SQLite database whose configuration `change` adjusts.
    pub async fn with_config(change: impl FnOnce(&mut Config)) -> Self {
        let db = TestDatabase::sqlite();
        let store = db.store().await;
        Self::build_with(Some(db), Arc::new(store), None, default_settings(), change).await
    }

    /// The production state (`AppState::new`) over `store`, with a manual clock and, when
    /// given, another limiter.
    async fn build(
        db: Option<TestDatabase>,
        store: Arc<dyn Storage>,
        limiter: Option<Limiter>,
        settings: HttpSettings,
    ) -> Self {
        Self::build_with(db, store, limiter, settings, |_| {}).await
    }

    async fn build_with(
        db: Option<TestDatabase>,
        store: Arc<dyn Storage>,
        limiter: Option<Limiter>,
        settings: HttpSettings,
        change: impl FnOnce(&mut Config),
    ) -> Self {
        let clock = Arc::new(ManualClock::at(now_unix()));
        let unlimited = RateLimits::custom(u32::MAX, u32::MAX).expect("limits");
        let key = store
            .create_key(&KeySpec::new(Plan::Enterprise, "tests", Some(unlimited)).expect("spec"))
            .await
            .map(|(_, secret)| secret.expose().to_owned())
            .unwrap_or_default();
        let mut config = Config::new();
        // No caching: revocations in these tests must take effect at once.
        config.key_cache_ttl = Duration::ZERO;
        config.http = settings;
        change(&mut config);
        let limiter = limiter.unwrap_or_else(|| config.rate_limit.in_memory_limiter());
        let receivers = Arc::new(Resolver::for_registration());
        let documents = petstore_openapi::documents();
        let state = AppState::new(&config, store.clone(), limiter, receivers, documents)
            .with_clock(clock.clone());
        Self {
            db,
            redis: None,
            store,
            clock,
            state: web::Data::new(state),
            key,
        }
    }

    /// An app whose database cannot be reached.
    pub async fn unreachable() -> Self {
        let mut config = StoreConfig::new("postgres://postgres@127.0.0.1:1/none");
        config.connect_timeout = Duration::from_millis(300);
        Self::with_store(None, Store::open(&config).expect("open is lazy")).await
    }

    /// Sends `request` (without a peer address unless the test gives one: such requests are
    /// counted against the unspecified address).
    pub async fn send(&self, request: atest::TestRequest) -> Reply {
        let service = atest::init_service(app(self.state.clone())).await;
        reply_of(atest::call_service(&service, request.to_request()).await).await
    }

    /// Sends `request` to the admin listener's application over the same state (no metrics).
    pub async fn send_admin(&self, request: atest::TestRequest) -> Reply {
        let service = atest::init_service(admin_app(self.state.clone(), None)).await;
        reply_of(atest::call_service(&service, request.to_request()).await).await
    }

    fn authed(&self, request: atest::TestRequest) -> atest::TestRequest {
        request.insert_header((header::AUTHORIZATION, format!("Bearer {}", self.key)))
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.send(self.authed(atest::TestRequest::get().uri(uri)))
            .await
    }

    /// `GET uri` with another key.
    pub async fn get_as(&self, uri: &str, key: &str) -> Reply {
        self.send(
            atest::TestRequest::get()
                .uri(uri)
                .insert_header((header::AUTHORIZATION, format!("Bearer {key}"))),
        )
        .await
    }

    pub async fn post_json(&self, uri: &str, body: &str) -> Reply {
        self.send(
            self.authed(atest::TestRequest::post().uri(uri))
                .insert_header((header::CONTENT_TYPE, "application/json"))
                .set_payload(body.to_owned()),
        )
        .await
    }

    /// Creates a pet through the API and returns its JSON.
    pub async fn create_pet(&self, name: &str, status: &str) -> Value {
        let body = serde_json::json!({"name": name, "categoryId": 1, "status": status});
        let reply = self.post_json("/v1/pets", &body.to_string()).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
        reply.json()
    }

    /// The names of the first 100 pets, in id order.
    pub async fn pet_names(&self) -> Vec<String> {
        self.get("/v1/pets?limit=100")
            .await
            .json()
            .as_array()
            .expect("array")
            .iter()
            .map(|pet| pet["name"].as_str().expect("name").to_owned())
            .collect()
    }

    /// Follows `next` links from `first`, returning every id seen, page by page.
    pub async fn walk(&self, first: &str) -> Vec<Vec<i64>> {
        let mut pages = Vec::new();
        let mut uri = first.to_owned();
        loop {
            let reply = self.get(&uri).await;
            assert_eq!(reply.status, StatusCode::OK, "{uri}");
            let ids = reply
                .json()
                .as_array()
                .expect("array")
                .iter()
                .map(|pet| pet["id"].as_i64().expect("id"))
                .collect();
            pages.push(ids);
            match reply.next_link() {
                Some(next) => {
                    uri = next
                        .strip_prefix("https://api.example.com")
                        .expect("links use the public base URL")
                        .to_owned()
                }
                None => return pages,
            }
        }
    }
}

/// Runs each scenario named (`api_tests!(a, b)`, each a plain `async fn a(app: TestApp)` that
/// rustfmt formats) once per backend, each on its own database: SQLite, PostgreSQL,
/// and the test-local `MemoryStorage` (a backend outside `petstore-store`, which proves the
/// HTTP layer is written against the storage interface). PostgreSQL is skipped loudly when
/// unreachable outside CI, and fails the test in CI.
#[macro_export]
macro_rules! api_tests {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[actix_web::test]
                async fn sqlite() {
                    let app = $crate::helpers::TestApp::spawn(
                        petstore_store::testing::TestBackend::Sqlite,
                    ).await
                    .expect("SQLite is always available");
                    super::$name(app).await;
                }

                #[actix_web::test]
                async fn memory() {
                    let storage = std::sync::Arc::new(
                        $crate::memory_storage::MemoryStorage::default(),
                    );
                    super::$name($crate::helpers::TestApp::with_storage(storage).await).await;
                }

                #[actix_web::test]
                async fn postgres() {
                    if let Some(app) = $crate::helpers::TestApp::spawn(
                        petstore_store::testing::TestBackend::Postgres,
                    ).await {
                        super::$name(app).await;
                    }
                }

                #[actix_web::test]
                async fn mysql() {
                    if let Some(app) = $crate::helpers::TestApp::spawn(
                        petstore_store::testing::TestBackend::Mysql,
                    ).await {
                        super::$name(app).await;
                    }
                }

                #[actix_web::test]
                async fn pgbouncer() {
                    if let Some(app) = $crate::helpers::TestApp::spawn(
                        petstore_store::testing::TestBackend::PgBouncer,
                    ).await {
                        super::$name(app).await;
                    }
                }

                #[actix_web::test]
                async fn pgbouncer_keeping_statements() {
                    if let Some(app) = $crate::helpers::TestApp::spawn(
                        petstore_store::testing::TestBackend::PgBouncerKeepingStatements,
                    ).await {
                        super::$name(app).await;
                    }
                }
            }
        )*
    };
}
