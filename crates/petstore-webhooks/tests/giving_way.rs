//! A sender giving way to an API that is never idle (`Sender::giving_way_to`) still sends every
//! delivery: it keeps its share of the time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use petstore_domain::webhook::UrlPolicy;
use petstore_domain::{CreatePet, PetDraft, PetStatus, Storage};
use petstore_store::testing::{TestDatabase, an_operators_endpoint_at};
use petstore_webhooks::{Sender, SenderConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The deliveries sent.
const EVENTS: usize = 12;

/// Answers every request on `socket` `200` (keeping the connection), counting them in `received`.
async fn answer(mut socket: TcpStream, received: Arc<AtomicUsize>) {
    let mut buffer = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        let head_end = loop {
            if let Some(end) = buffer.windows(4).position(|end| end == b"\r\n\r\n") {
                break end + 4;
            }
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
        let length: usize = (head.lines())
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().expect("a length"));
        while buffer.len() < head_end + length {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
        buffer.drain(..head_end + length);
        received.fetch_add(1, Ordering::SeqCst);
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        if socket.write_all(reply).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn a_sender_giving_way_to_an_api_never_idle_still_sends_every_delivery() {
    let db = TestDatabase::sqlite();
    let store = db.store().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let received = Arc::new(AtomicUsize::new(0));
    let counted = received.clone();
    let receiver = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, counted.clone()));
        }
    });
    let policy = UrlPolicy {
        allow_http: true,
        allow_private: true,
    };
    an_operators_endpoint_at(&store, &url, policy).await;
    let store: Arc<dyn Storage> = Arc::new(store);
    for n in 0..EVENTS {
        let draft = PetDraft::new(format!("Rex {n}"), 1, PetStatus::Available).expect("draft");
        store
            .create_pet(&CreatePet::new(draft))
            .await
            .expect("a pet, and its event");
    }

    // A share of a tenth: each storage call is followed by a wait 9 times as long.
    let config = SenderConfig {
        policy,
        poll: Duration::from_millis(20),
        share: 0.1,
        ..SenderConfig::default()
    };
    let asked = Arc::new(AtomicUsize::new(0));
    let asking = asked.clone();
    let sender = Sender::new(store.clone(), config)
        .expect("a sender")
        .giving_way_to(Arc::new(move || {
            asking.fetch_add(1, Ordering::SeqCst);
            true
        }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(sender.run(async {
        stopped.await.ok();
    }));
    // Sent and recorded: nothing left pending. (The bound keeps a broken sender from hanging
    // the suite; it is no measure of speed.)
    let mut pending = u64::MAX;
    for _ in 0..3000 {
        pending = store.webhook_backlog().await.expect("the backlog").pending;
        if pending == 0 && received.load(Ordering::SeqCst) >= EVENTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pending, 0, "every delivery recorded");
    assert_eq!(received.load(Ordering::SeqCst), EVENTS, "each sent once");
    assert!(asked.load(Ordering::SeqCst) > 0, "the API's load was asked");
    stop.send(()).ok();
    running.await.expect("the sender stops");
    receiver.abort();
}
