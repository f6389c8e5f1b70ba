//! Black-box hardening: what a hostile client or a bad network does to the real binary.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, Server, agent, run};

/// `petstore` under `prlimit`, with `files` open files at most (soft and hard), as a server on a
/// host with a low limit would run.
fn petstore_with_open_files(db: &str, files: u32) -> Command {
    let mut command = Command::new("prlimit");
    command
        .arg(format!("--nofile={files}:{files}"))
        .arg(BIN)
        .env_clear()
        .env("PETSTORE_DATABASE_URL", db)
        .env("RUST_LOG", "warn");
    command
}

/// A `POST /v1/pets` with a valid key whose head promises 1,000 bytes of body, of which one
/// arrives.
fn stalled_body(addr: &str, key: &str) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(addr).ok()?;
    let head = format!(
        "POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {key}\r\nContent-Length: 1000\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).ok()?;
    Some(stream)
}

#[test]
fn stalled_request_bodies_time_out_with_408_and_cannot_starve_other_clients() {
    let (_dir, db) = common::temp_db();
    let key = run(
        &db,
        &[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "100000",
            "--per-day",
            "1000000",
        ],
    );
    let key = key.trim();
    let server = Server::start_command(
        petstore_with_open_files(&db, 256),
        &["--bootstrap-key=false", "--client-body-timeout", "1s"],
        None,
    );
    let addr = server
        .base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();

    // One stalled body: 408 with the Error object once the timeout passes, then the close.
    let mut first = stalled_body(&addr, key).expect("connect");
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut answer = Vec::new();
    first
        .read_to_end(&mut answer)
        .expect("the server answers and closes");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"request_timeout\""), "{answer}");

    // Far more stalled bodies than the process may hold descriptors, in waves, while a normal
    // client keeps asking: every one of its requests is answered (each within the agent's
    // 10 s; without the body timeout the descriptors never come back and it waits forever).
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut held = Vec::new();
    let mut served = 0;
    while Instant::now() < deadline {
        for _ in 0..150 {
            if let Some(stream) = stalled_body(&addr, key) {
                held.push(stream);
            }
        }
        let response = agent()
            .get(format!("{}/pets?limit=1", server.base))
            .header("Authorization", format!("Bearer {key}"))
            .call()
            .expect("the normal client is served");
        assert_eq!(response.status().as_u16(), 200);
        served += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        held.len() > 1_000,
        "the flood was real: {} stalled bodies",
        held.len()
    );
    assert!(served > 0);
    drop(held);
    server.stop();
}
