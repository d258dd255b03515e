#!/usr/bin/env bash
# scripts/postgres/stop.sh: stop a server started by scripts/postgres/start.sh
# and remove its temp folder. Argument: the file start.sh wrote, or the temp
# folder itself; without one, $TANSTACK_SANDBOX_PG_DIR. Idempotent: a folder
# already gone is not an error.
set -euo pipefail
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

target="${1:-${TANSTACK_SANDBOX_PG_DIR:-}}"
[ -n "$target" ] || { echo "[postgres] usage: stop.sh <file written by start.sh | data folder>" >&2; exit 2; }
if [ -f "$target" ]; then
  dir="$(sed -n 's/^export TANSTACK_SANDBOX_PG_DIR=//p' "$target")"
else
  dir="$target"
fi
[ -n "$dir" ] && [ -d "$dir" ] || { echo "[postgres] nothing to stop at ${target}" >&2; exit 0; }
[ -f "$dir/.tanstack-pg" ] || { echo "[postgres] $dir was not made by start.sh; refusing to remove it" >&2; exit 1; }

bin=""
for candidate in /usr/lib/postgresql/*/bin; do [ -x "$candidate/pg_ctl" ] && bin="$candidate"; done
[ -n "$bin" ] || bin="$(dirname "$(command -v pg_ctl)")"
if [ -f "$dir/data/postmaster.pid" ]; then
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  else
    "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
  fi
fi
rm -rf "$dir"
echo "[postgres] stopped and removed $dir" >&2
