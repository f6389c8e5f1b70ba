//! The draining shutdown, against the real binary: on SIGTERM `/readyz` turns `503` at once while
//! requests are still served for the drain delay, requests in flight complete, and the process
//! exits 0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{TestServer, agent};

#[test]
fn sigterm_drains_then_stops_with_in_flight_requests_completed() {
    let (_dir, db) = crate::common::temp_db();
    let key = crate::common::unlimited_key(&db);
    let mut server = TestServer::start(&db, &["--bootstrap-key=false", "--shutdown-delay", "2s"]);
    let addr = server.addr();

    // A create whose body arrives slowly: in flight when the signal comes, and past the delay.
    let slow = {
        let (addr, key) = (addr.clone(), key.clone());
        std::thread::spawn(move || {
            let body = r#"{"name":"in flight","categoryId":1}"#;
            let mut stream = TcpStream::connect(&addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            let head = format!(
                "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).expect("head");
            stream.write_all(&body.as_bytes()[..10]).expect("part");
            std::thread::sleep(Duration::from_millis(2_500));
            stream.write_all(&body.as_bytes()[10..]).expect("rest");
            let mut answer = String::new();
            stream.read_to_string(&mut answer).expect("answer");
            answer
        })
    };
    std::thread::sleep(Duration::from_millis(300));

    server.terminate();
    let readyz = |agent: &ureq::Agent| {
        agent
            .get(format!("http://{addr}/readyz"))
            .call()
            .map(|response| response.status().as_u16())
            .unwrap_or(0)
    };
    let agent = agent();
    let deadline = Instant::now() + Duration::from_secs(10);
    while readyz(&agent) != 503 {
        assert!(Instant::now() < deadline, "/readyz never turned 503");
        std::thread::sleep(Duration::from_millis(20));
    }
    let served = agent
        .get(format!("{}/pets", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .call()
        .expect("still served while draining");
    assert_eq!(served.status().as_u16(), 200);

    let answer = slow.join().expect("slow request");
    assert!(
        answer.starts_with("HTTP/1.1 201"),
        "the request in flight completed: {answer}"
    );
    server.wait_for_exit();
}
