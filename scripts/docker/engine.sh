#!/usr/bin/env bash
# scripts/docker/engine.sh: make sure a Docker engine answers on this machine.
#
# Made for Debian 12 hosts run as root without systemd (CI, dev VMs): installs
# Debian's docker.io (with containerd, runc, iptables, tini) when dockerd is
# missing, mounts cgroups when none are mounted, starts dockerd in the
# background and waits until the API answers. Idempotent: when the engine
# already answers it changes nothing and exits 0.
#
# Environment (all optional):
#   DOCKER_SOCK         socket to serve and probe   (default /var/run/docker.sock)
#   DOCKERD_LOG         daemon log                  (default /var/log/dockerd.log)
#   DOCKERD_PIDFILE     daemon pid file             (default /var/run/docker.pid)
#   DOCKERD_NET         bridge | nobridge | auto    (default auto: bridge when iptables works)
#                       With a bridge, published ports are served by iptables
#                       (--userland-proxy=false), not by a docker-proxy process
#                       per port: a connection to a container port nothing
#                       listens on yet is refused at once instead of accepted
#                       and left hanging, which made workerd's first port
#                       check of each Cloudflare container wait out its 5 s
#                       timeout, and no proxy processes start per container.
#   DOCKERD_EXTRA_FLAGS more dockerd flags, word-split
#   DOCKER_WAIT_SECS    how long to wait for the API (default 60)
#   DOCKER_NO_INSTALL=1 never call apt-get; fail when something is missing
set -euo pipefail

DOCKER_SOCK="${DOCKER_SOCK:-/var/run/docker.sock}"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"
DOCKERD_PIDFILE="${DOCKERD_PIDFILE:-/var/run/docker.pid}"
DOCKERD_NET="${DOCKERD_NET:-auto}"
DOCKER_WAIT_SECS="${DOCKER_WAIT_SECS:-60}"
export DOCKER_HOST="unix://${DOCKER_SOCK}"
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

say() { printf '[engine] %s\n' "$*" >&2; }
fail() {
  printf '[engine] ERROR: %s\n' "$*" >&2
  if [ -s "$DOCKERD_LOG" ]; then
    say "last warnings and errors of $DOCKERD_LOG:"
    grep -v 'level=info' "$DOCKERD_LOG" | tail -n 15 >&2 || true
  fi
  exit 1
}

# True when the daemon behind $DOCKER_SOCK answers /_ping.
answers() {
  [ -S "$DOCKER_SOCK" ] || return 1
  if command -v curl >/dev/null 2>&1; then
    timeout 10 curl -fsS --unix-socket "$DOCKER_SOCK" http://localhost/_ping >/dev/null 2>&1
  else
    timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
  fi
}

describe_engine() {
  say "$1: engine $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?') on $DOCKER_SOCK"
}

[ "$(id -u)" = 0 ] || fail "run me as root (I install packages and start dockerd)"
if answers; then
  describe_engine "already answering"
  exit 0
fi

# 1. Packages. Debian's docker.io does not start the daemon on install here:
#    there is no systemd and policy-rc.d refuses service starts.
need=()
for tool in dockerd:docker.io docker:docker.io containerd:containerd runc:runc iptables:iptables docker-init:tini; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  [ "${DOCKER_NO_INSTALL:-0}" = 1 ] && fail "missing ${need[*]} and DOCKER_NO_INSTALL=1"
  say "installing from Debian: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || fail "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || fail "apt-get install ${need[*]} failed"
fi

# 2. cgroups: dockerd needs a mounted hierarchy (these hosts usually have v1 mounted already).
if [ ! -e /sys/fs/cgroup/cgroup.controllers ] && ! mountpoint -q /sys/fs/cgroup/memory 2>/dev/null; then
  say "no cgroup hierarchy mounted; mounting cgroup v1 controllers"
  mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o uid=0,gid=0,mode=0755 cgroup /sys/fs/cgroup
  mounted=0
  while read -r controller; do
    mkdir -p "/sys/fs/cgroup/$controller"
    if mountpoint -q "/sys/fs/cgroup/$controller" || mount -n -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller"; then
      mounted=$((mounted + 1))
    else
      rmdir "/sys/fs/cgroup/$controller" || true
    fi
  done < <(awk '!/^#/ && $4 == 1 { print $1 }' /proc/cgroups)
  if [ "$mounted" = 0 ]; then
    umount /sys/fs/cgroup 2>/dev/null || true
    mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "could not mount cgroups"
  fi
fi

# 3. Start dockerd unless one is already starting (live pid in the pid file).
pid=""
if [ -s "$DOCKERD_PIDFILE" ]; then
  pid="$(cat "$DOCKERD_PIDFILE")"
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    say "dockerd $pid is starting; waiting for it"
  else
    pid=""
  fi
fi
if [ -z "$pid" ]; then
  if [ "$DOCKERD_NET" = auto ]; then
    if iptables -t nat -S >/dev/null 2>&1; then DOCKERD_NET=bridge; else DOCKERD_NET=nobridge; fi
  fi
  flags=(-H "unix://$DOCKER_SOCK" --pidfile "$DOCKERD_PIDFILE")
  case "$DOCKERD_NET" in
    bridge) flags+=(--userland-proxy=false) ;;
    # Without a bridge only `none` and `host` networks exist (host.docker.internal cannot work).
    nobridge) flags+=(--iptables=false --bridge=none) ;;
    *) fail "DOCKERD_NET must be bridge, nobridge or auto (got $DOCKERD_NET)" ;;
  esac
  # shellcheck disable=SC2206
  [ -n "${DOCKERD_EXTRA_FLAGS:-}" ] && flags+=($DOCKERD_EXTRA_FLAGS)
  mkdir -p "$(dirname "$DOCKERD_LOG")" "$(dirname "$DOCKERD_PIDFILE")" "$(dirname "$DOCKER_SOCK")"
  say "starting dockerd ${flags[*]} (log: $DOCKERD_LOG)"
  # Its own session, so the daemon outlives this shell and its process group.
  setsid nohup dockerd "${flags[@]}" >>"$DOCKERD_LOG" 2>&1 </dev/null &
  pid=$!
fi

# 4. Wait, bounded.
deadline=$(( $(date +%s) + DOCKER_WAIT_SECS ))
until answers; do
  kill -0 "$pid" 2>/dev/null || fail "dockerd ($pid) exited before answering on $DOCKER_SOCK"
  [ "$(date +%s)" -lt "$deadline" ] || fail "dockerd ($pid) did not answer on $DOCKER_SOCK within ${DOCKER_WAIT_SECS}s (left running)"
  sleep 0.5
done
describe_engine "started (dockerd $pid)"
