/**
 * The kill of a provider job's whole process tree, as POSIX sh plus awk run
 * inside the sandbox (Docker, Daytona): {@link GROUP_KILLER} signals a process
 * group, the processes carrying the job's marker and their descendants, and
 * escalates to SIGKILL. BusyBox compatible; reads /proc (Linux only).
 * Design notes: docs/design/docker.md (job kill)
 */
import { TAGGED_PIDS_SH } from './process-tags.js'

/**
 * The awk program `GROUP_KILLER` takes as its `<scan awk>` argument.
 * Lists the live processes of job `$g` as `pid:starttime ` words: members of
 * the group, the pids in `$tagged` (those carrying the job's marker), processes
 * already listed in `$known` that still run (same start time, so a reused pid
 * is not taken), and every descendant of any of them by parent pid. Reads `/proc/<pid>/stat` (state, ppid, pgrp and starttime after
 * the last ")"); zombies have exited and are left out. Ends with "." only when
 * the listing was complete (the killer's own shell `$self` was seen), so a
 * failed fork (pids limit) reads as "unknown", never as "nothing left".
 * BusyBox awk compatible.
 */
export const JOB_SCAN_AWK = [
  'BEGIN { n = split(known, k, " "); for (i = 1; i <= n; i++) { c = index(k[i], ":"); ks[substr(k[i], 1, c - 1)] = substr(k[i], c + 1) }; n = split(tagged, k, " "); for (i = 1; i <= n; i++) tg[k[i]] = 1 }',
  '{ p = $1; sub(/^.*\\) /, ""); st[p] = $1; pp[p] = $2; pg[p] = $3; t[p] = $20 }',
  'END {',
  '  for (p in st) if (pg[p] == g || (p in tg) || ((p in ks) && ks[p] == t[p])) job[p] = 1',
  '  more = 1',
  '  while (more) { more = 0; for (p in st) if (!(p in job) && (pp[p] in job)) { job[p] = 1; more = 1 } }',
  '  if (!(self in st)) exit 1',
  '  for (p in job) if (st[p] != "Z" && st[p] != "X") printf "%s:%s ", p, t[p]',
  '  print "."',
  '}',
].join('\n')

/**
 * Runs as `sh -c KILLER killer <pgid> <signal> <grace in 50 ms steps> <scan awk> <marker entry>`
 * (the grace is measured by the clock, /proc/uptime, not by counting rounds).
 * Collects the job (by group, marker and descent) before signalling it,
 * signals the group, then each collected process (with the `kill` builtin,
 * which needs no fork), and rescans (collecting new descendants and marked
 * processes) until none is left, after SIGKILL hitting each round's finds
 * again (so a respawning loop cannot outpace it). A scan that could not run (no fork) counts
 * as "still alive". The killer's own exec does not carry the marker.
 * Exit 0: nothing of the job is left; 3: processes survived SIGKILL for 30 s
 * (their `pid:starttime` words on stdout).
 */
export const GROUP_KILLER = [
  'g=$1 scanner=$4 entry=$5 job=',
  TAGGED_PIDS_SH,
  // `set --` joins the pid lines into one word list without a fork.
  'scan() { t=$(tagged_pids "$entry") || return 1; set -- $t; j=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$g" -v self="$$" -v known="$job" -v tagged="$*" "$scanner") || return 1; case $j in *.) job=${j%.}; return 0 ;; esac; return 1; }',
  // The group first: one kill(2) reaches all its members (the job's shell too) before any of them can
  // exit, so the shell never sees a child die and ends with its own status (0 after `wait`) instead.
  'hit() { kill -"$1" -"$g" 2>/dev/null; for e in $job; do kill -"$1" "${e%%:*}" 2>/dev/null; done; }',
  // now: the uptime in 1/100 s into $u, without a fork (a count of calls where /proc/uptime is unreadable).
  'now() { u=; read -r u _ < /proc/uptime 2>/dev/null; case $u in *.*) u=$((${u%.*} * 100 + 1${u#*.} - 100)) ;; *) c=$((${c:-0} + 5)); u=$c ;; esac; }',
  // settle STEPS [SIGNAL]: rescan until nothing is left or STEPS x 50 ms have passed (by the clock: a scan takes
  // its own time on a loaded machine); with SIGNAL, each round also hits what the scan found
  // (a process started after the last hit, e.g. by a respawning loop, is not spared).
  'settle() { now; end=$((u + $1 * 5)); while :; do if scan && [ -z "$job" ]; then return 0; fi; now; [ "$u" -ge "$end" ] && return 1; [ -n "$2" ] && hit "$2"; sleep 0.05; done; }',
  'if scan && [ -z "$job" ]; then exit 0; fi',
  'hit "$2"',
  'settle "$3" && exit 0',
  'hit KILL',
  'settle 600 KILL && exit 0',
  'printf "%s" "$job"',
  'exit 3',
].join('\n')
