# scripts/ci/stages.sh: sourced by .ci/run and scripts/ci/services.sh.
#
# `timed NAME command...` runs one stage of CI, prints a `--- NAME` header
# before it and its time after it, and appends
# `NAME<TAB>seconds<TAB>ok|failed<TAB>busy%` to $CI_STAGES (default
# .tmp/ci-stages.tsv), so stages that ran in the background are counted too.
# busy% is how busy the whole machine's CPUs were while the stage ran (from
# /proc/stat; whatever else ran beside it counts too): a long stage far from
# 100% waits on something other than the CPU. It returns the command's exit status and never
# exits the calling shell by itself. `print_stages` prints the table.
CI_STAGES="${CI_STAGES:-.tmp/ci-stages.tsv}"

cpu_ticks() { # prints "<busy ticks> <all ticks>" summed over every CPU since boot
  awk '/^cpu / { idle = $5 + $6; all = 0; for (i = 2; i <= NF; i++) all += $i; print all - idle, all }' /proc/stat 2>/dev/null || echo "0 0"
}

timed() {
  local name="$1" started status=0 before after
  shift
  echo "--- $name"
  started=$(date +%s)
  before=$(cpu_ticks)
  "$@" || status=$?
  after=$(cpu_ticks)
  local took=$(( $(date +%s) - started ))
  local busy
  busy=$(echo "$before $after" | awk '{ d = $4 - $2; print (d > 0 ? int(100 * ($3 - $1) / d + 0.5) "%" : "?") }')
  printf '%s\t%s\t%s\t%s\n' "$name" "$took" "$([ "$status" = 0 ] && echo ok || echo "failed ($status)")" "$busy" >>"$CI_STAGES"
  echo "--- $name: ${took} s$([ "$status" = 0 ] || echo ", exit $status")"
  return "$status"
}

print_stages() { # <seconds since the run started>
  [ -f "$CI_STAGES" ] || return 0
  echo
  echo "stage times (background stages overlap the foreground ones; wall time ${1:-?} s; cpu: how busy the machine was meanwhile):"
  awk -F '\t' '{ printf "%8d s  %-44s cpu %4s  %s\n", $2, $1, $4, $3 }' "$CI_STAGES"
}
