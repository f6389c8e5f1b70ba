//! Contract tests: schemathesis (a pinned version, installed by `.ci/run` or
//! `scripts/test-tools.sh`) against the real `petstore` binary, with the document the binary
//! serves. Every phase, the stateful one included (the document's links lead from what creates a
//! resource to what reads, changes and deletes it), every check, a few hundred cases per
//! operation, with an enterprise key so that rate limiting does not interfere.
//! Skipped loudly without schemathesis, except under CI, where that fails.

use std::path::PathBuf;
use std::process::Command;

use crate::common::TestServer;
use petstore_store::testing::{in_ci, loud_skip};

/// The command `name` that `scripts/test-tools.sh` installs in a virtualenv of its own under
/// `target/tools` (or the path in the variable `override_with`), if it is there; if not, the
/// test is skipped loudly, except under CI, where that fails.
pub(crate) fn installed_tool(name: &str, override_with: Option<&str>) -> Option<PathBuf> {
    let path = override_with.and_then(std::env::var_os).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../../target/tools/{name}/bin/{name}"))
        },
        PathBuf::from,
    );
    if path.is_file() {
        return Some(path);
    }
    let what = format!("{name} is not installed (run scripts/test-tools.sh)");
    assert!(!in_ci(), "{what}");
    loud_skip(&what);
    None
}

#[test]
fn the_server_keeps_to_its_openapi_document() {
    let Some(schemathesis) = installed_tool("schemathesis", Some("PETSTORE_TEST_SCHEMATHESIS"))
    else {
        return;
    };
    let (_dir, db) = crate::common::temp_db();
    let key = crate::common::unlimited_key(&db);
    // Webhook endpoints: no host lookup and no sending. Schemathesis registers endpoints at
    // made-up hosts, and the machines this runs on have no resolver that answers for
    // arbitrary names in time (a lookup that does not end within 5 s is refused, one that
    // cannot start is a `503`, which schemathesis counts as a server error); the lookups and
    // the refusals have tests of their own (`webhooks.rs`, `routes::webhooks`).
    let server = TestServer::start(
        &db,
        &[
            "--bootstrap-key=false",
            "--webhook-allow-private",
            "--webhook-sender=false",
        ],
    );
    let seed = std::env::var("PETSTORE_TEST_SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    // Its replay cache (`.schemathesis/`) goes under target/, not into the source tree.
    let output = Command::new(&schemathesis)
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .args([
            "--config-file",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/schemathesis.toml"),
            "run",
            &format!("{}/openapi.json", server.base),
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            "300",
            "--seed",
            &seed,
            "--request-timeout",
            "10",
            // Nothing kept between runs: each run is its seed alone, and the tree stays clean.
            "--generation-database",
            "none",
            "--no-color",
            "--header",
            &format!("Authorization: Bearer {}", key.as_str()),
        ])
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found the server and its document disagreeing (seed {seed}):\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        report.contains("No issues found"),
        "schemathesis ran no test:\n{report}"
    );
    server.stop();
}

/// Both committed OpenAPI documents are valid OpenAPI 3.1 for an independent validator
/// (openapi-spec-validator, pinned, installed by `scripts/test-tools.sh`; the in-process
/// tests check the rules it does not: no `example` keyword, no header that may be null).
#[test]
fn the_openapi_documents_are_valid_openapi_3_1() {
    let Some(validator) = installed_tool("openapi-spec-validator", None) else {
        return;
    };
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let output = Command::new(&validator)
        .args(["--schema", "3.1"])
        .arg(docs.join("openapi.json"))
        .arg(docs.join("admin-openapi.json"))
        .output()
        .expect("run openapi-spec-validator");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report.matches(": OK").count(), 2, "{report}");
}
