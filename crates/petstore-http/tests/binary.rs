//! Black-box: the real `petstore` binary on a free port over a temporary database, driven over
//! TCP by a real HTTP client, managed with its own `keys` commands, stopped and restarted.

mod common;

use std::time::{Duration, Instant};

use common::{Server, get, petstore, post, run};
use serde_json::Value;

#[test]
fn keys_pets_revocation_and_restart_over_real_tcp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("petstore.db");
    let db = db.to_str().expect("utf-8 path");

    let key = run(
        db,
        &["keys", "create", "--plan", "pro", "--label", "black-box"],
    );
    let key = key.trim();
    assert!(
        key.starts_with("pst_") && key.len() == 68,
        "stdout is only the key: {key:?}"
    );
    let listed = run(db, &["keys", "list"]);
    assert!(
        listed.contains("black-box") && listed.contains("pro"),
        "{listed}"
    );
    assert!(!listed.contains(key), "keys list never shows a secret");

    let server = Server::start(db, &["--bootstrap-key=false"]);
    assert!(
        server.stdout.iter().all(|l| !l.contains("pst_")),
        "no bootstrap key was asked for"
    );
    let (status, created) = post(&server.base, key, r#"{"name":"Rex","categoryId":2}"#);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");
    let (status, listed) = get(&server.base, "/pets", key);
    assert_eq!(status, 200);
    assert_eq!(listed, Value::Array(vec![created.clone()]));
    let (status, error) = post(&server.base, key, r#"{"name":"Rex"}"#);
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("missing_field"))
    );

    // Revocation reaches the running server within its key-cache period (1 s here).
    let key_id = run(db, &["keys", "list"])
        .lines()
        .find(|line| line.contains("black-box"))
        .and_then(|line| line.split_whitespace().next().map(str::to_owned))
        .expect("key id");
    run(db, &["keys", "revoke", &key_id]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = get(&server.base, "/pets", key);
        if status == 401 {
            assert_eq!(body["code"], "unauthorized");
            break;
        }
        assert!(Instant::now() < deadline, "revoked key still accepted");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();

    // Restart on the same database: everything is still there.
    let second = run(db, &["keys", "create", "--plan", "free"]);
    let server = Server::start(db, &[]);
    assert!(
        server.stdout.iter().all(|l| !l.contains("pst_")),
        "keys exist: no bootstrap key"
    );
    let (status, pet) = get(&server.base, &format!("/pets/{id}"), second.trim());
    assert_eq!(status, 200);
    assert_eq!(pet, created);
    server.stop();
}

#[test]
fn a_fresh_database_gets_a_working_bootstrap_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("petstore.db");
    let db = db.to_str().expect("utf-8 path");
    let server = Server::start(db, &[]);
    let key = server
        .stdout
        .iter()
        .find_map(|line| {
            line.trim()
                .strip_prefix("pst_")
                .map(|rest| format!("pst_{rest}"))
        })
        .expect("the bootstrap key is printed");
    let (status, body) = get(&server.base, "/pets", &key);
    assert_eq!((status, body), (200, Value::Array(vec![])));
    assert!(run(db, &["keys", "list"]).contains("bootstrap"));
    server.stop();
}

#[test]
fn cli_mistakes_fail_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("petstore.db");
    let db = db.to_str().expect("utf-8 path");
    let cases: [&[&str]; 4] = [
        &["keys", "create", "--plan", "gold"],
        &["keys", "create", "--plan", "enterprise"],
        &[
            "keys",
            "create",
            "--plan",
            "pro",
            "--per-minute",
            "5",
            "--per-day",
            "10",
        ],
        &["keys", "revoke", "999"],
    ];
    for args in cases {
        let output = petstore(db).args(args).output().expect("run");
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(!output.stderr.is_empty(), "{args:?} said nothing");
        assert!(output.stdout.is_empty(), "{args:?} printed to stdout");
    }
    let enterprise = run(
        db,
        &[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "5000",
            "--per-day",
            "5000000",
        ],
    );
    assert!(enterprise.trim().starts_with("pst_"));
    assert!(run(db, &["keys", "list"]).contains("5000000"));
}
