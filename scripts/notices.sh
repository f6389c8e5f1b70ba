#!/usr/bin/env bash
# Writes THIRD-PARTY-NOTICES.md: the licences of every crate linked into the `petstore` binary
# (cargo-about over Cargo.lock, about.toml, scripts/notices.hbs), then Swagger UI's licence and
# NOTICE, taken from the archive the binary embeds (utoipa-swagger-ui-vendored).
#   scripts/notices.sh          regenerate after a dependency change
#   scripts/notices.sh --check  fail when the committed file is stale (.ci/run)
# Needs cargo-about (`cargo install --locked cargo-about --features cli`; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

out=THIRD-PARTY-NOTICES.md

# The two tools read the same licence allow-list from two files: they must agree.
python3 - <<'PY'
import sys, tomllib
deny = set(tomllib.load(open("deny.toml", "rb"))["licenses"]["allow"])
about = set(tomllib.load(open("about.toml", "rb"))["accepted"])
if deny != about:
    sys.exit(f"notices: deny.toml allows {sorted(deny - about)} and about.toml accepts "
             f"{sorted(about - deny)} the other does not: keep one list in both")
PY
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT

cargo about generate --frozen --fail -m crates/petstore/Cargo.toml -c about.toml \
  scripts/notices.hbs -o "$generated"

# Swagger UI: the zip inside the vendored crate this Cargo.lock resolves.
manifest=$(cargo metadata --frozen --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["manifest_path"] for p in meta["packages"] if p["name"] == "utoipa-swagger-ui-vendored"))')
python3 - "$(dirname "$manifest")" >> "$generated" <<'PY'
import pathlib, sys, zipfile
archive = next(pathlib.Path(sys.argv[1], "res").glob("*.zip"))
with zipfile.ZipFile(archive) as z:
    top = z.namelist()[0].split("/")[0]
    print(f"\n## Swagger UI ({top.removeprefix('swagger-ui-')}), served at /docs\n")
    print("Apache License 2.0. Its NOTICE file:\n\n```text")
    print(z.read(f"{top}/NOTICE").decode().strip())
    print("```\n\nIts LICENSE file:\n\n```text")
    print(z.read(f"{top}/LICENSE").decode().strip())
    print("```")
PY

if [ "${1:-}" = "--check" ]; then
  if ! diff -q "$out" "$generated" >/dev/null; then
    diff -u "$out" "$generated" | head -40 >&2
    echo "notices: $out is stale: run scripts/notices.sh and commit it" >&2
    exit 1
  fi
  echo "notices: $out is current"
else
  cp "$generated" "$out"
  echo "notices: wrote $out"
fi
