#!/usr/bin/env bash
# Makes sure a PgBouncer >= 1.21 (max_prepared_statements: prepared statements kept under
# transaction pooling) is on PATH for bench/pgbouncer.py. Debian 12's package is 1.18, so this
# builds Debian 13's source package (pgbouncer 1.24.x) and installs it in /usr/local/bin.
# Idempotent: does nothing when a recent enough pgbouncer is already there. Needs root (apt).
set -euo pipefail

MIN_MINOR=21
have_recent() {
  local bin v
  bin=$(command -v pgbouncer 2>/dev/null || true)
  [ -n "$bin" ] || return 1
  v=$("$bin" --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1)
  [ -n "$v" ] || return 1
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge "$MIN_MINOR" ]; }
}

if have_recent; then
  echo "pgbouncer: $(pgbouncer --version | head -1) ($(command -v pgbouncer))"
  exit 0
fi

SRC_LIST=/etc/apt/sources.list.d/dialtom-pgbouncer-src.sources
if [ ! -f "$SRC_LIST" ]; then
  cat > "$SRC_LIST" <<'LIST'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
LIST
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends dpkg-dev build-essential pkg-config \
  libevent-dev libssl-dev libc-ares-dev >/dev/null

WORK=$(mktemp -d /tmp/pgbouncer-build.XXXXXX)
cd "$WORK"
apt-get source --download-only pgbouncer/trixie >/dev/null
tarball=$(ls pgbouncer_*.orig.tar.* | head -1)
tar xf "$tarball"
cd pgbouncer-*/
./configure --prefix=/usr/local --with-cares >/dev/null
make -j"$(nproc)" >/dev/null
make install >/dev/null
cd /
rm -rf "$WORK"
hash -r
have_recent || { echo "pgbouncer build did not give >= 1.$MIN_MINOR" >&2; exit 1; }
echo "pgbouncer: $(pgbouncer --version | head -1) ($(command -v pgbouncer))"
