//! What the webhook tests share: a receiver of the test's own on loopback (plain std TCP,
//! answering as told: a status, or nothing at all), signatures checked by an independent
//! implementation (Python's `hmac`), and the calls that register endpoints and make events.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TestServer, agent, post};

/// The flags every server here runs with: the receiver is plain HTTP on loopback.
pub(crate) const LOOPBACK: [&str; 2] = ["--webhook-allow-http", "--webhook-allow-private"];

/// One delivery as the receiver got it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) id: String,
    pub(crate) timestamp: String,
    pub(crate) signature: String,
    pub(crate) body: String,
    /// Its `traceparent`, when it came with one (traces exported).
    pub(crate) traceparent: Option<String>,
}

impl Received {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answer {
    Status(u16),
    /// Reads the request, then says nothing for a minute.
    Silence,
}

/// A webhook receiver on a loopback port: records every request, answers as told.
pub(crate) struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    answer: Arc<Mutex<Answer>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    /// A free port, with no listener on it yet.
    pub(crate) fn reserve() -> SocketAddr {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("bind")
            .local_addr()
            .expect("address")
    }

    pub(crate) fn start() -> Self {
        Self::start_on(Self::reserve())
    }

    pub(crate) fn start_on(addr: SocketAddr) -> Self {
        let listener = TcpListener::bind(addr).expect("bind the receiver");
        listener.set_nonblocking(true).expect("non-blocking");
        let receiver = Self {
            addr,
            received: Arc::default(),
            answer: Arc::new(Mutex::new(Answer::Status(204))),
            stop: Arc::default(),
        };
        let (received, answer, stop) = (
            receiver.received.clone(),
            receiver.answer.clone(),
            receiver.stop.clone(),
        );
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (received, answer) = (received.clone(), answer.clone());
                        thread::spawn(move || serve(stream, &received, &answer));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        receiver
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    pub(crate) fn answer(&self, answer: Answer) {
        *self.answer.lock().expect("lock") = answer;
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Waits (up to `within`) until `done` holds for what was received; returns it.
    pub(crate) fn wait_for(
        &self,
        within: Duration,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "the receiver did not get what was expected within {within:?}; it got {} \
                 deliveries: {:#?}",
                received.len(),
                received.iter().map(|r| &r.body).collect::<Vec<_>>()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request from `stream`, records it, answers as told.
fn serve(stream: TcpStream, received: &Mutex<Vec<Received>>, answer: &Mutex<Answer>) {
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut headers = HashMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let header = |name: &str| headers.get(name).cloned().unwrap_or_default();
    received.lock().expect("lock").push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8(body).expect("UTF-8 body"),
        traceparent: headers.get("traceparent").cloned(),
    });
    let mut stream = stream;
    let answer = *answer.lock().expect("lock");
    match answer {
        Answer::Status(status) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {status} Answer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
        Answer::Silence => thread::sleep(Duration::from_secs(60)),
    }
}

/// Verifies each delivery's signature with Python's `hmac`, as a receiver in another language
/// would (Standard Webhooks v1: any `v1,` signature over `id.timestamp.body` that matches, in
/// constant time): one verdict per delivery, in order.
pub(crate) fn python_verdicts(secret: &str, deliveries: &[Received]) -> Vec<bool> {
    const VERIFY: &str = r#"
import base64, hashlib, hmac, json, sys
for line in sys.stdin:
    d = json.loads(line)
    key = base64.b64decode(d["secret"].removeprefix("whsec_"))
    signed = f'{d["id"]}.{d["timestamp"]}.{d["body"]}'.encode()
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    ok = any(part.startswith("v1,") and hmac.compare_digest(part[3:], expected)
             for part in d["signature"].split(" "))
    print("ok" if ok else "bad", flush=True)
"#;
    let mut python = Command::new("python3")
        .args(["-c", VERIFY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut input = String::new();
    for delivery in deliveries {
        let line = json!({
            "secret": secret,
            "id": delivery.id,
            "timestamp": delivery.timestamp,
            "signature": delivery.signature,
            "body": delivery.body,
        });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    python
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let output = python.wait_with_output().expect("python ran");
    assert!(output.status.success(), "python failed");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .map(|verdict| verdict == "ok")
        .collect()
}

/// `method` `path` (under the base) with `key` and a JSON `body`.
pub(crate) fn call(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json");
    let request = request
        .body(body.map(|body| body.to_string()).unwrap_or_default())
        .expect("request");
    let mut response = agent().run(request).expect(method);
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Registers an endpoint for `events` at `url`: its id and secret.
pub(crate) fn register(base: &str, key: &str, url: &str, events: &[&str]) -> (i64, String) {
    let (status, endpoint) = call(
        base,
        "POST",
        "/webhook_endpoints",
        key,
        Some(json!({"url": url, "events": events})),
    );
    assert_eq!(status, 201, "{endpoint}");
    let secret = endpoint["secret"].as_str().expect("secret").to_owned();
    (endpoint["id"].as_i64().expect("id"), secret)
}

pub(crate) fn place_order(base: &str, key: &str, pet: i64) -> i64 {
    let (status, order) = call(
        base,
        "POST",
        "/store/orders",
        key,
        Some(json!({"petId": pet})),
    );
    assert_eq!(status, 201, "{order}");
    order["id"].as_i64().expect("order id")
}

pub(crate) fn create_pet(base: &str, key: &str, name: &str) -> i64 {
    let (status, pet) = post(
        base,
        key,
        &json!({"name": name, "categoryId": 1}).to_string(),
    );
    assert_eq!(status, 201, "{pet}");
    pet["id"].as_i64().expect("pet id")
}

/// The admin API's base address on `server` (started with `--admin-bind`).
pub(crate) fn admin_base(server: &TestServer) -> String {
    server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("admin on "))
        .expect("the admin listener")
        .to_owned()
}
