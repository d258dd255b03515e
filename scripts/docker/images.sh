#!/usr/bin/env bash
# scripts/docker/images.sh: build the sandbox images locally, with no registry.
#
#   debian  : a Debian rootfs from `debootstrap --variant=minbase` with bash,
#             coreutils, git, ca-certificates, nodejs and procps, imported as
#             $DEBIAN_IMAGE (default tanstack-sandbox-debian:bookworm)
#   busybox : Debian's busybox-static (downloaded, not installed on the host),
#             imported as $BUSYBOX_IMAGE (default tanstack-sandbox-busybox:latest)
#   daytona : the debian image plus what a Daytona sandbox has: sudo (the
#             .deb downloaded on the host, installed without network), a
#             `daytona` user with passwordless `sudo -n`, and its workdir
#             /home/daytona/workspace, as $DAYTONA_IMAGE (default
#             tanstack-sandbox-daytona:bookworm; for testing/daytona-standin)
#   cloudflare : the debian image plus the Cloudflare stand-in's control
#             server (testing/cloudflare-standin/server, bundled on the host
#             with the esbuild of `pnpm install`, so run that first), root with
#             workspace /workspace, EXPOSE 3000 8080 8081, as $CLOUDFLARE_IMAGE
#             (default tanstack-sandbox-cloudflare:bookworm; its label
#             tanstack.sandbox.standin-source is the hash of the server's sources,
#             which the stand-in's lab compares to find a stale image)
#   base    : debian, busybox and daytona (what needs no `pnpm install`)
#   all     : all four (the default)
#
# Cached: an image whose `tanstack.sandbox.recipe` label equals the hash of its
# recipe (this script's inputs) is kept; FORCE=1 rebuilds. Needs root, Debian
# apt and a running engine (scripts/docker/engine.sh).
# Environment: SUITE (bookworm), DEBOOTSTRAP_MIRROR (default: the Debian
# mirror apt already uses), PACKAGES (the debootstrap --include list),
# WORK_BASE (/var/tmp; the rootfs is ~320 MB), FORCE.
set -euo pipefail

MODE="${1:-all}"
SUITE="${SUITE:-bookworm}"
DEBIAN_IMAGE="${DEBIAN_IMAGE:-tanstack-sandbox-debian:${SUITE}}"
BUSYBOX_IMAGE="${BUSYBOX_IMAGE:-tanstack-sandbox-busybox:latest}"
DAYTONA_IMAGE="${DAYTONA_IMAGE:-tanstack-sandbox-daytona:${SUITE}}"
CLOUDFLARE_IMAGE="${CLOUDFLARE_IMAGE:-tanstack-sandbox-cloudflare:${SUITE}}"
REPO_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PACKAGES="${PACKAGES:-bash,coreutils,git,ca-certificates,nodejs,procps}"
WORK_BASE="${WORK_BASE:-/var/tmp}"
FORCE="${FORCE:-0}"
RECIPE_LABEL=tanstack.sandbox.recipe
# Bump when the build steps below change, so cached images are rebuilt.
RECIPE_VERSION=1
PATH_ENV='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

say() { printf '[images] %s\n' "$*" >&2; }
fail() { printf '[images] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run me as root (debootstrap needs chroot and mknod)"
command -v docker >/dev/null || fail "no docker CLI; run scripts/docker/engine.sh first"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || fail "the Docker engine is not answering; run scripts/docker/engine.sh first"

apt_ready=0
ensure_host_packages() { # install host tools (debootstrap) when missing
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ "${#missing[@]}" = 0 ] && return 0
  [ "$apt_ready" = 1 ] || { apt-get update -qq; apt_ready=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

recipe_of() { printf '%s\n' "$RECIPE_VERSION" "$@" | sha256sum | cut -c1-16; }

up_to_date() { # up_to_date IMAGE RECIPE
  local have
  have="$(docker image inspect -f "{{index .Config.Labels \"$RECIPE_LABEL\"}}" "$1" 2>/dev/null)" || return 1
  [ "$FORCE" != 1 ] && [ "$have" = "$2" ]
}

image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }

forget_replaced() { # forget_replaced OLD_ID TAG: drop the image a rebuild replaced (kept if still used)
  if [ -n "$1" ] && [ "$1" != "$(image_id "$2")" ]; then docker image rm "$1" >/dev/null 2>&1 || true; fi
}

debian_mirror() { # the Debian archive URI apt already uses here (deb822 or one-line sources)
  local uri
  uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')"
  [ -n "$uri" ] || uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /\/debian\/?$/) { print $i; exit } }')"
  printf '%s' "$uri"
}

WORK=""
clean_work() { # unmount whatever debootstrap left mounted, deepest first, then delete
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
  rm -rf --one-file-system "$WORK"
  WORK=""
}
trap clean_work EXIT

import_rootfs() { # import_rootfs ROOT TAG RECIPE CMD MESSAGE [extra --change...]
  local root="$1" tag="$2" recipe="$3" cmd="$4" message="$5"; shift 5
  tar --numeric-owner -C "$root" -cf - . | docker import \
    --change "ENV $PATH_ENV" \
    --change "CMD $cmd" \
    --change "LABEL $RECIPE_LABEL=$recipe" \
    --change "LABEL org.opencontainers.image.title=$tag" \
    "$@" --message "$message" - "$tag" >/dev/null
}

build_debian() {
  local recipe; recipe="$(recipe_of debian "$SUITE" "$PACKAGES")"
  if up_to_date "$DEBIAN_IMAGE" "$recipe"; then say "$DEBIAN_IMAGE is current (recipe $recipe)"; return 0; fi
  local previous; previous="$(image_id "$DEBIAN_IMAGE")"
  local mirror="${DEBOOTSTRAP_MIRROR:-$(debian_mirror)}"
  [ -n "$mirror" ] || fail "no Debian mirror found in the apt sources; set DEBOOTSTRAP_MIRROR"
  ensure_host_packages debootstrap
  WORK="$(mktemp -d "$WORK_BASE/tanstack-sandbox-rootfs.XXXXXX")"
  local root="$WORK/rootfs" started=$SECONDS
  say "debootstrap --variant=minbase --include=$PACKAGES $SUITE (from $mirror)"
  if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2
    [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
    fail "debootstrap failed"
  fi
  # Smaller and neutral: no apt lists or caches, no logs; Docker provides hostname and resolv.conf.
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log "$root"/var/cache/debconf/*-old
  echo sandbox >"$root/etc/hostname"
  : >"$root/etc/resolv.conf"
  mkdir -p "$root/workspace"
  say "importing the rootfs as $DEBIAN_IMAGE"
  import_rootfs "$root" "$DEBIAN_IMAGE" "$recipe" '["/bin/bash"]' "debootstrap $SUITE minbase + $PACKAGES" --change 'ENV LANG=C.UTF-8'
  clean_work
  forget_replaced "$previous" "$DEBIAN_IMAGE"
  say "$DEBIAN_IMAGE built in $((SECONDS - started)) s"
}

build_busybox() {
  local recipe; recipe="$(recipe_of busybox)"
  if up_to_date "$BUSYBOX_IMAGE" "$recipe"; then say "$BUSYBOX_IMAGE is current (recipe $recipe)"; return 0; fi
  local previous; previous="$(image_id "$BUSYBOX_IMAGE")"
  WORK="$(mktemp -d "$WORK_BASE/tanstack-sandbox-busybox.XXXXXX")"
  local root="$WORK/rootfs" started=$SECONDS
  # Download the .deb only; the host keeps its own tools.
  if ! (cd "$WORK" && apt-get download -qq busybox-static) >/dev/null 2>&1; then
    apt-get update -qq; apt_ready=1  # a fresh machine has no package lists yet
    (cd "$WORK" && apt-get download -qq busybox-static) >/dev/null || fail "apt-get download busybox-static failed"
  fi
  local debs=("$WORK"/busybox-static_*.deb)
  [ -f "${debs[0]}" ] || fail "busybox-static .deb not found after download"
  dpkg-deb -x "${debs[0]}" "$WORK/pkg"
  mkdir -p "$root"/{bin,etc,tmp,root,workspace,proc,sys,dev,usr,var/tmp}
  chmod 1777 "$root/tmp" "$root/var/tmp"
  install -m 0755 "$WORK/pkg/bin/busybox" "$root/bin/busybox"
  local applet
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  ln -s ../bin "$root/usr/bin"; ln -s bin "$root/sbin"; ln -s ../bin "$root/usr/sbin"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  import_rootfs "$root" "$BUSYBOX_IMAGE" "$recipe" '["/bin/sh"]' "busybox-static from Debian"
  clean_work
  forget_replaced "$previous" "$BUSYBOX_IMAGE"
  say "$BUSYBOX_IMAGE built in $((SECONDS - started)) s"
}

build_daytona() { # needs the debian image: its id is part of the recipe, so a new base rebuilds this one
  local base; base="$(image_id "$DEBIAN_IMAGE")"
  [ -n "$base" ] || fail "$DEBIAN_IMAGE is missing; run $0 debian first"
  local recipe; recipe="$(recipe_of daytona "$base")"
  if up_to_date "$DAYTONA_IMAGE" "$recipe"; then say "$DAYTONA_IMAGE is current (recipe $recipe)"; return 0; fi
  local previous; previous="$(image_id "$DAYTONA_IMAGE")"
  WORK="$(mktemp -d "$WORK_BASE/tanstack-sandbox-daytona.XXXXXX")"
  local started=$SECONDS
  if ! (cd "$WORK" && apt-get download -qq sudo) >/dev/null 2>&1; then
    apt-get update -qq; apt_ready=1
    (cd "$WORK" && apt-get download -qq sudo) >/dev/null || fail "apt-get download sudo failed"
  fi
  mv "$WORK"/sudo_*.deb "$WORK/sudo.deb"
  cat >"$WORK/Dockerfile" <<DOCKERFILE
FROM $DEBIAN_IMAGE
COPY sudo.deb /tmp/sudo.deb
RUN dpkg -i /tmp/sudo.deb >/dev/null && rm /tmp/sudo.deb \\
 && useradd --create-home --uid 1000 --shell /bin/bash daytona \\
 && printf 'daytona ALL=(ALL) NOPASSWD:ALL\\n' >/etc/sudoers.d/daytona && chmod 0440 /etc/sudoers.d/daytona \\
 && mkdir -p /home/daytona/workspace && chown -R daytona:daytona /home/daytona
USER daytona
WORKDIR /home/daytona/workspace
LABEL $RECIPE_LABEL=$recipe org.opencontainers.image.title=$DAYTONA_IMAGE
DOCKERFILE
  say "building $DAYTONA_IMAGE from $DEBIAN_IMAGE"
  if ! DOCKER_BUILDKIT=0 docker build -q -t "$DAYTONA_IMAGE" "$WORK" >"$WORK/build.log" 2>&1; then
    tail -n 30 "$WORK/build.log" >&2
    fail "docker build of $DAYTONA_IMAGE failed"
  fi
  clean_work
  forget_replaced "$previous" "$DAYTONA_IMAGE"
  say "$DAYTONA_IMAGE built in $((SECONDS - started)) s"
}

standin_source_hash() { # the hash the lab recomputes (testing/cloudflare-standin/src/image.ts): server/*.ts in byte order
  (cd "$REPO_ROOT/testing/cloudflare-standin/server" && LC_ALL=C cat $(LC_ALL=C ls -- *.ts)) | sha256sum | cut -c1-16
}

build_cloudflare() { # needs the debian image (its id is in the recipe) and `pnpm install` (esbuild bundles the server)
  local base; base="$(image_id "$DEBIAN_IMAGE")"
  [ -n "$base" ] || fail "$DEBIAN_IMAGE is missing; run $0 debian first"
  local source; source="$(standin_source_hash)"
  local recipe; recipe="$(recipe_of cloudflare "$base" "$source")"
  if up_to_date "$CLOUDFLARE_IMAGE" "$recipe"; then say "$CLOUDFLARE_IMAGE is current (recipe $recipe)"; return 0; fi
  local esbuild="$REPO_ROOT/testing/cloudflare-standin/node_modules/.bin/esbuild"
  [ -x "$esbuild" ] || fail "no esbuild in testing/cloudflare-standin/node_modules; run pnpm install first"
  command -v node >/dev/null || fail "no node on the host to run esbuild"
  # Cloudflare's image has git, and the provider's git goes over exec: the base must have it too.
  docker run --rm --network none "$DEBIAN_IMAGE" git --version >/dev/null 2>&1 || fail "$DEBIAN_IMAGE has no git; rebuild it with $0 debian"
  local previous; previous="$(image_id "$CLOUDFLARE_IMAGE")"
  WORK="$(mktemp -d "$WORK_BASE/tanstack-sandbox-cloudflare.XXXXXX")"
  local started=$SECONDS
  "$esbuild" "$REPO_ROOT/testing/cloudflare-standin/server/main.ts" --bundle --platform=node --target=node18 --format=cjs \
    --log-level=warning --outfile="$WORK/server.js" || fail "bundling the Cloudflare stand-in server failed"
  cat >"$WORK/Dockerfile" <<DOCKERFILE
FROM $DEBIAN_IMAGE
COPY server.js /srv/standin/server.js
ENV HOME=/root
WORKDIR /workspace
EXPOSE 3000 8080 8081
CMD ["node", "/srv/standin/server.js"]
LABEL $RECIPE_LABEL=$recipe tanstack.sandbox.standin-source=$source org.opencontainers.image.title=$CLOUDFLARE_IMAGE
DOCKERFILE
  say "building $CLOUDFLARE_IMAGE from $DEBIAN_IMAGE"
  if ! DOCKER_BUILDKIT=0 docker build -q -t "$CLOUDFLARE_IMAGE" "$WORK" >"$WORK/build.log" 2>&1; then
    tail -n 30 "$WORK/build.log" >&2
    fail "docker build of $CLOUDFLARE_IMAGE failed"
  fi
  clean_work
  forget_replaced "$previous" "$CLOUDFLARE_IMAGE"
  say "$CLOUDFLARE_IMAGE built in $((SECONDS - started)) s"
}

case "$MODE" in
  debian) build_debian ;;
  busybox) build_busybox ;;
  daytona) build_daytona ;;
  cloudflare) build_cloudflare ;;
  base) build_busybox; build_debian; build_daytona ;;
  all) build_busybox; build_debian; build_daytona; build_cloudflare ;;
  *) fail "usage: $0 [debian|busybox|daytona|cloudflare|base|all]" ;;
esac
