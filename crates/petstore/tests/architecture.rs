//! `docs/architecture.md`'s module tables against the tree, for every crate of the workspace:
//! each crate's table names every module of its `src/` and no other, and each row's "Uses"
//! names every module of the crate that its code imports (as `crate::module`). And the README
//! against the repository: every link it has leads to a file of the repository, or to the
//! service its own command starts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const TABLE: &str = "| Module | Owns | Uses |";

/// Each crate, and the heading its table follows.
const CRATES: [(&str, &str); 9] = [
    ("petstore-domain", "### petstore-domain\n"),
    ("petstore-store", "### petstore-store\n"),
    ("petstore-ratelimit", "### petstore-ratelimit\n"),
    ("petstore-client", "### petstore-client\n"),
    ("petstore-conformance", "### petstore-conformance\n"),
    ("petstore-webhooks", "### petstore-webhooks\n"),
    ("petstore-http", "## Inside petstore-http\n"),
    ("petstore-openapi", "### petstore-openapi\n"),
    ("petstore", "### petstore\n"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn src(krate: &str) -> PathBuf {
    root().join("crates").join(krate).join("src")
}

/// The names in backticks of a table cell (`name` or `name/`), trailing slashes dropped.
fn names(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| name.trim_end_matches('/').to_owned())
        .collect()
}

/// The rows of the table under `heading`: the modules of each, and what it says they use
/// (`None`: all above).
fn rows(heading: &str) -> Vec<(BTreeSet<String>, Option<BTreeSet<String>>)> {
    let doc =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let section = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let start = section + doc[section..].find(TABLE).expect("a module table");
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
fn tree(krate: &str) -> BTreeSet<String> {
    std::fs::read_dir(src(krate))
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
fn files(krate: &str, module: &str) -> Vec<PathBuf> {
    let dir = src(krate).join(module);
    if !dir.is_dir() {
        return vec![src(krate).join(format!("{module}.rs"))];
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

/// The crate's modules that `module`'s code names as `crate::name`.
fn imports(krate: &str, module: &str, all: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for file in files(krate, module) {
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
fn each_module_table_names_every_module_of_its_crate_and_no_other() {
    for (krate, heading) in CRATES {
        let listed: BTreeSet<String> = rows(heading)
            .into_iter()
            .flat_map(|(modules, _)| modules)
            .collect();
        assert_eq!(listed, tree(krate), "{krate}'s module table");
    }
}

#[test]
fn each_row_names_what_its_modules_import() {
    let mut drift = Vec::new();
    for (krate, heading) in CRATES {
        let all = tree(krate);
        for (modules, uses) in rows(heading) {
            let Some(uses) = uses else { continue };
            for module in &modules {
                let missing: Vec<String> = imports(krate, module, &all)
                    .into_iter()
                    .filter(|name| !modules.contains(name) && !uses.contains(name))
                    .collect();
                if !missing.is_empty() {
                    drift.push(format!("{krate}: `{module}` imports {missing:?}"));
                }
            }
        }
    }
    assert!(
        drift.is_empty(),
        "docs/architecture.md's Uses columns miss: {drift:#?}"
    );
}

/// The README is read on a fresh clone, perhaps offline: each of its links (`[text](target)`,
/// `<scheme://...>`) names a file of the repository (an anchor after `#` allowed) or the
/// service the README's command starts on `http://127.0.0.1:8080`, never a page elsewhere.
#[test]
fn every_link_of_the_readme_stays_inside_the_repository() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut targets = Vec::new();
    for (open, close) in [("](", ')'), ("<", '>')] {
        let mut rest = readme.as_str();
        while let Some(at) = rest.find(open) {
            rest = &rest[at + open.len()..];
            let end = rest.find(close).unwrap_or(rest.len());
            let target = &rest[..end];
            if open == "](" || target.contains("://") {
                targets.push(target.to_owned());
            }
        }
    }
    assert!(!targets.is_empty(), "the README links to its docs");
    let outside: Vec<&String> = targets
        .iter()
        .filter(|target| {
            if target.starts_with("http://127.0.0.1:8080") {
                return false;
            }
            let path = target.split('#').next().unwrap_or_default();
            target.contains("://") || path.is_empty() || !root().join(path).exists()
        })
        .collect();
    assert!(
        outside.is_empty(),
        "README links that lead outside the repository (or to no file): {outside:?}"
    );
}
