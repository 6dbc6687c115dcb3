#!/usr/bin/env bash
# Restore a dump made by scripts/backup.sh into a PostgreSQL database.
#
#   scripts/restore.sh [--clean] DUMPFILE [TARGET_DATABASE_URL]
#
# TARGET_DATABASE_URL defaults to DATABASE_URL. The target database is created if it does
# not exist (through the `postgres` maintenance database of the same server). A target
# that already holds tables is refused unless --clean is given, which drops the dumped
# objects first. The restore runs in ONE transaction (--single-transaction
# --exit-on-error): it either completes or leaves the target as it was.
#
# Typical recovery: stop web and workers, `scripts/restore.sh --clean backups/X.dump`,
# then `python manage.py migrate` (a no-op for a dump of the same code version), start again.
set -euo pipefail

clean=0
if [[ "${1:-}" == "--clean" ]]; then clean=1; shift; fi
dump="${1:?usage: restore.sh [--clean] DUMPFILE [TARGET_DATABASE_URL]}"
target="${2:-${DATABASE_URL:-}}"
[[ -n "$target" ]] || { echo "restore.sh: no target: pass TARGET_DATABASE_URL or set DATABASE_URL" >&2; exit 2; }
[[ -r "$dump" ]] || { echo "restore.sh: cannot read $dump" >&2; exit 2; }
case "$target" in
  postgres://*|postgresql://*) ;;
  *) echo "restore.sh: target must be a PostgreSQL URL" >&2; exit 2 ;;
esac

# The archive must be a whole custom-format dump before anything is touched.
pg_restore --list "$dump" >/dev/null

base="${target%%\?*}"
dbname="${base##*/}"
maintenance="${base%/*}/postgres"
if ! psql --dbname="$maintenance" -tAc "SELECT 1 FROM pg_database WHERE datname = '${dbname//\'/\'\'}'" | grep -q 1; then
  psql --dbname="$maintenance" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"${dbname//\"/\"\"}\""
  echo "restore.sh: created database $dbname" >&2
fi

tables="$(psql --dbname="$target" -tAc "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")"
args=(--dbname="$target" --no-owner --no-privileges --single-transaction --exit-on-error)
if [[ "$tables" != "0" ]]; then
  if [[ "$clean" != "1" ]]; then
    echo "restore.sh: $dbname already holds $tables tables; pass --clean to replace them" >&2
    exit 3
  fi
  args+=(--clean --if-exists)
fi
pg_restore "${args[@]}" "$dump"

rows="$(psql --dbname="$target" -tAc "SELECT count(*) FROM verification_judgment" 2>/dev/null || echo null)"
printf '{"restored": "%s", "into": "%s", "judgments": %s}\n' "$dump" "$dbname" "${rows:-null}"
