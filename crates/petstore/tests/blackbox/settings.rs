//! Settings through the real binary: every flag is in the settings reference with its
//! variable, and every bad setting is one clear line naming the setting (flag and variable)
//! and its value, said before anything is opened or created.

use std::net::{Ipv4Addr, TcpListener};
use std::process::Command;

use crate::common::BIN;

/// `petstore` with a clean environment, `vars` set, in `dir`: exit code and stderr.
fn petstore(dir: &std::path::Path, vars: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(BIN)
        .env_clear()
        .envs(vars.iter().copied())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run petstore");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The flags `--help` prints, each with its environment variable.
fn flags_of(help: &str) -> Vec<(String, String)> {
    let mut flags = Vec::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("--") || trimmed.starts_with("-h,") || trimmed.starts_with("-V,") {
            current = trimmed
                .split([' ', '<', '='])
                .find(|word| word.starts_with("--"))
                .map(str::to_owned);
        }
        if let (Some(flag), Some(at)) = (&current, line.find("[env: ")) {
            let variable = line[at + 6..]
                .split(['=', ']'])
                .next()
                .expect("a variable")
                .to_owned();
            flags.push((flag.clone(), variable));
        }
    }
    flags
}

#[test]
fn the_settings_reference_names_every_flag_with_its_variable() {
    let reference = include_str!("../../../../docs/settings.md");
    let dir = tempfile::tempdir().expect("folder");
    let mut checked = 0;
    for args in [&["--help"][..], &["serve", "--help"]] {
        let output = Command::new(BIN)
            .env_clear()
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("help");
        let help = String::from_utf8_lossy(&output.stdout);
        for (flag, variable) in flags_of(&help) {
            let row = reference.lines().find(|line| {
                line.starts_with('|')
                    && line.contains(&format!("`{flag}`"))
                    && line.contains(&format!("`{variable}`"))
            });
            assert!(
                row.is_some(),
                "docs/settings.md has no row naming `{flag}` and `{variable}`"
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "only {checked} flags found in --help");
}

#[test]
fn a_refused_value_is_one_line_naming_flag_and_variable_with_or_without_serve() {
    let dir = tempfile::tempdir().expect("folder");
    for (variable, value, flag) in [
        ("PETSTORE_WORKERS", "0", "--workers"),
        (
            "PETSTORE_CLIENT_BODY_TIMEOUT",
            "0s",
            "--client-body-timeout",
        ),
        ("PETSTORE_BAN_DURATION", "soon", "--ban-duration"),
        ("PETSTORE_BOOTSTRAP_KEY", "maybe", "--bootstrap-key"),
        (
            "PETSTORE_WEBHOOK_SENDER_SHARE",
            "0",
            "--webhook-sender-share",
        ),
        (
            "PETSTORE_WEBHOOK_SENDER_SHARE",
            "1.5",
            "--webhook-sender-share",
        ),
        (
            "PETSTORE_WEBHOOK_SENDER_SHARE",
            "NaN",
            "--webhook-sender-share",
        ),
        (
            "PETSTORE_WEBHOOK_SENDER_SHARE",
            "a quarter",
            "--webhook-sender-share",
        ),
    ] {
        for args in [&[][..], &["serve"]] {
            let (code, stderr) = petstore(dir.path(), &[(variable, value)], args);
            assert_eq!(code, Some(2), "{variable}={value} {args:?}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
            assert!(
                stderr.starts_with(&format!(
                    "error: {flag} ({variable}): invalid value '{value}'"
                )),
                "{variable}={value} {args:?}: {stderr}"
            );
        }
    }
    let made: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
    assert!(made.is_empty(), "files were created: {made:?}");
}

#[test]
fn addresses_are_checked_before_anything_is_created() {
    let dir = tempfile::tempdir().expect("folder");
    for (variable, value, flag) in [
        ("PETSTORE_BIND", "notaport", "--bind"),
        ("PETSTORE_BIND", "127.0.0.1:http", "--bind"),
        ("PETSTORE_ADMIN_BIND", "localhost", "--admin-bind"),
        ("PETSTORE_METRICS_BIND", ":9090", "--metrics-bind"),
        (
            "PETSTORE_PUBLIC_BASE_URL",
            "api.example.com/v1",
            "--public-base-url",
        ),
    ] {
        let (code, stderr) = petstore(dir.path(), &[(variable, value)], &["serve"]);
        assert_eq!(code, Some(2), "{variable}={value}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {flag} ({variable}) \"{value}\": ")),
            "{variable}={value}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    }
    // A port in use: said by name, before the database is made.
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a port");
    let addr = taken.local_addr().expect("address").to_string();
    let (code, stderr) = petstore(
        dir.path(),
        &[("RUST_LOG", "warn")],
        &["serve", "--bind", &addr],
    );
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&format!(
            "--bind (PETSTORE_BIND) {addr}: the address is in use"
        )),
        "{stderr}"
    );
    let made: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
    assert!(made.is_empty(), "files were created: {made:?}");
}

#[test]
fn a_sqlite_file_in_a_missing_folder_is_named_at_once() {
    let dir = tempfile::tempdir().expect("folder");
    let missing = dir.path().join("no/such/folder/petstore.db");
    let missing = missing.to_str().expect("UTF-8");
    for args in [&["migrate"][..], &["serve", "--bind", "127.0.0.1:0"]] {
        let (code, stderr) = petstore(
            dir.path(),
            &[("PETSTORE_DATABASE_URL", missing), ("RUST_LOG", "warn")],
            args,
        );
        assert_ne!(code, Some(0), "{args:?}");
        assert!(
            stderr.contains("no/such/folder does not exist") && stderr.contains("mkdir -p"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("r2d2"), "{args:?}: {stderr}");
    }
}

#[test]
fn database_errors_read_as_sentences_with_what_to_do() {
    let dir = tempfile::tempdir().expect("folder");
    let run = |url: &str| {
        petstore(
            dir.path(),
            &[
                ("PETSTORE_DATABASE_URL", url),
                ("PETSTORE_DB_CONNECT_TIMEOUT", "2s"),
            ],
            &["migrate"],
        )
    };
    let (code, refused) = run("mysql://root@127.0.0.1:1/x");
    assert_ne!(code, Some(0));
    assert!(refused.contains("cannot reach the server"), "{refused}");
    assert_eq!(
        refused.matches("Input/output error").count(),
        0,
        "{refused}"
    );
    if petstore_store::testing::TestDatabase::mysql().is_some() {
        let (code, missing) = run("mysql://root@127.0.0.1:3306/petstore_no_such_database");
        assert_ne!(code, Some(0));
        assert!(
            missing.contains("Unknown database 'petstore_no_such_database' (MySQL error 1049")
                && missing.contains("CREATE DATABASE"),
            "{missing}"
        );
        assert_eq!(
            missing.matches('`').count() % 2,
            0,
            "quotes balanced: {missing}"
        );
    }
    if petstore_store::testing::TestDatabase::postgres().is_some() {
        let (code, missing) = run("postgres://postgres@127.0.0.1:5432/petstore_no_such_database");
        assert_ne!(code, Some(0));
        assert!(
            missing.contains("createdb petstore_no_such_database"),
            "{missing}"
        );
    }
    // `--help` names every backend's URL.
    let output = Command::new(BIN).arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&output.stdout);
    for scheme in ["postgres://", "mysql://", "mariadb://", "sqlite://"] {
        assert!(help.contains(scheme), "--help names {scheme}");
    }
}
