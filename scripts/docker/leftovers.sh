#!/usr/bin/env bash
# scripts/docker/leftovers.sh: the global teardown check of the Docker suites.
#
# Lists every container, image and volume carrying the `tanstack.sandbox`
# label (what @tanstack/ai-sandbox-docker creates or commits) and exits 1 when
# there is any: after the whole test run nothing of ours may remain. It only
# reports; clean up with `pruneDockerSandboxes()` or `docker rm -f` / `docker rmi`.
# Exits 0 (with a note) when no engine answers: the suites themselves decide
# whether a missing engine is an error (REQUIRE_DOCKER=1).
set -euo pipefail
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"
LABEL="${1:-tanstack.sandbox}"

if ! command -v docker >/dev/null 2>&1 || ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  echo "[leftovers] no Docker engine answering; nothing to check" >&2
  exit 0
fi

containers="$(docker ps -aq --filter "label=$LABEL")"
images="$(docker images -aq --filter "label=$LABEL" | sort -u)"
volumes="$(docker volume ls -q --filter "label=$LABEL")"
if [ -z "$containers$images$volumes" ]; then
  echo "[leftovers] no container, image or volume labelled $LABEL is left" >&2
  exit 0
fi
echo "[leftovers] ERROR: resources labelled $LABEL were left behind by the tests:" >&2
[ -z "$containers" ] || docker ps -a --filter "label=$LABEL" --format '  container {{.ID}} {{.Names}} {{.Image}} {{.Status}}' >&2
[ -z "$images" ] || docker images -a --filter "label=$LABEL" --format '  image {{.ID}} {{.Repository}}:{{.Tag}} {{.CreatedSince}}' >&2
[ -z "$volumes" ] || docker volume ls --filter "label=$LABEL" --format '  volume {{.Name}}' >&2
exit 1
