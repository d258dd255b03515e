#!/usr/bin/env bash
# Installs Debian's chromium (/usr/bin/chromium) for the browser suites
# (examples/sandbox-web/tests), which drive it with playwright-core. Never
# lets a tool download a browser of its own: the machines have no network
# beyond the npm registry and Debian apt. Idempotent; needs root (apt-get).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "scripts/chromium/install.sh: /usr/bin/chromium is missing and installing it needs root (apt-get install -y chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
