//! The HTTP face of the Animal Store Service: a library that turns the domain's storage
//! interface and the rate limiter (`petstore-ratelimit`) into an actix-web application
//! ([`app`]) over an [`AppState`]. The `petstore` program (its own crate) parses the command
//! line, opens the backend and serves this application.
//!
//! The crate talks to storage only through the domain's interface, `Arc<dyn Storage>`, wrapped
//! in [`db::Database`]; it never names a backend. Modules depend one way, from the bottom up:
//!
//! - [`clock`], [`connection`], [`encode`], [`report`], [`sunset`]: leaves; then [`telemetry`]
//!   (logging, request ids, metric names and the Prometheus recorder).
//! - [`ratelimit`]: the limiter's headers and the client address behind proxies; knows no keys
//!   and no storage.
//! - [`config`] (typed settings), then [`links`] (addresses written into responses).
//! - [`error`]: [`ApiError`], the [`ErrorCode`] catalogue, the one writer of the Error object.
//! - [`db`] (storage calls from async code), then [`auth`] (bearer keys, looked up through it).
//! - [`extract`]: strict request parsing.
//! - [`state`]: [`AppState`], built by one constructor; then [`idempotency`] (safe retries of
//!   writes, for the handlers).
//! - [`middleware`] (admission composes auth and rate limits), [`routes`] (thin handlers),
//!   [`admin`] (key administration, shared by the CLI and the admin API), then [`app`].
//!
//! Start reading at [`app`], which production and every test build alike.

pub mod admin;
pub mod app;
pub mod auth;
pub mod clock;
pub mod config;
pub mod connection;
pub mod db;
pub mod encode;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod links;
mod middleware;
pub mod ratelimit;
pub mod report;
pub mod routes;
pub mod state;
pub mod sunset;
pub mod telemetry;

pub use app::{admin_app, app, metrics_app};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{Config, HttpSettings, RateLimitConfig};
pub use error::{ApiError, ErrorCode};
pub use state::AppState;

/// `docs/architecture.md`'s module table against the tree: it names every module of this crate
/// and no other, and each row's "Uses" names every module its code imports.
#[cfg(test)]
mod architecture_doc {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    const TABLE: &str = "| Module | Owns | Uses |";

    fn src() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
    }

    /// The names in backticks of a table cell (`name` or `name/`), trailing slashes dropped.
    fn names(cell: &str) -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|name| name.trim_end_matches('/').to_owned())
            .collect()
    }

    /// The table's rows: the modules of each, and what it says they use (`None`: all above).
    fn rows() -> Vec<(BTreeSet<String>, Option<BTreeSet<String>>)> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
        let doc = std::fs::read_to_string(path).expect("docs/architecture.md");
        let start = doc.find(TABLE).expect("the module table");
        doc[start..]
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|row| {
                let cells: Vec<&str> = row.split(" | ").collect();
                let uses = cells.last().expect("cells");
                let uses = (!uses.contains("all of the above")).then(|| names(uses));
                (names(cells[0]), uses)
            })
            .collect()
    }

    /// The crate's top-level modules, as the tree has them.
    fn tree() -> BTreeSet<String> {
        std::fs::read_dir(src())
            .expect("src")
            .map(|entry| entry.expect("entry").path())
            .filter_map(|path| {
                let name = path.file_stem()?.to_str()?.to_owned();
                let module = path.is_dir() || path.extension().is_some_and(|ext| ext == "rs");
                (module && name != "lib" && name != "main").then_some(name)
            })
            .collect()
    }

    /// Every `.rs` file of `module` (a file, or a directory's files).
    fn files(module: &str) -> Vec<PathBuf> {
        let dir = src().join(module);
        if !dir.is_dir() {
            return vec![src().join(format!("{module}.rs"))];
        }
        let mut files = Vec::new();
        let mut pending = vec![dir];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(dir).expect("dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.extension().is_some_and(|ext| ext == "rs") {
                    files.push(path);
                }
            }
        }
        files
    }

    /// The crate modules `module`'s code names as `crate::name`.
    fn imports(module: &str, all: &BTreeSet<String>) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for file in files(module) {
            let text = std::fs::read_to_string(&file).expect("source");
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // Not `$crate::` (a macro's) nor the end of a longer name (`some_crate::`).
                let before = text[..at].chars().next_back();
                let part_of_a_name =
                    before.is_some_and(|c| c == '$' || c == '_' || c.is_alphanumeric());
                if all.contains(&name) && !part_of_a_name {
                    found.insert(name);
                }
            }
        }
        found
    }

    #[test]
    fn the_module_table_names_every_module_and_no_other() {
        let listed: BTreeSet<String> = rows()
            .into_iter()
            .flat_map(|(modules, _)| modules)
            .collect();
        assert_eq!(listed, tree());
    }

    #[test]
    fn each_row_names_what_its_modules_import() {
        let all = tree();
        let mut drift = Vec::new();
        for (modules, uses) in rows() {
            let Some(uses) = uses else { continue };
            for module in &modules {
                let missing: Vec<String> = imports(module, &all)
                    .into_iter()
                    .filter(|name| !modules.contains(name) && !uses.contains(name))
                    .collect();
                if !missing.is_empty() {
                    drift.push(format!("`{module}` imports {missing:?}"));
                }
            }
        }
        assert!(
            drift.is_empty(),
            "docs/architecture.md's Uses column misses: {drift:#?}"
        );
    }
}
