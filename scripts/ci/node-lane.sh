#!/usr/bin/env bash
# scripts/ci/node-lane.sh: run the Node-version lane under another Node.js.
#
# Usage: scripts/ci/node-lane.sh <path to node> <report.json>
#
# The lane (TANSTACK_TEST_LANE=node-versions in vitest.config.ts) is each
# package's unit suites, the Claude Code end-to-end suite on local-process and
# the Docker provider's Engine API connection under backpressure
# (memory-bounds); the conformance kits, the other Docker engine suites, the
# Claude Code suite in Docker and the stores' cross-process races are left to
# Node 20. vitest and every
# process the tests start by name (`node`) run on the given binary;
# better-sqlite3 must have been built for it
# (scripts/ci/node-versions.sh). The JSON report goes to <report.json>, and
# each file's whole time to $TANSTACK_FILE_TIMES when set
# (scripts/ci/file-times-reporter.mjs). TANSTACK_TEST_WORKERS sets the
# workers, as for `pnpm test`; TANSTACK_TEST_LANE_SHARD=k/n runs this lane's
# share of the packages' unit suites (vitest.config.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
node_dir="$(cd "$(dirname "$1")" && pwd)"
export PATH="$node_dir:$PATH"
echo "node $(node --version) from $node_dir"
TANSTACK_TEST_LANE=node-versions node node_modules/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile.json="$2" \
  --reporter=./scripts/ci/file-times-reporter.mjs
