//! The client against canned answers from a tiny local server: how it reads a `410`, never
//! retries a ban, waits out `Retry-After` before retrying a `429` or `503`, retries a lost
//! connection, and revalidates a kept answer until it is gone. (Its behaviour against the real
//! service is tested with the `petstore` binary, in `crates/petstore/tests/blackbox/client.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use petstore_client::{Client, Error, ErrorCode, PetQuery, RetryPolicy};
use petstore_domain::ManualClock;

/// One canned answer: status, extra headers, JSON body; `None` closes the connection unanswered.
type Answer = Option<(u16, Vec<(&'static str, String)>, String)>;

/// A request as it arrived: when, its `Idempotency-Key` and its `If-None-Match`, if any.
type Arrival = (Instant, Option<String>, Option<String>);

/// Serves `answers` in order, one per request, and records each request's arrival.
fn serve(answers: Vec<Answer>) -> (String, Arc<Mutex<Vec<Arrival>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    thread::spawn(move || {
        let mut answers = answers.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            // One request per connection: the client reconnects for the next.
            if !answer_one(stream, answers.next().flatten(), &seen) {
                continue;
            }
        }
    });
    (base, arrivals)
}

fn answer_one(stream: TcpStream, answer: Answer, seen: &Mutex<Vec<Arrival>>) -> bool {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0;
    let (mut idempotency_key, mut if_none_match) = (None, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if line.to_ascii_lowercase().starts_with("idempotency-key:") {
            idempotency_key = line.split_once(':').map(|(_, v)| v.trim().to_owned());
        }
        if line.to_ascii_lowercase().starts_with("if-none-match:") {
            if_none_match = line.split_once(':').map(|(_, v)| v.trim().to_owned());
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    seen.lock()
        .expect("lock")
        .push((Instant::now(), idempotency_key, if_none_match));
    let Some((status, headers, body)) = answer else {
        return true; // dropped: the connection closes unanswered
    };
    let mut stream = stream;
    // An answer marked `Cut` promises twice its body and closes after it: cut off mid-body.
    let cut = headers.iter().any(|(name, _)| *name == CUT);
    let promised = if cut { 2 * body.len() } else { body.len() };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {promised}\r\nConnection: close\r\n"
    );
    for (name, value) in headers.iter().filter(|(name, _)| *name != CUT) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    true
}

/// The header that marks an answer to cut off mid-body (not sent).
const CUT: &str = "Cut";

fn error(status: u16, code: &str) -> String {
    format!(r#"{{"code":"{code}","message":"canned","status":{status}}}"#)
}

fn client(base: &str) -> Client {
    Client::builder(base, "pst_test")
        .retry_policy(
            RetryPolicy::default()
                .max_retries(3)
                .base_delay(Duration::from_millis(10))
                .max_delay(Duration::from_millis(50)),
        )
        .build()
        .expect("client")
}

#[tokio::test]
async fn a_removed_endpoint_is_its_own_error() {
    let (base, arrivals) = serve(vec![Some((410, vec![], error(410, "endpoint_removed")))]);
    #[allow(deprecated)]
    let result = client(&base).get_pet(1).await;
    assert!(
        matches!(result, Err(Error::EndpointRemoved { .. })),
        "{result:?}"
    );
    assert_eq!(arrivals.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn a_ban_is_returned_at_once_never_retried() {
    let banned = Some((
        429,
        vec![("Retry-After", "300".to_owned())],
        error(429, "temporarily_banned"),
    ));
    let (base, arrivals) = serve(vec![banned.clone(), banned]);
    let result = client(&base).list_pets(&PetQuery::default()).await;
    let error = result.expect_err("banned");
    assert_eq!(error.code(), Some(ErrorCode::TemporarilyBanned));
    assert!(
        matches!(error, Error::Api { retry_after: Some(d), .. } if d == Duration::from_secs(300))
    );
    assert_eq!(
        arrivals.lock().expect("lock").len(),
        1,
        "one request, no retry"
    );
}

#[tokio::test]
async fn a_429_is_waited_out_in_full_then_retried() {
    let limited = Some((
        429,
        vec![("Retry-After", "1".to_owned())],
        error(429, "rate_limited"),
    ));
    let ok = Some((200, vec![], "[]".to_owned()));
    let (base, arrivals) = serve(vec![limited, ok]);
    let page = client(&base)
        .list_pets(&PetQuery::default())
        .await
        .expect("retried");
    assert!(page.items.is_empty());
    let arrivals = arrivals.lock().expect("lock").clone();
    assert_eq!(arrivals.len(), 2);
    // Correctness, not speed: the retry never comes before the instant Retry-After names.
    assert!(arrivals[1].0 - arrivals[0].0 >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_503_and_a_lost_connection_are_retried_and_a_write_keeps_its_key() {
    let unavailable = Some((
        503,
        vec![("Retry-After", "0".to_owned())],
        error(503, "service_unavailable"),
    ));
    let created = Some((
        201,
        vec![],
        r#"{"id":7,"name":"Rex","categoryId":1,"status":"available"}"#.to_owned(),
    ));
    let (base, arrivals) = serve(vec![unavailable, None, created]);
    let pet = client(&base)
        .create_pet(&petstore_client::NewPet {
            name: "Rex".into(),
            category_id: 1,
            status: None,
        })
        .await
        .expect("third time");
    assert_eq!(pet.id, 7);
    let arrivals = arrivals.lock().expect("lock").clone();
    assert_eq!(arrivals.len(), 3);
    let key = arrivals[0].1.clone().expect("an Idempotency-Key");
    assert!(!key.is_empty());
    assert!(
        arrivals
            .iter()
            .all(|(_, k, _)| k.as_deref() == Some(key.as_str())),
        "one key for every retry: {arrivals:?}"
    );
}

#[tokio::test]
async fn retries_stop_after_the_policys_count() {
    let unavailable = Some((
        503,
        vec![("Retry-After", "0".to_owned())],
        error(503, "service_unavailable"),
    ));
    let (base, arrivals) = serve(vec![unavailable; 10]);
    let error = client(&base)
        .inventory()
        .await
        .expect_err("still unavailable");
    assert_eq!(error.code(), Some(ErrorCode::ServiceUnavailable));
    assert_eq!(
        arrivals.lock().expect("lock").len(),
        4,
        "the first attempt and 3 retries"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_an_error_object_is_reported_as_such() {
    let (base, _) = serve(vec![Some((500, vec![], "<html>oops</html>".to_owned()))]);
    let error = client(&base).inventory().await.expect_err("500");
    assert!(matches!(error, Error::InvalidResponse(_)), "{error:?}");
}

#[tokio::test]
async fn a_write_still_running_on_the_service_is_waited_for_with_its_key() {
    let running = Some((
        409,
        vec![("Retry-After", "0".to_owned())],
        error(409, "idempotency_request_in_progress"),
    ));
    let placed = Some((
        201,
        vec![],
        r#"{"id":3,"petId":9,"quantity":1,"status":"placed","createdAt":"2026-11-23T00:00:00Z"}"#
            .to_owned(),
    ));
    let (base, arrivals) = serve(vec![running, placed]);
    let order = client(&base)
        .place_order(9)
        .await
        .expect("the first's answer");
    assert_eq!(order.id, 3);
    let arrivals = arrivals.lock().expect("lock").clone();
    assert_eq!(arrivals.len(), 2);
    assert_eq!(arrivals[0].1, arrivals[1].1, "the same Idempotency-Key");
}

#[tokio::test]
async fn a_wait_longer_than_max_wait_is_not_slept() {
    let day_used_up = Some((
        429,
        vec![("Retry-After", "99999999999".to_owned())],
        error(429, "rate_limited"),
    ));
    let (base, arrivals) = serve(vec![day_used_up]);
    let error = client(&base)
        .list_pets(&PetQuery::default())
        .await
        .expect_err("not waited out");
    assert_eq!(error.code(), Some(ErrorCode::RateLimited));
    assert_eq!(arrivals.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn a_cancel_whose_answer_is_lost_is_not_sent_again() {
    let (base, arrivals) = serve(vec![None, None]);
    let error = client(&base).cancel_order(5).await.expect_err("lost");
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
    assert_eq!(arrivals.lock().expect("lock").len(), 1, "sent once");
}

const REX: &str = r#"{"id":7,"name":"Rex","categoryId":1,"status":"available"}"#;

fn rex() -> petstore_client::NewPet {
    petstore_client::NewPet {
        name: "Rex".into(),
        category_id: 1,
        status: None,
    }
}

#[tokio::test]
async fn a_write_whose_answer_is_cut_off_is_asked_for_again_with_its_key() {
    let cut = Some((201, vec![(CUT, String::new())], REX.to_owned()));
    let replayed = Some((201, vec![], REX.to_owned()));
    let (base, arrivals) = serve(vec![cut, replayed]);
    let pet = client(&base).create_pet(&rex()).await.expect("replayed");
    assert_eq!(pet.id, 7);
    let arrivals = arrivals.lock().expect("lock").clone();
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals[0].1.is_some() && arrivals[0].1 == arrivals[1].1,
        "{arrivals:?}"
    );
}

#[tokio::test]
async fn a_cancel_answered_503_is_not_sent_again() {
    // The service may answer `503` for a write that went through after all: a second cancel
    // would be refused, and the caller told a done cancel failed.
    let unavailable = Some((
        503,
        vec![("Retry-After", "0".to_owned())],
        error(503, "service_unavailable"),
    ));
    let (base, arrivals) = serve(vec![unavailable.clone(), unavailable]);
    let error = client(&base).cancel_order(5).await.expect_err("503");
    assert_eq!(error.status(), Some(503));
    assert_eq!(arrivals.lock().expect("lock").len(), 1, "sent once");
}

#[tokio::test]
async fn a_retry_after_beyond_max_wait_holds_back_the_next_calls_too() {
    let day_used_up = Some((
        429,
        vec![("Retry-After", "30000".to_owned())],
        error(429, "rate_limited"),
    ));
    let (base, arrivals) = serve(vec![day_used_up.clone(), day_used_up]);
    let client = client(&base);
    let first = client.list_pets(&PetQuery::default()).await;
    assert_eq!(first.expect_err("429").code(), Some(ErrorCode::RateLimited));
    let second = client.list_pets(&PetQuery::default()).await;
    assert!(
        matches!(second, Err(Error::RateLimitWait(wait)) if wait > Duration::from_secs(29_000)),
        "{second:?}"
    );
    assert_eq!(
        arrivals.lock().expect("lock").len(),
        1,
        "nothing sent before Retry-After"
    );
}

/// A used-up window holds calls back until its reset (`X-RateLimit-Reset`), as the client's
/// clock reads it: too long a wait is refused at once, naming it; once the clock has passed the
/// reset, the call is sent.
#[tokio::test]
async fn a_used_up_window_waits_for_its_reset_by_the_clients_clock() {
    const T: u64 = 1_900_000_000;
    let used_up = Some((
        200,
        vec![
            ("X-RateLimit-Limit", "60".to_owned()),
            ("X-RateLimit-Remaining", "0".to_owned()),
            ("X-RateLimit-Reset", (T + 90).to_string()),
        ],
        "[]".to_owned(),
    ));
    let (base, arrivals) = serve(vec![used_up.clone(), used_up]);
    let clock = Arc::new(ManualClock::at(T));
    let client = Client::builder(&base, "pst_test")
        .max_wait(Duration::from_secs(60))
        .clock(clock.clone())
        .build()
        .expect("client");
    client.list_pets(&PetQuery::default()).await.expect("200");
    let held = client.list_pets(&PetQuery::default()).await;
    assert!(
        matches!(held, Err(Error::RateLimitWait(wait)) if wait == Duration::from_secs(90)),
        "{held:?}"
    );
    assert_eq!(arrivals.lock().expect("lock").len(), 1, "held back");
    clock.set(T + 90);
    client
        .list_pets(&PetQuery::default())
        .await
        .expect("sent at the reset");
    assert_eq!(arrivals.lock().expect("lock").len(), 2);
}

#[test]
fn a_builder_never_shows_its_key() {
    let builder = Client::builder("http://127.0.0.1:1/v1", "pst_do_not_show_me");
    let shown = format!("{builder:?}");
    assert!(!shown.contains("do_not_show_me"), "{shown}");
    assert!(shown.contains("127.0.0.1"), "{shown}");
}

#[tokio::test]
async fn a_write_cut_off_again_and_again_stops_after_the_policys_count() {
    let cut = Some((201, vec![(CUT, String::new())], REX.to_owned()));
    let (base, arrivals) = serve(vec![cut; 10]);
    let error = client(&base).create_pet(&rex()).await.expect_err("cut off");
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
    // The first send and the policy's 3 retries, whatever made each retry.
    assert_eq!(arrivals.lock().expect("lock").len(), 4);
}

#[tokio::test]
async fn a_kept_answer_is_asked_for_again_and_forgotten_once_gone() {
    let tagged = |body: &str| Some((200, vec![("ETag", "W/\"a1\"".to_owned())], body.to_owned()));
    let inventory = r#"{"available":1,"pending":0,"sold":0}"#;
    let (base, arrivals) = serve(vec![
        tagged(inventory),
        Some((304, vec![("ETag", "W/\"a1\"".to_owned())], String::new())),
        Some((404, vec![], error(404, "route_not_found"))),
        tagged(inventory),
    ]);
    let client = client(&base);
    let first = client.inventory().await.expect("200");
    assert_eq!(
        client.inventory().await.expect("304: the kept answer"),
        first
    );
    let gone = client.inventory().await.expect_err("404");
    assert_eq!(gone.status(), Some(404));
    client.inventory().await.expect("200 again");
    let asked: Vec<Option<String>> = arrivals
        .lock()
        .expect("lock")
        .iter()
        .map(|(_, _, tag)| tag.clone())
        .collect();
    let tag = Some("W/\"a1\"".to_owned());
    assert_eq!(
        asked,
        [None, tag.clone(), tag, None],
        "conditional while kept, plain once gone"
    );
}
