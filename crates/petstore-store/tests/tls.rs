//! TLS to PostgreSQL with libpq's `sslmode`: `require` against the shared local server (which has
//! `ssl = on`), and `verify-ca` / `verify-full` against a PostgreSQL server this test starts on a
//! free port with a certificate signed by a CA the test makes, and again with a CA that did not
//! sign it. TLS to MariaDB with MySQL's `ssl-mode`, against a MariaDB server the test starts
//! the same way, which requires TLS of its user.

use std::path::Path;
use std::time::Duration;

use petstore_domain::{PetDraft, PetRepository, PetStatus, Storage, StorageErrorKind};
use petstore_store::testing::{
    Authority, MariaDbServer, PostgresServer, RawPostgres, TestDatabase, mysql_execute,
};
use petstore_store::{Store, StoreConfig};

/// Migrates, writes and reads a pet through a store on `url`.
async fn round_trip(url: &str) -> Result<(), String> {
    let mut config = StoreConfig::new(url);
    config.connect_timeout = Duration::from_secs(5);
    let store = Store::open(&config).map_err(|e| format!("open: {e:?}"))?;
    store.migrate().await.map_err(|e| chain(&e))?;
    let draft = PetDraft::new("Secure", 1, PetStatus::Available).expect("draft");
    let pet = store
        .create_pet(&petstore_domain::CreatePet::new(draft))
        .await
        .map_err(|e| chain(&e))?;
    let found = store.find_pet(pet.id).await.map_err(|e| chain(&e))?;
    assert_eq!(found, Some(pet));
    store.check_ready().await.map_err(|e| chain(&e))?;
    Ok(())
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}

#[tokio::test]
async fn sslmode_require_encrypts_the_connection_to_the_local_server() {
    let Some(db) = TestDatabase::postgres() else {
        return;
    };
    let url = format!("{}?sslmode=require", db.url());
    round_trip(&url).await.expect("works over TLS");
    // The server's own view: this database's connections from the store were encrypted.
    let store = Store::open(&StoreConfig::new(&url)).expect("open");
    store.check_ready().await.expect("a connection is open");
    let name = db.url().rsplit('/').next().expect("database name");
    let watcher = RawPostgres::connect(db.url()).expect("connect");
    let rows = watcher
        .query(&format!(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
             FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.datname = '{name}' AND a.pid <> pg_backend_pid()"
        ))
        .expect("query");
    let count = |i: usize| {
        rows[0][i]
            .as_deref()
            .unwrap_or("0")
            .parse::<u32>()
            .expect("count")
    };
    assert!(count(0) >= 1, "an encrypted connection: {rows:?}");
    assert_eq!(
        count(1),
        0,
        "no plain connection but the watcher's: {rows:?}"
    );
    store.close();
}

#[tokio::test]
async fn verify_full_and_verify_ca_trust_only_the_given_ca() {
    let authority = Authority::new("petstore test CA");
    let (certificate, key) = authority.server_certificate(&["localhost", "127.0.0.1"]);
    let Some(server) = PostgresServer::start_with_tls(&certificate, &key, &["fsync=off"]) else {
        return;
    };
    let dir = tempfile::tempdir().expect("folder");
    let right = dir.path().join("right-ca.pem");
    std::fs::write(&right, &authority.ca_pem).expect("write");
    let wrong = dir.path().join("wrong-ca.pem");
    std::fs::write(&wrong, Authority::new("another CA").ca_pem).expect("write");
    let with = |host: &str, mode: &str, ca: &Path| {
        server.url(
            host,
            &format!("sslmode={mode}&sslrootcert={}", ca.display()),
        )
    };

    // The right CA, a name the certificate carries: every verifying mode works.
    for (host, mode) in [
        ("localhost", "verify-full"),
        ("127.0.0.1", "verify-full"),
        ("localhost", "verify-ca"),
        ("localhost", "require"),
    ] {
        round_trip(&with(host, mode, &right))
            .await
            .unwrap_or_else(|error| panic!("{host} {mode}: {error}"));
    }

    // A name the certificate does not carry: verify-ca checks the CA only, verify-full refuses.
    round_trip(&with("127.0.0.2", "verify-ca", &right))
        .await
        .expect("verify-ca ignores the name");
    let refused = round_trip(&with("127.0.0.2", "verify-full", &right))
        .await
        .expect_err("verify-full checks the name");
    assert!(refused.contains("sslmode=verify-full"), "{refused}");
    assert!(refused.contains("certificate"), "{refused}");

    // Another CA: refused in every verifying mode, saying why.
    for mode in ["verify-full", "verify-ca", "require"] {
        let refused = round_trip(&with("localhost", mode, &wrong))
            .await
            .expect_err("another CA is not trusted");
        assert!(refused.contains(&format!("sslmode={mode}")), "{refused}");
        assert!(refused.contains("UnknownIssuer"), "{mode}: {refused}");
    }
    // Without a CA to check against, require only encrypts: it accepts the server.
    round_trip(&server.url("localhost", "sslmode=require"))
        .await
        .expect("require without sslrootcert");
    // An unavailable kind of error, not a fault: the instance retries and reports 503.
    let store =
        Store::open(&StoreConfig::new(with("localhost", "verify-full", &wrong))).expect("open");
    let error = store.find_pet(1).await.expect_err("refused");
    assert_eq!(error.kind(), StorageErrorKind::Unavailable);
}

#[tokio::test]
async fn mariadb_ssl_modes_encrypt_and_verify_as_mysql_clients_do() {
    let authority = Authority::new("petstore test CA");
    let (certificate, key) = authority.server_certificate(&["localhost"]);
    let Some(server) = MariaDbServer::start_with_tls(&certificate, &key) else {
        return;
    };
    // The service's database, and a user that may connect only over TLS.
    mysql_execute(
        &server.url("127.0.0.1", ""),
        "CREATE DATABASE petstore; \
         CREATE USER 'service'@'%' REQUIRE SSL; \
         GRANT ALL ON petstore.* TO 'service'@'%'",
    )
    .expect("set up");
    let dir = tempfile::tempdir().expect("folder");
    let right = dir.path().join("right-ca.pem");
    std::fs::write(&right, &authority.ca_pem).expect("write");
    let wrong = dir.path().join("wrong-ca.pem");
    std::fs::write(&wrong, Authority::new("another CA").ca_pem).expect("write");
    let url = |host: &str, params: String| {
        server
            .url(host, &params)
            .replace("root@", "service@")
            .replacen("/mysql", "/petstore", 1)
    };
    let with = |host: &str, mode: &str, ca: &Path| {
        url(host, format!("ssl-mode={mode}&ssl-ca={}", ca.display()))
    };

    // Encrypted: the user connects only so. The right CA and the name the certificate carries
    // pass `verify_identity`, which a CA named alone means too; `required` checks neither.
    round_trip(&with("localhost", "verify_identity", &right))
        .await
        .expect("verify_identity");
    let ca_alone = |host: &str, ca: &Path| url(host, format!("ssl-ca={}", ca.display()));
    round_trip(&ca_alone("localhost", &right))
        .await
        .expect("a CA named alone verifies with it");
    for host in ["localhost", "127.0.0.1"] {
        round_trip(&url(host, "ssl-mode=required".to_owned()))
            .await
            .unwrap_or_else(|error| panic!("{host} required: {error}"));
    }
    round_trip(&url("127.0.0.1", "ssl-mode=PREFERRED".to_owned()))
        .await
        .expect("preferred takes the TLS offered");
    round_trip(&url("127.0.0.1", String::new()))
        .await
        .expect("preferred is the default");

    // A name the certificate does not carry: refused.
    let refused = round_trip(&with("127.0.0.1", "verify_identity", &right))
        .await
        .expect_err("verify_identity checks the name");
    assert!(refused.contains("ssl-mode=verify_identity"), "{refused}");

    // Another CA: refused, whether the mode says so or the CA alone does.
    let refused = round_trip(&with("localhost", "verify_identity", &wrong))
        .await
        .expect_err("another CA");
    assert!(refused.contains("ssl-mode=verify_identity"), "{refused}");
    for (host, ca) in [("localhost", &wrong), ("127.0.0.1", &right)] {
        let refused = round_trip(&ca_alone(host, ca))
            .await
            .expect_err("a CA named alone verifies the chain and the name");
        assert!(refused.contains("ssl-mode=verify_identity"), "{refused}");
    }
    // Without TLS the user is refused: `disabled` sends none.
    round_trip(&url("127.0.0.1", "ssl-mode=disabled".to_owned()))
        .await
        .expect_err("the user requires TLS");

    // Settings that cannot work are refused when the store opens, naming them.
    for bad in [
        "ssl-mode=sometimes".to_owned(),
        "ssl-mode=verify_identity&ssl-ca=/nonexistent.pem".to_owned(),
        // (The driver cannot check the CA without the name: refused, naming what to use.)
        "ssl-mode=verify_ca".to_owned(),
        // A CA that a mode would not use is refused rather than ignored.
        format!("ssl-mode=required&ssl-ca={}", right.display()),
        format!("ssl-mode=preferred&ssl-ca={}", right.display()),
        format!("ssl-mode=disabled&ssl-ca={}", right.display()),
    ] {
        let error = Store::open(&StoreConfig::new(url("127.0.0.1", bad.clone()))).expect_err(&bad);
        assert!(error.to_string().contains("ssl-"), "{error}");
    }
}

/// A CA named for a server that offers no TLS (the shared local MariaDB) is no reason to talk
/// in plain text: the store refuses to connect, where `preferred` would have fallen back.
#[tokio::test]
async fn a_mariadb_ca_named_never_falls_back_to_plain_text() {
    let Some(db) = TestDatabase::mysql() else {
        return;
    };
    let authority = Authority::new("petstore test CA");
    let dir = tempfile::tempdir().expect("folder");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &authority.ca_pem).expect("write");
    let refused = round_trip(&format!("{}?ssl-ca={}", db.url(), ca.display()))
        .await
        .expect_err("no TLS offered: refused");
    assert!(refused.contains("ssl-mode=verify_identity"), "{refused}");
}
