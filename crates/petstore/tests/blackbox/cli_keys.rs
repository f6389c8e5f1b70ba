//! Black-box: keys from the command line: their lifecycle, `keys verify` and the other
//! commands as scripts use them (exit statuses, JSON), the database each admin command takes,
//! and the bootstrap key, shown on a terminal only.

use std::time::{Duration, Instant};

use crate::common::{TestServer, petstore, run};
use serde_json::{Value, json};

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
