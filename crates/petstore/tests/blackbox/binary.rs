//! Black-box: the real `petstore` binary on a free port over a temporary database, driven over
//! TCP by a real HTTP client, managed with its own `keys` commands, stopped and restarted.

use std::time::{Duration, Instant};

use crate::common::{TestServer, petstore, run};
use serde_json::Value;

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
