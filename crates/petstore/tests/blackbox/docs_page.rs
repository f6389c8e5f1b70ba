//! The docs page in a real browser: Debian's Chromium driven by playwright-core
//! (`tests/browser/docs-page.mjs`, installed by `.ci/run` or `scripts/test-tools.sh`) against the
//! real `petstore` binary. Skipped loudly without them, except under CI, where that fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestServer;
use petstore_store::testing::{in_ci, loud_skip};

fn browser_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

fn chromium() -> PathBuf {
    std::env::var_os("PETSTORE_TEST_CHROMIUM")
        .map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from)
}

/// What is missing to run the test, if anything.
fn missing() -> Option<String> {
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node is not installed".into());
    }
    if !browser_dir().join("node_modules/playwright-core").is_dir() {
        return Some(
            "playwright-core is not installed in tests/browser (run scripts/test-tools.sh)".into(),
        );
    }
    if !chromium().is_file() {
        return Some(format!(
            "{} is not installed (Debian's chromium)",
            chromium().display()
        ));
    }
    None
}

#[test]
fn the_docs_page_lists_the_operations_and_tries_one_with_a_key_offline() {
    if let Some(what) = missing() {
        assert!(!in_ci(), "{what}");
        loud_skip(&what);
        return;
    }
    let (_dir, db) = crate::common::temp_db();
    let key = crate::common::unlimited_key(&db);
    let server = TestServer::start(&db, &["--bootstrap-key=false"]);
    let origin = server.base.trim_end_matches("/v1").to_owned();
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-page.png");
    let output = Command::new("node")
        .current_dir(browser_dir())
        .arg("docs-page.mjs")
        .arg(&origin)
        .arg(key.as_str())
        .arg(&screenshot)
        .env("PETSTORE_TEST_CHROMIUM", chromium())
        .output()
        .expect("run node");
    assert!(
        output.status.success(),
        "the docs page failed in Chromium (screenshot: {}):\n{}\n{}",
        screenshot.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(screenshot.is_file(), "a screenshot for people to look at");
    server.stop();
}
