#!/usr/bin/env bash
# Run before every commit: the format, lint and test gates of CI, on this machine's services
# (`bash .ci/run` adds the licence, notices, packaging and per-backend checks).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --all-targets
cargo test --workspace --doc
