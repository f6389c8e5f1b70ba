#!/usr/bin/env bash
# Installs what the browser and contract tests need and a fresh machine lacks, each only when
# missing: Debian's Chromium (and Node.js, Python's venv where absent), playwright-core (npm, pinned by tests/browser/package-lock.json;
# it never downloads a browser of its own) and schemathesis (PyPI, pinned, in a virtualenv under
# target/tools). `.ci/run` runs it; so can a developer, once. Without these tools those two
# tests skip loudly, except under CI, where they fail.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5

# Debian packages, each only when missing: Chromium, Node.js with npm, Python's venv module.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-tools: installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

browser=crates/petstore-http/tests/browser
if ! [ -d "$browser/node_modules/playwright-core" ]; then
  echo "test-tools: installing playwright-core"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error)
fi

venv=target/tools/schemathesis
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "test-tools: installing schemathesis $SCHEMATHESIS_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
