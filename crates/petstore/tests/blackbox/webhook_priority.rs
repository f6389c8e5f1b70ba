//! The webhook sender below the API, through the real binary: its thread (Linux), below the
//! priority of the threads that serve the API by `--webhook-sender-nice`, read from `/proc`;
//! and its storage calls, giving way to the requests under way (`--webhook-sender-share`).

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::common::{TestServer, temp_db, unlimited_key};
use crate::telemetry::scrape;
use crate::webhook_support::{LOOPBACK, Receiver, create_pet, register};

/// Each thread of process `pid`, by name: the niceness of each thread so named.
fn niceness_by_thread(pid: u32) -> BTreeMap<String, Vec<i32>> {
    let mut threads: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's threads");
    for task in tasks {
        // A thread that ended since the folder was read (an idle blocking thread) is passed.
        let Ok(stat) = std::fs::read_to_string(task.expect("a thread").path().join("stat")) else {
            continue;
        };
        // `tid (name) state ...`: the name may hold spaces; niceness is the 19th field.
        let (head, rest) = stat.rsplit_once(") ").expect("a stat line");
        let name = head.split_once(" (").expect("a name").1.to_owned();
        let nice = rest.split(' ').nth(16).expect("the niceness field");
        threads
            .entry(name)
            .or_default()
            .push(nice.parse().expect("a number"));
    }
    threads
}

#[test]
fn the_sender_runs_on_a_thread_of_its_own_below_the_apis_priority() {
    let (_dir, db) = temp_db();
    for (flags, lower) in [
        (&[][..], 10),
        (&["--webhook-sender-nice", "3"][..], 3),
        (&["--webhook-sender-nice", "0"][..], 0),
    ] {
        let server = TestServer::start(&db, flags);
        // Past the sender's first claims (it polls every second): had its storage calls run on
        // its own runtime, SQLite's would have started blocking threads there, at its priority.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let threads = niceness_by_thread(server.pid());
        let main = threads.values().flatten().copied().min().expect("threads");
        let sender = threads.get("webhook-sender").expect("the sender's thread");
        assert!(
            sender.len() == 1 && sender[0] == (main + lower).min(19),
            "{flags:?}: the sender's thread at {sender:?}, the process at {main}: {threads:?}"
        );
        // With no endpoint it resolves no receiver: nothing of its own blocks.
        assert!(
            !threads.contains_key("sender-blocking"),
            "{flags:?}: its storage calls run on the API's runtime: {threads:?}"
        );
        let api: Vec<i32> = threads
            .iter()
            .filter(|(name, _)| name.as_str() != "webhook-sender")
            .flat_map(|(_, nice)| nice.iter().copied())
            .collect();
        assert!(
            api.iter().all(|nice| *nice == main),
            "{flags:?}: every other thread at the process's priority: {threads:?}"
        );
        server.stop();
    }
    // No sender, no thread.
    let server = TestServer::start(&db, &["--webhook-sender=false"]);
    assert!(!niceness_by_thread(server.pid()).contains_key("webhook-sender"));
    server.stop();
}

/// While a request is under way (here a create whose body never comes), the sender gives way
/// to it, waiting before its claims (those it makes each second with nothing due, too), and
/// still sends every event; once it ends, the sender waits no more (scrapes are not the API's
/// requests).
#[test]
fn the_sender_gives_way_to_a_request_under_way_and_still_sends_every_event() {
    const EVENTS: usize = 12;
    const WAITS: &str = "petstore_webhook_giving_way_seconds_count";
    let (_dir, db) = temp_db();
    let key = unlimited_key(&db);
    let flags = [
        &LOOPBACK[..],
        &[
            "--webhook-sender-share",
            "0.1",
            "--client-body-timeout",
            "5m",
        ],
    ]
    .concat();
    let server = TestServer::start(&db, &flags);
    let receiver = Receiver::start();
    register(&server.base, &key, &receiver.url(), &["pet.created"]);
    let mut stalled = TcpStream::connect(server.addr()).expect("connect");
    write!(
        stalled,
        "POST /v1/pets HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    )
    .expect("a request's head");
    for n in 0..EVENTS {
        create_pet(&server.base, &key, &format!("Rex {n}"));
    }
    receiver.wait_for(Duration::from_secs(60), |received| received.len() >= EVENTS);
    // Only the stalled request is under way now: the claims of each second still wait.
    let before = scrape(&server.base).sum(WAITS, &[]);
    std::thread::sleep(Duration::from_millis(2500));
    let during = scrape(&server.base).sum(WAITS, &[]);
    assert!(
        during > before && before > 0.0,
        "the sender waits while a request is under way: {before}, then {during}"
    );
    drop(stalled);
    std::thread::sleep(Duration::from_millis(500));
    let ended = scrape(&server.base).sum(WAITS, &[]);
    std::thread::sleep(Duration::from_millis(2500));
    let after = scrape(&server.base).sum(WAITS, &[]);
    assert_eq!(after, ended, "no wait once no request is under way");
    assert_eq!(receiver.received().len(), EVENTS, "each event sent once");
    server.stop();
}
