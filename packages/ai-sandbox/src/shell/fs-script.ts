/**
 * The one shell script behind every `handle.fs` call of the container
 * providers (Docker, Daytona), run in the sandbox as its user with paths as
 * arguments (never in the script text).
 * BusyBox- and dash-compatible. Invariant: each operation pins a directory
 * (`cd -P`, checked with `pwd -P`, exit 10 outside the root) and then names
 * only plain entries in it, so a swapped-in symlink can fail a call, never escape.
 * Design notes: docs/design/docker.md (fs script)
 */

/** Exit codes the script uses for outcomes the host turns into typed errors. */
export const FS_EXIT = {
  /** stderr: `<label>\n<physical path>`; the path leaves the workspace through a symlink. */
  escape: 10,
  /** stderr: a short reason; the path (or a symlink target in it) does not exist. */
  notFound: 11,
  /** stderr: `is a directory` or `not a directory`. */
  wrongType: 12,
  /** More than 40 symlinks on the way (a loop). */
  loop: 13,
  /** The operation would remove or replace the workspace root itself. */
  root: 14,
  /** stderr: what it is (`a FIFO`, `a character device`, ...); not a regular file. */
  special: 15,
  /** stderr: the link count; a read of a file with other hard links. */
  hardLink: 16,
  /** stderr: the size in bytes; a read larger than the limit argument. */
  tooLarge: 17,
} as const

/** The operations the script knows. */
export type FsOp = 'read' | 'write' | 'list' | 'mkdir' | 'remove' | 'rename' | 'exists' | 'lstat'

/** The script text itself (see the module header for its arguments, exit codes and invariant). */
export const FS_SCRIPT = `
nl='
'
op=$1 ws=$2
fail() { printf '%s' "$2" >&2; exit "$1"; }

# inside LABEL: refuse unless the current directory really is the workspace or below it.
inside() {
  p=$(pwd -P) || fail 1 "cannot resolve the current directory"
  case "$p/" in "$ws"/*) ;; *) fail 10 "$1$nl$p" ;; esac
}

# enter DIR LABEL: pin DIR as the current directory (one chdir), then check where it landed.
enter() {
  if ! cd -P -- "$1" 2>/dev/null; then
    if [ -d "$1" ]; then fail 1 "permission denied"; elif [ -e "$1" ]; then fail 12 "not a directory"; fi
    fail 11 "no such directory"
  fi
  inside "$2"
}

# walk REL LABEL: from the workspace, create and enter each component of REL in turn (mkdir never follows a link).
walk() {
  lbl=$2
  enter "$ws" "$lbl"
  set -f
  old=$IFS IFS=/
  set -- $1
  IFS=$old
  set +f
  for c do
    [ -n "$c" ] || continue
    mkdir -- "$c" 2>/dev/null || [ -d "$c" ] || fail 1 "cannot create directory $c"
    enter "$c" "$lbl"
  done
}

# at REL LABEL [CREATE]: pin the directory holding REL's last component and set n to that component.
at() {
  case $1 in
    */*) if [ "$3" = 1 ]; then walk "\${1%/*}" "$2"; else enter "$ws" "$2"; enter "\${1%/*}" "$2"; fi; n=\${1##*/} ;;
    *) enter "$ws" "$2"; n=$1 ;;
  esac
}

# last LABEL: while n is a symlink, pin the directory its target names and make n the target's last component.
last() {
  hops=0
  while [ -L "$n" ]; do
    hops=$((hops + 1))
    [ "$hops" -le 40 ] || fail 13 "too many levels of symbolic links"
    l=$(readlink -- "$n" && printf x) || fail 1 "cannot read a symlink"
    l=\${l%x}
    l=\${l%"$nl"}
    case $l in
      */*) d=\${l%/*} n=\${l##*/}; [ -n "$d" ] || d=/ ;;
      *) d=. n=$l ;;
    esac
    case $n in
      ''|.|..) enter "$l" "$1"; n=. ;;
      *) enter "$d" "$1" ;;
    esac
  done
}

# kind NAME: what a non-regular entry is, for messages.
kind() {
  if [ -p "$1" ]; then printf 'a FIFO'; elif [ -S "$1" ]; then printf 'a socket'; elif [ -c "$1" ]; then printf 'a character device'; elif [ -b "$1" ]; then printf 'a block device'; else printf 'not a regular file'; fi
}

case $op in
read)
  max=$4
  at "$3" path
  last path
  [ -d "$n" ] && fail 12 "is a directory"
  [ -e "$n" ] || [ -L "$n" ] || fail 11 "no such file"
  [ -f "$n" ] || fail 15 "$(kind "$n")"
  [ -r "$n" ] || fail 1 "permission denied"
  command exec 3< "$n" || fail 11 "no such file"
  # The name can be swapped between the checks and the open: check what fd 3 really is.
  f=/proc/$$/fd/3
  o=$(readlink -- "$f" && printf x) || fail 1 "cannot resolve the opened file"
  o=\${o%x}
  o=\${o%"$nl"}
  case "$o/" in "$ws"/*) ;; *) fail 10 "path$nl$o" ;; esac
  [ -f "$f" ] || fail 15 "$(kind "$f")"
  s=$(stat -L -c '%h %s' -- "$f") || fail 1 "cannot stat the opened file"
  [ "\${s% *}" -gt 1 ] && fail 16 "\${s% *}"
  [ "\${s#* }" -gt "$max" ] && fail 17 "\${s#* }"
  exec head -c "$((max + 1))" <&3
  ;;
write)
  at "$3" path 1
  last path
  [ -d "$n" ] && fail 12 "is a directory"
  if [ -e "$n" ] && [ ! -f "$n" ]; then fail 15 "$(kind "$n")"; fi
  if [ -e "$n" ] && [ ! -w "$n" ]; then fail 1 "permission denied"; fi
  u=$(cat /proc/sys/kernel/random/uuid) || fail 1 "no random source for a temporary name"
  tmp=.tanstack-write-$u
  # noclobber: the temp file is created with O_EXCL, so nothing planted under its name is followed.
  set -C
  command exec 4> "$tmp" || fail 1 "cannot create a file in the directory"
  set +C
  if [ -f "$n" ] && [ ! -L "$n" ]; then m=$(stat -c %a -- "$n") && chmod "$m" "/proc/$$/fd/4"; fi
  if ! cat >&4; then rm -f -- "$tmp"; fail 1 "writing failed"; fi
  exec 4>&-
  mv -f -T -- "$tmp" "$n" || { rm -f -- "$tmp"; exit 1; }
  ;;
list)
  enter "$ws" path
  enter "$3" path
  [ -r . ] || fail 1 "permission denied"
  for f in * .[!.]* ..?*; do
    if [ -L "$f" ]; then k=l; elif [ -d "$f" ]; then k=d; elif [ -f "$f" ]; then k=f; elif [ -e "$f" ]; then k=o; else continue; fi
    printf '%s%s\\0' "$k" "$f"
  done
  ;;
mkdir)
  walk "$3" path
  ;;
remove)
  # A missing parent means nothing to remove (remove never fails on a missing path).
  case $3 in
    */*) enter "$ws" path; [ -e "\${3%/*}" ] || [ -L "\${3%/*}" ] || exit 0 ;;
  esac
  at "$3" path
  [ "$n" = . ] && fail 14 "the workspace root"
  rm -rf -- "$n"
  ;;
rename)
  at "$3" from
  s=$n
  [ -e "$s" ] || [ -L "$s" ] || fail 11 "no such file or directory"
  # Hold the source directory open; /proc/$$/fd/5/<name> names the entry in that very directory.
  exec 5< .
  at "$4" to 1
  if [ "$s" = . ] || [ "$n" = . ]; then fail 14 "the workspace root"; fi
  mv -f -T -- "/proc/$$/fd/5/$s" "$n"
  ;;
exists)
  if ! cd -P -- "$ws" 2>/dev/null; then fail 11 "no workspace"; fi
  case $3 in
    */*) cd -P -- "\${3%/*}" 2>/dev/null || { printf 0; exit 0; }; inside path; n=\${3##*/} ;;
    *) n=$3 ;;
  esac
  if [ -e "$n" ] || [ -L "$n" ]; then printf 1; else printf 0; fi
  ;;
lstat)
  at "$3" path
  [ -e "$n" ] || [ -L "$n" ] || fail 11 "no such file or directory"
  exec stat -c '%f %s %Y' -- "$n"
  ;;
*)
  fail 2 "unknown operation $op"
  ;;
esac
`
