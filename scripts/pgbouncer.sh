#!/usr/bin/env bash
# Builds PgBouncer from Debian's source (the tarball Debian 13 packages, checked against its
# SHA-256) into target/tools/pgbouncer, once: the tests and benchmarks through a transaction
# pooler run it. Debian 12 packages 1.18, which keeps no prepared statements in transaction
# mode; `pooler=transaction-prepared` needs 1.21 or later. Needs curl, a C compiler, make,
# pkg-config, and libevent's and OpenSSL's headers (installed from Debian's packages when
# missing). Debian's pool keeps a tarball while a release of Debian packages it: when this one
# is gone, take the version Debian packages now (VERSION and its SHA-256 from Debian's .dsc).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=1.24.1
SHA256=da72a3aba13072876d055a3e58dd4aba4a5de4ed6148e73033185245598fd3e0
prefix=$PWD/target/tools/pgbouncer

if [ "$("$prefix/bin/pgbouncer" --version 2>/dev/null | head -n1)" = "PgBouncer $VERSION" ]; then
  exit 0
fi
echo "pgbouncer: building PgBouncer $VERSION"
missing=()
[ -f /usr/include/event2/event.h ] || missing+=(libevent-dev)
[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v make >/dev/null || missing+=(make)
command -v cc >/dev/null || missing+=(gcc libc6-dev)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball=pgbouncer_$VERSION.orig.tar.gz
curl -fsS -o "$work/$tarball" "http://deb.debian.org/debian/pool/main/p/pgbouncer/$tarball"
echo "$SHA256  $work/$tarball" | sha256sum --check --quiet
tar -xzf "$work/$tarball" -C "$work"
(
  cd "$work/pgbouncer-$VERSION"
  ./configure --quiet --prefix="$prefix" --without-cares --without-pam --without-systemd >/dev/null
  make --quiet -j"$(nproc)" >/dev/null
  make --quiet install >/dev/null
)
chmod -R a+rX "$prefix"
"$prefix/bin/pgbouncer" --version | head -n1
