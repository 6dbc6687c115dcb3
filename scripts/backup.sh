#!/usr/bin/env bash
# Back up the DialToM Studio database with pg_dump, in PostgreSQL's custom format.
#
#   scripts/backup.sh [OUTFILE]
#
# The database is DATABASE_URL (postgres://user:password@host:port/name, as the app reads
# it). OUTFILE defaults to backups/dialtom-<UTC timestamp>.dump. The dump is written to a
# temporary file, checked with `pg_restore --list`, then renamed, so a dump that exists is
# a whole one. Custom format is compressed and restores selectively and in parallel
# (`pg_restore -j`). The last line printed is a JSON object: file, bytes, sha256.
#
# Restore with scripts/restore.sh. Schedule it (cron, systemd timer) and copy the files off
# the machine; a backup that only lives next to the database is not a backup.
set -euo pipefail

: "${DATABASE_URL:?set DATABASE_URL=postgres://user:password@host:port/name}"
case "$DATABASE_URL" in
  postgres://*|postgresql://*) ;;
  *) echo "backup.sh: DATABASE_URL must be a PostgreSQL URL (got ${DATABASE_URL%%:*}://…)" >&2; exit 2 ;;
esac

out="${1:-backups/dialtom-$(date -u +%Y%m%dT%H%M%SZ).dump}"
mkdir -p "$(dirname "$out")"
tmp="$(mktemp "${out}.partial.XXXXXX")"
trap 'rm -f "$tmp"' EXIT

pg_dump --dbname="$DATABASE_URL" --format=custom --compress=6 --no-owner --no-privileges --file="$tmp"
# A dump that pg_restore cannot list is not kept.
pg_restore --list "$tmp" >/dev/null
mv "$tmp" "$out"
trap - EXIT

bytes="$(stat -c %s "$out")"
sha="$(sha256sum "$out" | cut -d' ' -f1)"
printf '{"file": "%s", "bytes": %s, "sha256": "%s"}\n' "$out" "$bytes" "$sha"
