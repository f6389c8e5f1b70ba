//! The sender on a clock a test sets (`Sender::with_clock`): it signs, and records its attempts,
//! at that clock's time.

use std::sync::Arc;
use std::time::Duration;

use petstore_domain::webhook::{DeliveryState, EndpointOwner, UrlPolicy};
use petstore_domain::{CreatePet, ManualClock, PetDraft, PetStatus, Storage};
use petstore_store::testing::{TestDatabase, an_operators_endpoint_at};
use petstore_webhooks::{Sender, SenderConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// When the test's clock stands: in 2030, far from the machine's.
const T: u64 = 1_900_000_000;

/// Answers one request `200`, and hands back its head.
async fn receive_one(listener: TcpListener) -> String {
    let (mut socket, _) = listener.accept().await.expect("a connection");
    let mut request = Vec::new();
    let mut buffer = [0; 4096];
    while !request.windows(4).any(|end| end == b"\r\n\r\n") {
        let read = socket.read(&mut buffer).await.expect("read");
        assert!(read > 0, "the request ended early");
        request.extend_from_slice(&buffer[..read]);
    }
    let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    socket.write_all(reply).await.expect("answer");
    String::from_utf8_lossy(&request).to_lowercase()
}

#[tokio::test]
async fn the_sender_signs_and_records_at_its_clocks_time() {
    let clock = Arc::new(ManualClock::at(T));
    let db = TestDatabase::sqlite();
    let store = db.store().await.with_clock(clock.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let policy = UrlPolicy {
        allow_http: true,
        allow_private: true,
    };
    let endpoint = an_operators_endpoint_at(&store, &url, policy).await;
    let store: Arc<dyn Storage> = Arc::new(store);
    let operators = EndpointOwner::Operator;
    let pet = CreatePet::new(PetDraft::new("Rex", 1, PetStatus::Available).expect("draft"));
    store.create_pet(&pet).await.expect("a pet, and its event");

    let config = SenderConfig {
        policy,
        poll: Duration::from_millis(20),
        ..SenderConfig::default()
    };
    let sender = Sender::new(store.clone(), config)
        .expect("a sender")
        .with_clock(clock.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(sender.run(async {
        stopped.await.ok();
    }));
    let head = tokio::time::timeout(Duration::from_secs(10), receive_one(listener))
        .await
        .expect("a delivery within 10 s");
    assert!(
        head.contains(&format!("\r\nwebhook-timestamp: {T}\r\n")),
        "{head}"
    );

    // Recorded once the answer is in: at the clock's time.
    let mut attempts = Vec::new();
    for _ in 0..500 {
        let page = store
            .list_webhook_deliveries(endpoint.id, operators, Default::default())
            .await
            .expect("the log")
            .expect("the endpoint");
        let delivery = &page.items[0];
        if delivery.state == DeliveryState::Delivered {
            let found = store
                .find_webhook_delivery(endpoint.id, delivery.id, operators)
                .await
                .expect("read")
                .expect("the delivery");
            attempts = found.1;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t = i64::try_from(T).expect("fits");
    assert_eq!(attempts.len(), 1, "delivered, at the first attempt");
    assert_eq!(attempts[0].attempted_at, t);
    assert_eq!(attempts[0].status, Some(200));
    stop.send(()).ok();
    running.await.expect("the sender stops");
}
