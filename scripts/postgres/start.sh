#!/usr/bin/env bash
# scripts/postgres/start.sh: start a throwaway PostgreSQL for the tests.
#
# Made for Debian hosts without systemd (CI, dev VMs): installs Debian's
# `postgresql` with apt when its binaries are missing, runs `initdb` into a
# fresh temp folder owned by the `postgres` user (initdb refuses root), starts
# the server on 127.0.0.1 with trust auth (local tests only: never expose it),
# creates a database and waits until `pg_isready` answers. Prints
# `export TANSTACK_SANDBOX_PG_URL=postgres://...` on stdout (and writes that
# line to the file given as $1, if any); everything else goes to stderr.
# Stop it with scripts/postgres/stop.sh <the same file, or the data folder>.
#
# Environment (all optional):
#   PG_PORT        port to listen on (default 54329; the next free one is taken when busy)
#   PG_DATABASE    database to create (default tanstack_sandbox)
#   PG_WAIT_SECS   how long to wait for the server (default 30)
#   PG_NO_INSTALL=1 never call apt-get; fail when the binaries are missing
set -euo pipefail

PG_PORT="${PG_PORT:-54329}"
PG_DATABASE="${PG_DATABASE:-tanstack_sandbox}"
PG_WAIT_SECS="${PG_WAIT_SECS:-30}"
OUT_FILE="${1:-}"
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

say() { printf '[postgres] %s\n' "$*" >&2; }
fail() {
  printf '[postgres] ERROR: %s\n' "$*" >&2
  exit 1
}

find_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then
  [ "${PG_NO_INSTALL:-}" = 1 ] && fail "PostgreSQL binaries (initdb, pg_ctl) not found and PG_NO_INSTALL=1"
  command -v apt-get >/dev/null 2>&1 || fail "PostgreSQL binaries not found and apt-get is not available: install PostgreSQL 13 or later"
  say "installing postgresql with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || true
  apt-get install -y -qq --no-install-recommends postgresql >&2 || fail "apt-get install postgresql failed"
  BIN="$(find_bin || true)"
  [ -n "$BIN" ] || fail "postgresql was installed but initdb was not found under /usr/lib/postgresql/*/bin"
fi

# initdb refuses root: run the server as the postgres user when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
  return 1
}
port="$PG_PORT"
for _ in $(seq 1 50); do
  port_busy "$port" || break
  port=$((port + 1))
done
port_busy "$port" && fail "no free port from $PG_PORT to $port"

dir="$(mktemp -d "${TMPDIR:-/tmp}/tanstack-pg-XXXXXX")"
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
say "initdb in $dir/data"
as_pg "$BIN/initdb" -D "$dir/data" -A trust -U postgres --no-instructions >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; fail "initdb failed"; }
# Enough connections for parallel test files, and short shutdowns.
as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t "$PG_WAIT_SECS" \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" start >&2 || { cat "$dir/server.log" >&2; fail "pg_ctl start failed"; }
for _ in $(seq 1 "$((PG_WAIT_SECS * 10))"); do
  "$BIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break
  sleep 0.1
done
"$BIN/pg_isready" -q -h 127.0.0.1 -p "$port" || fail "the server on 127.0.0.1:$port did not answer within ${PG_WAIT_SECS}s"
as_pg "$BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$PG_DATABASE"

url="postgres://postgres@127.0.0.1:$port/$PG_DATABASE"
printf '%s\n' "$dir" >"$dir/.tanstack-pg"
line="export TANSTACK_SANDBOX_PG_URL=$url"
say "ready on 127.0.0.1:$port (data folder $dir/data)"
[ -n "$OUT_FILE" ] && { printf '%s\nexport TANSTACK_SANDBOX_PG_DIR=%s\n' "$line" "$dir" >"$OUT_FILE"; }
printf '%s\nexport TANSTACK_SANDBOX_PG_DIR=%s\n' "$line" "$dir"
