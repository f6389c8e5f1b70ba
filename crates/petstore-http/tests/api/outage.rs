//! The database goes away under a running app and comes back: 503s with the Error object while
//! it is gone, `/readyz` failing, and 2xx again afterwards without a restart. The outage is a
//! TCP proxy in front of PostgreSQL that is cut and restored, so the shared server keeps running.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use actix_web::test::TestRequest;
use petstore_domain::StorageError;
use petstore_store::testing::TestDatabase;
use petstore_store::{Store, StoreConfig};

use crate::helpers::TestApp;

/// Forwards connections to `upstream` while up; while down, drops new connections at once and
/// has cut the open ones; while frozen, keeps every connection open and accepts new ones but
/// passes nothing on, as a peer stopped with SIGSTOP does (its kernel still acknowledges).
pub struct Proxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn start(upstream: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let frozen = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (accept_up, accept_open, accept_frozen) = (up.clone(), open.clone(), frozen.clone());
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !accept_up.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut open = accept_open.lock().expect("lock");
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        open.push(clone);
                    }
                }
                pipe(&client, &server, &accept_frozen);
                pipe(&server, &client, &accept_frozen);
            }
        });
        Self {
            port,
            up,
            frozen,
            open,
        }
    }

    /// Stops passing anything on, keeping every connection open.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    /// Passes on again what was held, and what follows.
    pub fn thaw(&self) {
        self.frozen.store(false, Ordering::SeqCst);
    }

    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for stream in self.open.lock().expect("lock").drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

fn pipe(from: &TcpStream, to: &TcpStream, frozen: &Arc<AtomicBool>) {
    let (mut from, mut to) = (
        from.try_clone().expect("clone"),
        to.try_clone().expect("clone"),
    );
    let frozen = frozen.clone();
    thread::spawn(move || {
        let mut buffer = [0; 16 * 1024];
        loop {
            let read = match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            while frozen.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
            }
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// Migrates `db` through a direct connection, then puts a proxy in front of the PostgreSQL
/// server; returns the proxy and the database's URL through it.
async fn behind_a_proxy(db: &TestDatabase) -> (Proxy, String) {
    db.store().await;
    let proxy = Proxy::start("127.0.0.1:5432");
    let via_proxy = db
        .url()
        .replacen("127.0.0.1:5432", &format!("127.0.0.1:{}", proxy.port), 1);
    assert_ne!(
        via_proxy,
        db.url(),
        "the test database URL names 127.0.0.1:5432"
    );
    (proxy, via_proxy)
}

#[actix_web::test]
async fn a_database_outage_gives_503s_and_the_service_recovers_by_itself() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (proxy, via_proxy) = behind_a_proxy(&db).await;
    let mut config = StoreConfig::new(via_proxy);
    config.connect_timeout = Duration::from_millis(500);
    config.pool_size = 2;
    let app = TestApp::with_store(Some(db), Store::open(&config).expect("open")).await;

    assert_eq!(app.get("/v1/pets").await.status, 200);
    app.create_pet("before", "available").await;

    proxy.cut();
    for _ in 0..3 {
        let started = Instant::now();
        let reply = app.get("/v1/pets").await;
        reply.assert_error(503, "service_unavailable");
        assert_eq!(reply.header("retry-after"), Some("1"));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a 503 must not hang"
        );
    }
    app.post_json("/v1/pets", r#"{"name":"during","categoryId":1}"#)
        .await
        .assert_error(503, "service_unavailable");
    app.send(TestRequest::get().uri("/readyz"))
        .await
        .assert_error(503, "service_unavailable");

    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if app.get("/v1/pets").await.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the service did not recover");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    // Ready again once the last check (503) is older than its second.
    while app.send(TestRequest::get().uri("/readyz")).await.status != 200 {
        assert!(Instant::now() < deadline, "/readyz stayed 503");
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
    let names = app.pet_names().await;
    assert_eq!(names, ["before"], "nothing lost, nothing half-written");
}

/// Runs `request` to its answer, failing (rather than hanging the suite) if it never comes.
async fn answered<T>(what: &str, request: impl std::future::Future<Output = T>) -> T {
    actix_web::rt::time::timeout(Duration::from_secs(30), request)
        .await
        .unwrap_or_else(|_| panic!("{what} hung while the database was silent"))
}

#[actix_web::test]
async fn a_silent_database_gives_503s_within_the_deadline_and_the_service_recovers() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let (proxy, via_proxy) = behind_a_proxy(&db).await;
    let db_url = via_proxy.clone();
    let mut config = StoreConfig::new(via_proxy);
    config.connect_timeout = Duration::from_millis(500);
    config.statement_timeout = Duration::from_millis(300);
    config.pool_size = 2;
    let app = TestApp::with_store(Some(db), Store::open(&config).expect("open")).await;
    app.create_pet("before", "available").await;
    let mut patient = StoreConfig::new(db_url);
    patient.connect_timeout = Duration::from_secs(10);
    patient.statement_timeout = Duration::from_secs(10);
    let patient = TestApp::with_store(None, Store::open(&patient).expect("open")).await;

    // Connections stay open and nothing comes back: neither the statement timeout (the server
    // never sees the statement) nor TCP (the peer acknowledges) notices.
    proxy.freeze();
    for _ in 0..3 {
        let reply = answered(
            "POST /v1/pets",
            app.post_json("/v1/pets", r#"{"name":"during","categoryId":1}"#),
        )
        .await;
        reply.assert_error(503, "service_unavailable");
        assert_eq!(reply.header("retry-after"), Some("1"));
        answered("GET /v1/pets", app.get("/v1/pets"))
            .await
            .assert_error(503, "service_unavailable");
    }
    answered("GET /readyz", app.send(TestRequest::get().uri("/readyz")))
        .await
        .assert_error(503, "service_unavailable");
    // Where a store call may take long (a 10 s statement timeout, a 10 s wait for a connection),
    // /readyz still answers within its own deadline (2 s; the guard here allows 8).
    actix_web::rt::time::timeout(
        Duration::from_secs(8),
        patient.send(TestRequest::get().uri("/readyz")),
    )
    .await
    .expect("/readyz answers within its deadline")
    .assert_error(503, "service_unavailable");

    proxy.thaw();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if app.get("/v1/pets").await.status == 200
            && app.send(TestRequest::get().uri("/readyz")).await.status == 200
        {
            break;
        }
        assert!(Instant::now() < deadline, "the service did not recover");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let names = app.pet_names().await;
    assert_eq!(names[0], "before", "nothing lost");
    // A create answered 503 past its deadline may still have reached the database once it
    // thawed (docs/deploy.md): at most once each, never a half-written pet.
    assert!(names.len() <= 4, "{names:?}");
    assert!(names[1..].iter().all(|name| name == "during"), "{names:?}");
}

#[actix_web::test]
async fn an_exhausted_pool_gives_503_quickly_and_recovers() {
    use petstore_domain::{CreatePet, PetDraft, PetRepository, PetStatus};
    use petstore_store::testing::RawPostgres;
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    db.store().await;
    let mut config = StoreConfig::new(db.url());
    config.pool_size = 1;
    config.connect_timeout = Duration::from_millis(300);
    config.statement_timeout = Duration::from_secs(10);
    let holder = RawPostgres::connect(db.url()).expect("connect");
    let store = Store::open(&config).expect("open");
    let app = TestApp::with_store(Some(db), store.clone()).await;
    app.create_pet("before", "available").await;

    // Occupy the pool's only connection: a write waiting for a lock someone else holds.
    holder
        .execute("BEGIN; LOCK TABLE pets IN EXCLUSIVE MODE")
        .expect("lock");
    let occupied = actix_web::rt::spawn(async move {
        let pet = PetDraft::new("waiting", 1, PetStatus::Available).expect("draft");
        store.create_pet(&CreatePet::new(pet)).await
    });
    actix_web::rt::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    let reply = app
        .post_json("/v1/pets", r#"{"name":"refused","categoryId":1}"#)
        .await;
    reply.assert_error(503, "service_unavailable");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "answered within the connect timeout"
    );
    // Reads do not need the pool (they share a connection of their own), and the lock lets
    // them through.
    assert_eq!(app.get("/v1/pets").await.status, 200);

    holder.execute("ROLLBACK").expect("unlock");
    occupied.await.expect("task").expect("the waiting write");
    app.create_pet("after", "available").await;
    assert_eq!(app.pet_names().await, ["before", "waiting", "after"]);
}

/// An app over a storage that lets `max_calls` calls run at once, each waiting `wait` for its
/// turn (the bound is the HTTP layer's, the same for every backend).
async fn app_with_capacity(max_calls: u32, wait: Duration) -> TestApp {
    let storage = crate::memory_storage::MemoryStorage::with_capacity(max_calls, wait);
    TestApp::with_storage(Arc::new(storage)).await
}

#[actix_web::test]
async fn no_more_store_calls_run_at_once_than_the_storage_allows() {
    use std::sync::atomic::AtomicUsize;
    let app = app_with_capacity(2, Duration::from_secs(30)).await;
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let calls = (0..8).map(|_| {
        let (running, most) = (running.clone(), most.clone());
        app.state.db.call("check_ready", move |storage| {
            Box::pin(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                actix_web::rt::time::sleep(Duration::from_millis(50)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                storage.check_ready().await
            })
        })
    });
    for result in futures_util::future::join_all(calls).await {
        result.expect("every call runs, in turn");
    }
    let most = most.load(Ordering::SeqCst);
    assert!((1..=2).contains(&most), "{most} calls ran at once");
}

#[actix_web::test]
async fn a_store_call_that_finds_no_free_slot_in_time_is_unavailable() {
    let app = app_with_capacity(1, Duration::from_millis(200)).await;
    let state = app.state.clone();
    let (entered, holding) = tokio::sync::oneshot::channel();
    let holder = actix_web::rt::spawn(async move {
        state
            .db
            .call("test_sleep", move |_| {
                Box::pin(async move {
                    let _ = entered.send(());
                    actix_web::rt::time::sleep(Duration::from_secs(3)).await;
                    Ok::<_, StorageError>(())
                })
            })
            .await
    });
    holding.await.expect("the holder's call runs");

    // Had it waited for the holder's slot rather than timing out, it would have succeeded.
    let refused = app
        .state
        .db
        .call("test_noop", |_| {
            Box::pin(async { Ok::<_, StorageError>(()) })
        })
        .await;
    assert!(
        matches!(refused, Err(petstore_http::ApiError::NoStorageSlot(_))),
        "{refused:?}"
    );

    holder.await.expect("task").expect("the holder's call");
    app.state
        .db
        .call("test_noop", |_| {
            Box::pin(async { Ok::<_, StorageError>(()) })
        })
        .await
        .expect("a slot is free again");
}
