# scripts/ci/stages.sh: sourced by .ci/run and scripts/ci/services.sh.
#
# `timed NAME command...` runs one stage of CI, prints a `--- NAME` header
# before it and its time after it, and appends `NAME<TAB>seconds<TAB>ok|failed`
# to $CI_STAGES (default .tmp/ci-stages.tsv), so stages that ran in the
# background are counted too. It returns the command's exit status and never
# exits the calling shell by itself. `print_stages` prints the table.
CI_STAGES="${CI_STAGES:-.tmp/ci-stages.tsv}"

timed() {
  local name="$1" started status=0
  shift
  echo "--- $name"
  started=$(date +%s)
  "$@" || status=$?
  local took=$(( $(date +%s) - started ))
  printf '%s\t%s\t%s\n' "$name" "$took" "$([ "$status" = 0 ] && echo ok || echo "failed ($status)")" >>"$CI_STAGES"
  echo "--- $name: ${took} s$([ "$status" = 0 ] || echo ", exit $status")"
  return "$status"
}

print_stages() { # <seconds since the run started>
  [ -f "$CI_STAGES" ] || return 0
  echo
  echo "stage times (background stages overlap the foreground ones; wall time ${1:-?} s):"
  awk -F '\t' '{ printf "%8d s  %-44s %s\n", $2, $1, $3 }' "$CI_STAGES"
}
