#!/usr/bin/env bash
# scripts/ci/services.sh: start everything the suites need besides Node
# packages, one after the other: the Docker engine and the sandbox images that
# need no `pnpm install` (`images.sh base`; .ci/run builds the Cloudflare
# stand-in's image once the install is done),
# Debian's chromium, and a throwaway PostgreSQL whose URL goes to <env file>.
# .ci/run starts it in the background at once, since these steps wait on apt,
# debootstrap and the engine rather than the CPU, while the install, build and
# checks run beside it. Each step is timed into $CI_STAGES; the first failure
# stops the chain with its exit status.
# Usage: scripts/ci/services.sh <env file for TANSTACK_SANDBOX_PG_URL>
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=stages.sh
source scripts/ci/stages.sh

timed "docker engine (background)" scripts/docker/engine.sh
timed "sandbox images (background)" scripts/docker/images.sh base
timed "chromium (background)" scripts/chromium/install.sh
# start.sh prints the URL on stdout as well as into the env file; only the file is wanted here.
timed "postgresql (background)" bash -c 'scripts/postgres/start.sh "$1" >/dev/null' postgres "$1"
