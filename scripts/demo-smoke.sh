#!/usr/bin/env bash
# The README's first command on a clean clone with nothing set: `make demo` (SQLite, tasks
# in-process), then log in as each role and open its home page and one item
# (scripts/demo_smoke.py), then stop the server. Run by .ci/run after the tests.
#
# The clone is of the committed HEAD, in a temporary directory; it borrows this checkout's
# installed .venv and node_modules (symlinks), as `make install` would find them done.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "demo smoke: FAILED: $*" >&2; exit 1; }

port="${DEMO_SMOKE_PORT:-$("$here/.venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
work="$(mktemp -d "${TMPDIR:-/tmp}/dialtom-demo-smoke.XXXXXX")"
log="$work/demo.log"
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -TERM -- "-$server" 2>/dev/null || true   # the process group of `make demo` (make, runserver and its reloader child)
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 -- "-$server" 2>/dev/null || break; sleep 0.5; done
        kill -KILL -- "-$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$here" "$work/clone" || fail "git clone of $here"
ln -s "$here/.venv" "$work/clone/.venv"
ln -s "$here/node_modules" "$work/clone/node_modules"
[ -e "$here/.venv/.installed" ] && [ -e "$here/node_modules/.installed" ] || fail "run make install first (the smoke run borrows .venv and node_modules)"
# A clone's files are newer than the borrowed install markers: date the install's inputs back, so
# `make demo` finds the install done and never reinstalls into the borrowed (shared) folders.
(cd "$work/clone" && touch -d "2000-01-01" requirements/*.txt package.json package-lock.json)

echo "demo smoke: make demo on a clean clone, port $port (log: $log)"
(
    cd "$work/clone"
    exec env -u DATABASE_URL -u REDIS_URL -u DJANGO_SETTINGS_MODULE -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND \
        -u CELERY_TASK_ALWAYS_EAGER -u SECRET_KEY -u DEBUG -u CACHE_KEY_PREFIX -u CELERY_TASK_DEFAULT_QUEUE \
        setsid make demo PORT="$port" >"$log" 2>&1
) &
server=$!

status=0
"$here/.venv/bin/python" "$here/scripts/demo_smoke.py" "http://127.0.0.1:$port" 240 || status=$?
if [ "$status" -ne 0 ]; then
    echo "demo smoke: the demo's output:" >&2
    tail -n 40 "$log" >&2
    fail "make demo on a clean clone (see above)"
fi
grep -q "Log in at http://127.0.0.1:$port/" "$log" || fail "load_demo did not print the URL with port $port"
echo "demo smoke: ok"
