#!/usr/bin/env bash
# Installs what the tests and checks need and a fresh machine lacks, each only when missing:
# Debian's Chromium (and Node.js, Python's venv where absent), podman with runc and debootstrap
# (the container image test), systemd-analyze (the unit's check), PgBouncer (built from Debian's
# source by scripts/pgbouncer.sh: the tests through a transaction pooler start their own) and
# Patroni, etcd and HAProxy (the test of
# deploy/patroni starts a cluster of its own); playwright-core (npm,
# pinned by tests/browser/package-lock.json; it never downloads a browser of its own);
# openapi-typescript, typescript and @redocly/cli (npm, pinned by tests/clients/package-lock.json);
# schemathesis, openapi-spec-validator, openapi-python-client with mypy, and opentelemetry-proto
# (the trace tests' collector decodes with it) (PyPI, pinned, each in a virtualenv under
# target/tools); cargo-deny and cargo-about
# (crates.io, pinned; the licence checks of .ci/run). `.ci/run` runs it; so can a developer,
# once. Without these tools the tests that need them skip loudly, except under CI, where they
# fail.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1
MYPY_VERSION=2.4.1
RUFF_VERSION=0.17.6
OPENAPI_SPEC_VALIDATOR_VERSION=0.7.2
OPENTELEMETRY_PROTO_VERSION=1.45.2
CARGO_DENY_VERSION=0.20.2
CARGO_ABOUT_VERSION=0.9.3

# Debian packages, each only when missing: Chromium, Node.js with npm, Python's venv module.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v systemd-analyze >/dev/null || missing+=(systemd)
[ -x /usr/bin/patroni ] || missing+=(patroni)
[ -x /usr/bin/etcd ] || missing+=(etcd-server)
[ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-tools: installing ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

bash scripts/pgbouncer.sh

browser=crates/petstore/tests/browser
if ! [ -d "$browser/node_modules/playwright-core" ]; then
  echo "test-tools: installing playwright-core"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error)
fi

clients=crates/petstore/tests/clients
if ! [ -d "$clients/node_modules/openapi-typescript" ]; then
  echo "test-tools: installing openapi-typescript, typescript and @redocly/cli"
  (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The Python client generator as the README shows it (ruff formats what it writes), and mypy.
venv=target/tools/openapi-python-client
if ! "$venv/bin/openapi-python-client" --version 2>/dev/null | grep -q "$OPENAPI_PYTHON_CLIENT_VERSION"; then
  echo "test-tools: installing openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION, mypy and ruff"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION" "mypy==$MYPY_VERSION" \
    "ruff==$RUFF_VERSION"
fi

venv=target/tools/schemathesis
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "test-tools: installing schemathesis $SCHEMATHESIS_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

venv=target/tools/openapi-spec-validator
if ! "$venv/bin/pip" show openapi-spec-validator 2>/dev/null | grep -q "^Version: $OPENAPI_SPEC_VALIDATOR_VERSION$"; then
  echo "test-tools: installing openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION"
fi

# The OTLP receiver of the trace tests decodes exports with OpenTelemetry's own protobuf
# definitions.
venv=target/tools/otlp
if ! "$venv/bin/pip" show opentelemetry-proto 2>/dev/null | grep -q "^Version: $OPENTELEMETRY_PROTO_VERSION$"; then
  echo "test-tools: installing opentelemetry-proto $OPENTELEMETRY_PROTO_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "opentelemetry-proto==$OPENTELEMETRY_PROTO_VERSION"
fi

# The licence checks: each built once from crates.io (a few minutes on 2 cores), then kept.
if ! cargo deny --version 2>/dev/null | grep -q "$CARGO_DENY_VERSION"; then
  echo "test-tools: installing cargo-deny $CARGO_DENY_VERSION"
  cargo install --locked --quiet "cargo-deny@$CARGO_DENY_VERSION"
fi
if ! cargo about --version 2>/dev/null | grep -q "$CARGO_ABOUT_VERSION"; then
  echo "test-tools: installing cargo-about $CARGO_ABOUT_VERSION"
  cargo install --locked --quiet "cargo-about@$CARGO_ABOUT_VERSION" --features cli
fi
