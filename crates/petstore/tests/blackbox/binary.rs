//! Black-box: the real `petstore` binary on a free port over a temporary database, driven over
//! TCP by a real HTTP client, managed with its own `keys` commands, stopped and restarted.

use std::time::{Duration, Instant};

use crate::common::{TestServer, petstore, run};
use serde_json::{Value, json};

#[test]
fn keys_pets_revocation_and_restart_over_real_tcp() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();

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

    let server = TestServer::start(db, &["--bootstrap-key=false"]);
    assert!(
        server.stdout.iter().all(|l| !l.contains("pst_")),
        "no bootstrap key was asked for"
    );
    let (status, created) = server.post_pet(key, r#"{"name":"Rex","categoryId":2}"#);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");
    let (status, listed) = server.list_pets("", key);
    assert_eq!(status, 200);
    assert_eq!(listed, Value::Array(vec![created.clone()]));
    let (status, error) = server.post_pet(key, r#"{"name":"Rex"}"#);
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
        let (status, body) = server.list_pets("", key);
        if status == 401 {
            assert_eq!(body["code"], "unauthorized");
            break;
        }
        assert!(Instant::now() < deadline, "revoked key still accepted");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();

    // Restart on the same database: everything is still there, the revoked key too.
    let second = run(db, &["keys", "create", "--plan", "free"]);
    let second = second.trim();
    let server = TestServer::start(db, &[]);
    assert!(
        server.stdout.iter().all(|l| !l.contains("pst_")),
        "keys exist: no bootstrap key"
    );
    let health = crate::common::agent()
        .get(format!("{}/healthz", server.base.trim_end_matches("/v1")))
        .call()
        .expect("GET /healthz");
    assert_eq!(health.status().as_u16(), 200, "/healthz needs no key");
    let (status, pet) = server.get_pet(id, second);
    assert_eq!(status, 200);
    assert_eq!(pet, created);
    assert_eq!(
        server.list_pets("", key).0,
        401,
        "still revoked after a restart"
    );

    // A 201 survives a crash: kill -9 right after the answer, then restart.
    let (status, durable) = server.post_pet(second, r#"{"name":"Durable","categoryId":3}"#);
    assert_eq!(status, 201);
    server.crash();
    let server = TestServer::start(db, &[]);
    let (status, after_crash) = server.get_pet(&durable["id"], second);
    assert_eq!((status, after_crash), (200, durable));
    server.stop();
}

#[test]
fn cli_mistakes_fail_with_a_message() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
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
    let enterprise = crate::common::enterprise_key(db, 5000, 5_000_000);
    assert!(enterprise.starts_with("pst_"));
    assert!(run(db, &["keys", "list"]).contains("5000000"));
}

#[test]
fn server_settings_out_of_range_are_usage_errors_that_touch_nothing() {
    let (dir, db) = crate::common::temp_db_path();
    let cases: [(&[&str], &str); 6] = [
        (&["serve", "--workers", "0"], "--workers"),
        (&["serve", "--workers", "513"], "--workers"),
        (
            &["serve", "--rate-limit-timeout", "0s"],
            "must be more than 0",
        ),
        (
            &["serve", "--client-body-timeout", "0ms"],
            "must be more than 0",
        ),
        (
            &["migrate", "--db-connect-timeout", "0s"],
            "must be more than 0",
        ),
        (
            &["keys", "list", "--db-connect-timeout", "0s"],
            "must be more than 0",
        ),
    ];
    for (args, says) in cases {
        let output = petstore(&db).args(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} printed to stdout");
    }
    assert!(
        !std::path::Path::new(&db).exists(),
        "a refused command created the database in {}",
        dir.path().display()
    );
    // A store URL that cannot work is named without its password.
    let output = petstore(&db)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--rate-limit-store",
            "rediss+cluster://default:S3cret@127.0.0.1:1/0",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("default:***@"), "{stderr}");
    assert!(!stderr.contains("S3cret"), "{stderr}");
}

#[test]
fn a_sigterm_as_soon_as_the_server_listens_is_a_clean_stop() {
    let (_dir, db) = crate::common::temp_db();
    for _ in 0..3 {
        let mut server =
            TestServer::start(&db, &["--bootstrap-key=false", "--shutdown-delay", "0s"]);
        server.terminate();
        server.wait_for_exit();
    }
}

#[test]
fn bans_are_listed_and_lifted_with_the_cli() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let key = run(
        db,
        &[
            "keys",
            "create",
            "--plan",
            "enterprise",
            "--per-minute",
            "2",
            "--per-day",
            "100",
            "--label",
            "pushy",
        ],
    );
    let key = key.trim();
    let server = TestServer::start(db, &["--bootstrap-key=false", "--ban-threshold", "1"]);
    crate::common::wait_for_room_in_minute(20);
    let codes: Vec<(u16, String)> = (0..4)
        .map(|_| {
            let (status, body) = server.list_pets("", key);
            (status, body["code"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    let codes: Vec<(u16, &str)> = codes.iter().map(|(s, c)| (*s, c.as_str())).collect();
    assert_eq!(
        codes,
        [
            (200, ""),
            (200, ""),
            (429, "rate_limited"),
            (429, "temporarily_banned")
        ]
    );
    assert!(
        run(db, &["keys", "list"])
            .lines()
            .any(|line| line.contains("pushy") && line.contains(" banned ")),
        "the table's state says banned"
    );
    let listed = run(db, &["keys", "list", "--wide"]);
    let banned_column = listed
        .lines()
        .next()
        .and_then(|header| header.split_whitespace().position(|c| c == "BANNED_UNTIL"))
        .expect("a BANNED_UNTIL column");
    let line = listed
        .lines()
        .find(|l| l.contains("pushy"))
        .expect("listed");
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_ne!(columns[banned_column], "-", "BANNED_UNTIL is shown: {line}");

    run(db, &["keys", "unban", columns[0]]);
    assert!(
        !run(db, &["keys", "list", "--wide"])
            .lines()
            .any(|l| l.contains("pushy") && l.split_whitespace().nth(banned_column) != Some("-"))
    );
    // The running server sees the lifted ban within its key-cache period (1 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = server.list_pets("", key);
        if body["code"] != "temporarily_banned" {
            assert!(
                status == 200 || body["code"] == "rate_limited",
                "{status} {body}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the ban was not lifted");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();
}

#[test]
fn the_database_url_flag_takes_a_sqlite_url_anywhere_on_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("flag.db").display());
    let migrated = std::process::Command::new(crate::common::BIN)
        .env_clear()
        .args(["--database-url", &url, "migrate"])
        .status()
        .expect("run");
    assert!(migrated.success());
    let output = std::process::Command::new(crate::common::BIN)
        .env_clear()
        .args(["--database-url", &url, "keys", "create", "--plan", "free"])
        .output()
        .expect("run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed = std::process::Command::new(crate::common::BIN)
        .env_clear()
        .args(["keys", "list", "--database-url", &url])
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("free"));
    assert!(
        dir.path().join("flag.db").exists(),
        "sqlite://PATH names the file"
    );
}

#[test]
fn keys_never_reach_the_log() {
    let (dir, db) = crate::common::temp_db();
    let key = run(&db, &["keys", "create", "--plan", "pro"]);
    let key = key.trim();
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(&db, &["--bootstrap-key=false"], Some(&log));
    assert_eq!(server.list_pets("", key).0, 200);
    assert_eq!(server.post_pet(key, r#"{"name":1}"#).0, 400);
    let unknown = format!("pst_{}", "e".repeat(64));
    assert_eq!(server.list_pets("", &unknown).0, 401);
    server.stop();
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.contains("GET /v1/pets"),
        "one access-log line per request:\n{text}"
    );
    assert!(text.contains("POST /v1/pets"), "{text}");
    assert!(
        !text.contains(key) && !text.contains(&unknown),
        "a key was logged:\n{text}"
    );
    assert!(
        !text.contains(&key[4..20]),
        "part of a key was logged:\n{text}"
    );
}

#[test]
fn the_key_lifecycle_from_the_command_line() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let reader = run(
        db,
        &[
            "keys",
            "create",
            "--plan",
            "pro",
            "--label",
            "reader",
            "--scope",
            "read-only",
            "--expires-in",
            "90d",
        ],
    );
    let reader = reader.trim().to_owned();
    let writer = run(
        db,
        &["keys", "create", "--plan", "free", "--label", "writer"],
    );
    let writer = writer.trim().to_owned();
    let list = |db: &str| -> Vec<Value> {
        serde_json::from_str(&run(db, &["keys", "list", "--format", "json"])).expect("JSON")
    };
    let keys = list(db);
    assert_eq!(keys.len(), 2);
    let (reader_entry, writer_entry) = (&keys[0], &keys[1]);
    assert_eq!(reader_entry["scope"], "read-only");
    assert_eq!(reader_entry["state"], "active");
    assert!(
        reader_entry["expiresAt"].as_str().is_some(),
        "{reader_entry}"
    );
    assert_eq!(writer_entry["scope"], "read-write");
    assert_eq!(writer_entry["expiresAt"], Value::Null);
    assert_eq!(writer_entry["lastUsedAt"], Value::Null);
    assert!(
        !serde_json::to_string(&keys)
            .expect("text")
            .contains(&writer[4..]),
        "no secret in the listing"
    );
    let text = run(db, &["keys", "list"]);
    assert!(
        text.contains("read-only") && text.contains("SCOPE"),
        "{text}"
    );

    let server = TestServer::start(db, &["--bootstrap-key=false"]);
    let (status, body) = server.post_pet(&reader, r#"{"name":"Rex","categoryId":1}"#);
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("insufficient_scope"))
    );
    assert_eq!(server.list_pets("", &reader).0, 200);
    assert_eq!(server.list_pets("", &writer).0, 200);

    // Rotation: a new secret for the same key; the old one works through the grace period.
    let id = writer_entry["id"].to_string();
    let rotated = run(db, &["keys", "rotate", &id, "--grace", "1h"]);
    let rotated = rotated.trim().to_owned();
    assert!(rotated.starts_with("pst_") && rotated != writer);
    assert_eq!(server.list_pets("", &rotated).0, 200);
    assert_eq!(server.list_pets("", &writer).0, 200);
    let keys = list(db);
    assert_eq!(keys.len(), 2, "the same key, not a new one");
    assert!(keys[1]["previousSecretUntil"].as_str().is_some());
    // The use is recorded in the background, after the answer: wait for it, within a bound.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut keys = keys;
    while keys[1]["lastUsedAt"].as_str().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        keys = list(db);
    }
    assert!(
        keys[1]["lastUsedAt"].as_str().is_some(),
        "recorded in the background: {}",
        keys[1]
    );
    // Without grace, the old secret stops (within the key-cache TTL, 1 s here).
    let newest = run(db, &["keys", "rotate", &id, "--grace", "0s"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.list_pets("", &rotated).0 != 401 {
        assert!(
            Instant::now() < deadline,
            "the rotated-out secret still works"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(server.list_pets("", newest.trim()).0, 200);

    // Re-scoping: the reader may write once it is read-write.
    let reader_id = reader_entry["id"].to_string();
    run(db, &["keys", "update", &reader_id, "--scope", "read-write"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server
        .post_pet(&reader, r#"{"name":"Rex","categoryId":1}"#)
        .0
        != 201
    {
        assert!(Instant::now() < deadline, "the new scope never applied");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();

    // What the command line refuses.
    for args in [
        &["keys", "update", "1"][..],
        &["keys", "create", "--plan", "pro", "--scope", "admin"],
        &[
            "keys",
            "create",
            "--plan",
            "pro",
            "--expires-at",
            "2001-01-01T00:00:00Z",
        ],
        &[
            "keys",
            "create",
            "--plan",
            "pro",
            "--expires-in",
            "1d",
            "--expires-at",
            "2099-01-01T00:00:00Z",
        ],
        &["keys", "rotate", "999"],
    ] {
        let output = petstore(db).args(args).output().expect("run");
        assert!(!output.status.success(), "{args:?} succeeded");
    }
    let help = petstore(db)
        .args(["keys", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    for word in ["rotate", "update", "list", "create"] {
        assert!(
            help.contains(word),
            "{word} missing from keys --help:\n{help}"
        );
    }
}

#[test]
fn admin_commands_never_guess_their_database() {
    let (_dir, db) = crate::common::temp_db_path();
    let db = db.as_str();
    let fails = |args: &[&str], says: &[&str]| {
        let output = petstore(db).args(args).output().expect("run petstore");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
        for words in says {
            assert!(
                stderr.contains(words),
                "{args:?}: {words:?} not in {stderr}"
            );
        }
        stderr
    };
    // Nothing there: no command but `migrate` creates it.
    for args in [
        &["keys", "create", "--plan", "free"][..],
        &["keys", "list"],
        &["orders", "list"],
        &["migrate", "status"],
        &["serve", "--bind", "127.0.0.1:0", "--no-migrate"],
    ] {
        fails(args, &[db, "petstore migrate"]);
        assert!(
            !std::path::Path::new(db).exists(),
            "{args:?} created the database"
        );
    }
    // A database whose schema is behind (here: an empty SQLite file).
    std::fs::File::create(db).expect("an empty database");
    let stderr = fails(
        &["keys", "create", "--plan", "free"],
        &["schema is behind", "petstore migrate"],
    );
    assert!(
        stderr.contains(&format!("petstore: database: SQLite file {db}")),
        "says which database: {stderr}"
    );
    fails(&["orders", "list"], &["schema is behind"]);
    fails(
        &["serve", "--bind", "127.0.0.1:0", "--no-migrate"],
        &["--no-migrate", "pending", "petstore migrate"],
    );
    let output = petstore(db)
        .args(["migrate", "status"])
        .output()
        .expect("status");
    assert!(!output.status.success(), "pending migrations exit non-zero");
    let listed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        !listed.is_empty() && listed.lines().all(|line| line.starts_with("pending  ")),
        "{listed}"
    );
    // `migrate` applies them, saying where; then everything works, `serve --no-migrate` too.
    let output = petstore(db).arg("migrate").output().expect("migrate");
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains(db));
    let status = run(db, &["migrate", "status"]);
    assert_eq!(status.lines().count(), listed.lines().count(), "{status}");
    assert!(
        status.lines().all(|line| line.starts_with("applied  ")),
        "{status}"
    );
    let key = run(db, &["keys", "create", "--plan", "free"]);
    let server = TestServer::start(db, &["--bootstrap-key=false", "--no-migrate"]);
    assert_eq!(server.list_pets("", key.trim()).0, 200);
    server.stop();
}

/// `keys verify SECRET`'s answer: its exit status and what it printed.
fn verify(db: &str, secret: &str, format: &str) -> (i32, String) {
    use std::io::Write;
    let mut child = petstore(db)
        .args(["keys", "verify", "--format", format])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run petstore");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{secret}\n").as_bytes())
        .expect("write the secret");
    let output = child.wait_with_output().expect("verify");
    let code = output.status.code().expect("exited");
    (code, String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn the_key_cli_is_scriptable() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let json = |args: &[&str]| -> Value {
        serde_json::from_str(&run(db, args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let label = "ACME Corporation, a customer whose name is long enough to need more than one line";
    let created = json(&[
        "keys", "create", "--plan", "pro", "--label", label, "--format", "json",
    ]);
    let id = created["id"].as_i64().expect("id");
    let secret = created["key"].as_str().expect("the secret").to_owned();
    assert!(secret.starts_with("pst_"), "{created}");
    assert_eq!(created["plan"], "pro");
    // `show` gives what `create` gave, but the secret.
    let mut shown = json(&["keys", "show", &id.to_string(), "--format", "json"]);
    shown["key"] = created["key"].clone();
    assert_eq!(shown, created);
    assert!(run(db, &["keys", "show", &id.to_string()]).contains(label));
    let output = petstore(db)
        .args(["keys", "show", "999"])
        .output()
        .expect("run");
    assert!(!output.status.success());

    // `verify`: 0 for a working secret, 3 for none, 4 for one that no longer works.
    let (code, text) = verify(db, &secret, "text");
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with(&format!("key {id}: pro plan")), "{text}");
    let (code, text) = verify(db, &secret, "json");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        (code, &answer["id"], &answer["valid"]),
        (0, &json!(id), &json!(true))
    );
    for unknown in [
        "pst_0000000000000000000000000000000000000000000000000000000000000000",
        "not a key",
        "",
    ] {
        assert_eq!(verify(db, unknown, "text").0, 3, "{unknown:?}");
    }
    let rotated = json(&[
        "keys",
        "rotate",
        &id.to_string(),
        "--grace",
        "0s",
        "--format",
        "json",
    ]);
    let new_secret = rotated["key"].as_str().expect("the new secret");
    assert_eq!(rotated["id"], created["id"]);
    let (code, text) = verify(db, &secret, "text");
    assert_eq!(code, 4, "the rotated-out secret: {text}");
    assert!(text.contains("rotated out"), "{text}");
    assert_eq!(verify(db, new_secret, "text").0, 0);
    let expiring = json(&[
        "keys",
        "create",
        "--plan",
        "free",
        "--expires-in",
        "1s",
        "--format",
        "json",
    ]);
    std::thread::sleep(Duration::from_millis(1_500));
    let (code, text) = verify(db, expiring["key"].as_str().expect("secret"), "text");
    assert_eq!(code, 4, "{text}");
    assert!(text.contains("expired"), "{text}");
    run(db, &["keys", "revoke", &id.to_string()]);
    assert_eq!(
        verify(db, new_secret, "text").0,
        3,
        "a revoked key is no active key"
    );
    // The secret is never an argument (other users of the machine can read arguments).
    let output = petstore(db)
        .args(["keys", "verify", new_secret])
        .output()
        .expect("run");
    assert!(!output.status.success());

    // The table fits 100 columns; `--wide` has every column.
    let table = run(db, &["keys", "list"]);
    assert!(table.lines().count() > 3, "{table}");
    for line in table.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(table.contains("ACME Corporation"), "{table}");
    let wide = run(db, &["keys", "list", "--wide"]);
    assert!(wide.contains("LAST_USED") && wide.contains(label), "{wide}");
    assert_eq!(json(&["orders", "list", "--format", "json"]), json!([]));
}

#[test]
fn health_asks_a_running_server_and_exits_0_or_1() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let server = TestServer::start(db, &["--bootstrap-key=false"]);
    let root = format!("http://{}", server.addr());
    let health = |args: &[&str], bind: &str| {
        petstore(db)
            .env("PETSTORE_BIND", bind)
            .arg("health")
            .args(args)
            .output()
            .expect("run petstore")
    };
    let code = |output: &std::process::Output| output.status.code().expect("exited");
    // Asked by URL, or where PETSTORE_BIND says the server listens (a wildcard on loopback).
    let port = server
        .addr()
        .rsplit_once(':')
        .expect("host:port")
        .1
        .to_owned();
    assert_eq!(code(&health(&["--url", &root], "")), 0);
    assert_eq!(code(&health(&["--url", &root, "--ready"], "")), 0);
    assert_eq!(code(&health(&[], &server.addr())), 0);
    assert_eq!(code(&health(&["--ready"], &format!("0.0.0.0:{port}"))), 0);
    // Anything but 200 is 1, saying what it got.
    let output = health(&["--url", &server.base], "");
    assert_eq!(code(&output), 1);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("404"),
        "{output:?}"
    );
    server.stop();
    let output = health(&["--url", &root, "--timeout", "2s"], "");
    assert_eq!(code(&output), 1, "nothing listening");
}

/// The subcommands of every `petstore ...` (or `cargo run ... -- ...`) command line the README
/// shows, in code blocks or inline: the words before the first flag or placeholder, past the
/// database flag that may come first.
fn readme_commands() -> std::collections::BTreeSet<Vec<String>> {
    let readme = include_str!("../../../../README.md");
    let mut commands = std::collections::BTreeSet::new();
    for line in readme.lines() {
        let mut rest = line;
        loop {
            let petstore = rest.find("petstore ").map(|i| (i, "petstore ".len()));
            let cargo = rest
                .find("cargo run")
                .and_then(|i| rest[i..].find(" -- ").map(|j| (i + j, " -- ".len())));
            let Some((at, skip)) = [petstore, cargo].into_iter().flatten().min() else {
                break;
            };
            rest = &rest[at + skip..];
            let mut words = Vec::new();
            let mut tokens = rest.split_whitespace();
            while let Some(raw) = tokens.next() {
                let token = raw.trim_end_matches(['`', ')', ',', ';', '.']);
                if token == "--database-url" {
                    tokens.next();
                    continue;
                }
                if token.is_empty()
                    || token.starts_with('-')
                    || !token.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                {
                    break;
                }
                words.push(token.to_owned());
                if raw.contains('`') {
                    break; // the end of an inline command
                }
            }
            commands.insert(words);
        }
    }
    commands
}

#[test]
fn every_command_the_readme_shows_still_parses() {
    let commands = readme_commands();
    for expected in [
        &["keys", "create"][..],
        &["keys", "verify"],
        &["orders", "approve"],
        &["migrate", "status"],
        &["health"],
        &["openapi"],
        &["serve"],
    ] {
        assert!(
            commands.iter().any(|words| words == expected),
            "{expected:?} not found among {commands:?}"
        );
    }
    for words in &commands {
        let output = std::process::Command::new(crate::common::BIN)
            .env_clear()
            .args(words)
            .arg("--help")
            .output()
            .expect("run petstore");
        assert!(
            output.status.success(),
            "`petstore {} --help` (shown in the README) fails: {}",
            words.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn no_environment_variable_changes_a_key() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    // The variables that the per-key flags once read, exported as a shell would leave them.
    let exported = [
        ("PETSTORE_KEY_PLAN", "business"),
        ("PETSTORE_KEY_LABEL", "exported"),
        ("PETSTORE_KEY_PER_MINUTE", "7"),
        ("PETSTORE_KEY_PER_DAY", "8"),
        ("PETSTORE_KEY_SCOPE", "read-only"),
        ("PETSTORE_KEY_EXPIRES_IN", "1h"),
        ("PETSTORE_KEY_GRACE", "0s"),
    ];
    let with_exported = |args: &[&str]| {
        petstore(db)
            .envs(exported)
            .args(args)
            .output()
            .expect("run petstore")
    };
    // `create` needs its plan on the command line.
    let output = with_exported(&["keys", "create"]);
    assert!(
        !output.status.success(),
        "created a key from PETSTORE_KEY_PLAN"
    );
    let output = with_exported(&["keys", "create", "--plan", "pro"]);
    assert!(output.status.success(), "{output:?}");
    // `update` changes the scope it is given, and nothing else.
    let output = with_exported(&["keys", "update", "1", "--scope", "read-only"]);
    assert!(output.status.success(), "{output:?}");
    let keys: Value =
        serde_json::from_str(&run(db, &["keys", "list", "--format", "json"])).expect("JSON list");
    let key = &keys[0];
    assert_eq!(keys.as_array().map(Vec::len), Some(1), "{keys}");
    assert_eq!(key["plan"], "pro", "{key}");
    assert_eq!(key["label"], "", "{key}");
    assert_eq!(key["perMinute"], 300, "the pro plan's own limits: {key}");
    assert_eq!(key["scope"], "read-only", "{key}");
    assert!(key["expiresAt"].is_null(), "{key}");
}

#[test]
fn operators_approve_and_deliver_orders_from_the_command_line() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let key = crate::common::unlimited_key(db);
    let server = TestServer::start(db, &["--bootstrap-key=false"]);
    let (_, pet) = server.post_pet(&key, r#"{"name":"Rex","categoryId":1}"#);
    let pet = pet["id"].as_i64().expect("id");
    let placed = crate::common::agent()
        .post(format!("{}/store/orders", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .send(format!(r#"{{"petId":{pet}}}"#))
        .expect("order");
    assert_eq!(placed.status().as_u16(), 201);
    let listed: Vec<Value> =
        serde_json::from_str(&run(db, &["orders", "list", "--format", "json"])).expect("JSON");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "placed");
    assert!(
        listed[0]["ownerKeyId"].as_i64().is_some(),
        "operators see the owner"
    );
    let id = listed[0]["id"].to_string();
    let text = run(db, &["orders", "list"]);
    assert!(text.contains("placed") && text.contains("STATUS"), "{text}");

    // Deliver before approval: refused, with the reason.
    let early = petstore(db)
        .args(["orders", "deliver", &id])
        .output()
        .expect("run");
    assert!(!early.status.success());
    assert!(
        String::from_utf8_lossy(&early.stderr).contains("cannot be delivered"),
        "{}",
        String::from_utf8_lossy(&early.stderr)
    );
    run(db, &["orders", "approve", &id]);
    run(db, &["orders", "deliver", &id]);
    let (_, pets) = server.list_pets("", &key);
    assert_eq!(pets[0]["status"], "sold");
    let missing = petstore(db)
        .args(["orders", "approve", "999"])
        .output()
        .expect("run");
    assert!(!missing.status.success());
    server.stop();
}

/// The status and body (JSON, or empty) of a request to the admin listener.
fn admin_call(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let agent = crate::common::agent();
    let auth = token.map(|token| format!("Bearer {token}"));
    let mut response = match (method, body) {
        ("GET", _) => {
            let mut request = agent.get(url);
            if let Some(auth) = &auth {
                request = request.header("Authorization", auth);
            }
            request.call()
        }
        ("POST", body) => {
            let mut request = agent.post(url).header("Content-Type", "application/json");
            if let Some(auth) = &auth {
                request = request.header("Authorization", auth);
            }
            request.send(body.unwrap_or_default().to_string())
        }
        (other, _) => panic!("method {other}"),
    }
    .expect("admin request");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    (status, serde_json::from_str(&text).unwrap_or_default())
}

#[test]
fn keys_are_administered_over_http_on_the_admin_listener() {
    let (dir, db) = crate::common::temp_db();
    let db = db.as_str();
    run(db, &["migrate"]);
    // Admin tokens come from the command line, never from the environment.
    let token = run(db, &["admin-tokens", "create", "--label", "billing-sync"]);
    let token = token.trim().to_owned();
    assert!(token.starts_with("psa_"), "{token}");
    let listed: serde_json::Value =
        serde_json::from_str(&run(db, &["admin-tokens", "list", "--format", "json"]))
            .expect("JSON");
    assert_eq!(listed[0]["label"], "billing-sync");
    assert_eq!(listed[0]["state"], "active");
    assert!(
        !listed.to_string().contains(&token[12..]),
        "never the secret"
    );

    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(
        db,
        &["--bootstrap-key=false", "--admin-bind", "127.0.0.1:0"],
        Some(&log),
    );
    let admin = server
        .stdout
        .iter()
        .find_map(|line| line.strip_prefix("admin on "))
        .expect("the admin listener's address on stdout")
        .to_owned();
    assert!(admin.ends_with("/admin/v1"), "{admin}");
    let root = format!("http://{}", server.addr());

    // Issued over HTTP, the key works on the public listener.
    let (status, issued) = admin_call(
        "POST",
        &format!("{admin}/keys"),
        Some(&token),
        Some(serde_json::json!({"plan": "pro", "label": "ACME"})),
    );
    assert_eq!(status, 201, "{issued}");
    let key = issued["key"].as_str().expect("secret").to_owned();
    let id = issued["id"].as_i64().expect("id");
    assert_eq!(server.list_pets("", &key).0, 200);
    // The CLI sees what the API did, in the same shape.
    let shown: serde_json::Value = serde_json::from_str(&run(
        db,
        &["keys", "show", &id.to_string(), "--format", "json"],
    ))
    .expect("JSON");
    let mut expected = issued.clone();
    expected.as_object_mut().expect("object").remove("key");
    assert_eq!(shown["label"], expected["label"]);
    // And the API sees what the CLI does: a new label from `keys update`.
    run(
        db,
        &["keys", "update", &id.to_string(), "--label", "ACME Corp"],
    );
    let (status, fetched) = admin_call("GET", &format!("{admin}/keys/{id}"), Some(&token), None);
    assert_eq!(
        (status, fetched["label"].as_str()),
        (200, Some("ACME Corp"))
    );
    assert_eq!(
        shown
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>(),
        expected
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>()
    );
    let (status, revoked) = admin_call(
        "POST",
        &format!("{admin}/keys/{id}/revoke"),
        Some(&token),
        None,
    );
    assert_eq!((status, revoked["state"].as_str()), (200, Some("revoked")));

    // Metrics moved to the admin listener; the public one no longer serves them.
    let public_metrics = crate::common::agent()
        .get(format!("{root}/metrics"))
        .call()
        .expect("GET");
    assert_eq!(public_metrics.status().as_u16(), 404);
    let admin_root = admin.trim_end_matches("/admin/v1");
    let mut metrics = crate::common::agent()
        .get(format!("{admin_root}/metrics"))
        .call()
        .expect("GET");
    assert_eq!(metrics.status().as_u16(), 200);
    let text = metrics.body_mut().read_to_string().expect("body");
    assert!(text.contains("petstore_build_info"), "{text}");
    // No admin route on the public listener.
    let (status, body) = admin_call("GET", &format!("{root}/admin/v1/keys"), Some(&token), None);
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("route_not_found"))
    );

    // Orders are fulfilled over HTTP: a customer's order approved, then delivered (its pet
    // sold); the CLI lists the same objects.
    let buyer = crate::common::unlimited_key(db);
    let (status, pet) = crate::common::post(
        &format!("{root}/v1"),
        &buyer,
        r#"{"name":"Rex","categoryId":1}"#,
    );
    assert_eq!(status, 201);
    let placed = crate::common::agent()
        .post(format!("{root}/v1/store/orders"))
        .header("Authorization", format!("Bearer {buyer}"))
        .header("Content-Type", "application/json")
        .send(format!(r#"{{"petId":{}}}"#, pet["id"]))
        .expect("order")
        .body_mut()
        .read_to_string()
        .expect("body");
    let order: serde_json::Value = serde_json::from_str(&placed).expect("JSON");
    let order_id = order["id"].as_i64().expect("id");
    let (status, listed) = admin_call(
        "GET",
        &format!("{admin}/orders?status=placed"),
        Some(&token),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(listed["orders"][0]["id"], order_id);
    assert!(listed["orders"][0]["ownerKeyId"].is_i64());
    for (action, status_after) in [("approve", "approved"), ("deliver", "delivered")] {
        let (status, changed) = admin_call(
            "POST",
            &format!("{admin}/orders/{order_id}/{action}"),
            Some(&token),
            None,
        );
        assert_eq!(
            (status, changed["status"].as_str()),
            (200, Some(status_after))
        );
    }
    let (status, refused) = admin_call(
        "POST",
        &format!("{admin}/orders/{order_id}/approve"),
        Some(&token),
        None,
    );
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("order_transition_refused"))
    );
    let (_, sold) = crate::common::get(&format!("{root}/v1"), "/store/inventory", &buyer);
    assert_eq!(sold["sold"], 1);
    let shown: serde_json::Value =
        serde_json::from_str(&run(db, &["orders", "list", "--format", "json"])).expect("JSON");
    let (_, fetched) = admin_call(
        "GET",
        &format!("{admin}/orders/{order_id}"),
        Some(&token),
        None,
    );
    assert_eq!(shown[0], fetched, "the CLI shows what the admin API does");

    // A revoked token stops working at once.
    run(db, &["admin-tokens", "revoke", "1"]);
    let (status, body) = admin_call("GET", &format!("{admin}/keys"), Some(&token), None);
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    server.stop();

    // One audit line per change: who, what, which key, and the request's id; never a secret.
    let log = std::fs::read_to_string(&log).expect("log");
    let audit: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("petstore::audit"))
        .collect();
    assert_eq!(audit.len(), 4, "{log}");
    let changes = [
        ("created", format!("key_id={id}")),
        ("revoked", format!("key_id={id}")),
        ("approved", format!("order_id={order_id}")),
        ("delivered", format!("order_id={order_id}")),
    ];
    for (line, (action, which)) in audit.iter().zip(changes) {
        for part in [
            "request_id=",
            "admin_token_id=1",
            "billing-sync",
            &format!("action=\"{action}\""),
            &which,
        ] {
            assert!(line.contains(part), "{part:?} not in {line}");
        }
    }
    assert!(
        !log.contains(&token[4..]),
        "the admin token reached the log"
    );
    assert!(!log.contains(&key[4..]), "the key reached the log");
}

#[test]
fn the_admin_listener_is_never_the_public_one_and_metrics_bind_wins() {
    let (_dir, db) = crate::common::temp_db();
    let db = db.as_str();
    let output = petstore(db)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:18099",
            "--admin-bind",
            "127.0.0.1:18099",
        ])
        .output()
        .expect("run petstore");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("never the public one"),
        "{output:?}"
    );
    // An explicit metrics listener wins over the admin one.
    let server = TestServer::start(
        db,
        &[
            "--bootstrap-key=false",
            "--admin-bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ],
    );
    let find = |prefix: &str| {
        server
            .stdout
            .iter()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix:?} in {:?}", server.stdout))
            .to_owned()
    };
    let metrics = find("metrics on ");
    let admin = find("admin on ");
    let status = |url: String| {
        crate::common::agent()
            .get(url)
            .call()
            .expect("GET")
            .status()
            .as_u16()
    };
    assert_eq!(status(metrics), 200);
    assert_eq!(status(admin.replace("/admin/v1", "/metrics")), 404);
    assert_eq!(status(format!("{}/openapi.json", admin)), 200);
    server.stop();
}

#[test]
fn the_bootstrap_key_is_shown_on_a_terminal_only() {
    // Standard output a pipe, as under a service manager or in a container, whose output is
    // kept in logs: no key is made, and the log says how to make one.
    let (dir, db) = crate::common::temp_db_path();
    let log = dir.path().join("server.log");
    let server = TestServer::start_logging(&db, &[], Some(&log));
    assert!(
        server.stdout.iter().all(|l| !l.contains("pst_")),
        "a key was printed where no one may see it: {:?}",
        server.stdout
    );
    server.stop();
    let written = std::fs::read_to_string(&log).expect("log");
    assert!(written.contains("petstore keys create"), "{written}");
    assert!(!written.contains("pst_"), "{written}");

    // On a terminal (a pseudo-terminal from `script`), a person at `cargo run` gets a working
    // key with a ready curl line.
    let (_dir, db) = crate::common::temp_db_path();
    let mut child = std::process::Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!(
            "timeout 60 {} serve --bind 127.0.0.1:0 --shutdown-delay 0s",
            crate::common::BIN
        ))
        .arg("/dev/null")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PETSTORE_DATABASE_URL", &db)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run script");
    let lines = std::io::BufRead::lines(std::io::BufReader::new(
        child.stdout.take().expect("stdout"),
    ));
    let mut shown = Vec::new();
    for line in lines {
        let line = line.expect("read");
        let done = line.contains("listening on");
        shown.push(line.trim().to_owned());
        if done {
            break;
        }
    }
    let key = shown
        .iter()
        .find_map(|line| line.strip_prefix("pst_").map(|rest| format!("pst_{rest}")));
    let base = shown.iter().find_map(|line| {
        line.strip_prefix("listening on ")
            .map(|addr| format!("{addr}/v1"))
    });
    let listed = match (&key, &base) {
        (Some(key), Some(base)) => Some(crate::common::get(base, "/pets", key)),
        _ => None,
    };
    let _ = child.kill();
    let _ = child.wait();
    let shown = shown.join("\n");
    let key = key.unwrap_or_else(|| panic!("no key on the terminal:\n{shown}"));
    assert!(
        shown.contains(&format!("curl -H 'Authorization: Bearer {key}'")),
        "{shown}"
    );
    assert_eq!(listed, Some((200, Value::Array(vec![]))), "the key works");
    assert!(run(&db, &["keys", "list"]).contains("bootstrap"));
}

#[test]
fn a_connection_string_where_a_file_path_belongs_is_refused_without_showing_it() {
    let dir = tempfile::tempdir().expect("folder");
    for url in ["host=db.internal password=s3cret", "dbname=pets user=app"] {
        for args in [&["serve"][..], &["migrate"], &["keys", "list"]] {
            let output = petstore(url)
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("run");
            assert_eq!(output.status.code(), Some(2), "{url} {args:?}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("not a file path"), "{stderr}");
            assert!(
                !stderr.contains("s3cret") && !stderr.contains("app"),
                "{stderr}"
            );
        }
    }
    let made: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
    assert!(made.is_empty(), "files were created: {made:?}");
    // A password with a `/` is not shown either.
    let output = petstore("postgres://u:se/cret@127.0.0.1:1/db")
        .args(["keys", "list", "--db-connect-timeout", "200ms"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("cret"), "{stderr}");
}

#[test]
fn the_sqlite_files_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, db) = crate::common::temp_db_path();
    let key = crate::common::unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let (status, _) = server.post_pet(&key, r#"{"name":"Private","categoryId":1}"#);
    assert_eq!(status, 201);
    for name in ["petstore.db", "petstore.db-wal", "petstore.db-shm"] {
        let mode = std::fs::metadata(dir.path().join(name))
            .unwrap_or_else(|error| panic!("{name}: {error}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name} is {:o}", mode & 0o777);
    }
    server.stop();
    // An existing file keeps the mode it was given.
    let (dir, db) = crate::common::temp_db_path();
    std::fs::write(&db, b"").expect("create");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    run(&db, &["migrate"]);
    let mode = std::fs::metadata(dir.path().join("petstore.db"))
        .expect("db")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
}
