/**
 * The one shell script behind every `handle.fs` call, run inside the container
 * as the sandbox user (so ownership and permissions are the agent's own):
 * `sh -c FS_SCRIPT tanstack-sandbox-fs <op> <physical root> <args...>`.
 * Paths travel as arguments, never inside the script text, so no quoting is
 * involved. BusyBox-compatible (readlink -f, stat -c, mv -T, printf with NUL).
 * The text is a plain template literal: `\${` is a shell expansion, `\\0` a NUL.
 * Invariant: every operation first maps its path with `target`, which follows
 * symlinks in the existing part of the path and refuses (exit 10) anything
 * that lands outside the physical workspace root; `read` checks again on the
 * descriptor it opened. Running as the sandbox user is what keeps a race from
 * ever reaching a file that user could not read anyway.
 */

/** Exit codes the script uses for outcomes the host turns into typed errors. */
export const FS_EXIT = {
  /** stderr: `<label>\n<physical path>`; the path leaves the workspace through a symlink. */
  escape: 10,
  /** stderr: a short reason; the path (or a symlink target in it) does not exist. */
  notFound: 11,
  /** stderr: `is a directory` or `not a directory`. */
  wrongType: 12,
  /** The operation would remove or replace the workspace root itself. */
  root: 14,
} as const

/** The operations the script knows. */
export type FsOp = 'read' | 'write' | 'list' | 'mkdir' | 'remove' | 'rename' | 'exists' | 'lstat'

export const FS_SCRIPT = `
nl='
'
op=$1 ws=$2
fail() { printf '%s' "$2" >&2; exit "$1"; }

# physical PATH: sets r to PATH with every symlink in its existing part followed;
# a missing tail is kept as written (it cannot contain symlinks yet).
physical() {
  x=$1 tail=
  while [ ! -e "$x" ] && [ ! -L "$x" ]; do
    tail=/\${x##*/}$tail
    x=\${x%/*}
    [ -n "$x" ] || x=/
  done
  r=$(readlink -f -- "$x" && printf x) || fail 11 "a symlink in the path points to a missing location"
  r=\${r%x}
  r=\${r%"$nl"}
  r=\${r%/}$tail
  [ -n "$r" ] || r=/
}

# target PATH FOLLOW LABEL: sets t to the physical path to operate on. FOLLOW=0
# describes a final symlink itself (remove, rename, exists, lstat).
target() {
  if [ "$2" = 1 ]; then
    physical "$1"
    t=$r
  else
    d=\${1%/*}
    [ -n "$d" ] || d=/
    physical "$d"
    t=\${r%/}/\${1##*/}
  fi
  case "$t/" in "$ws"/*) ;; *) fail 10 "$3$nl$t" ;; esac
}

case $op in
read)
  target "$3" 1 path
  [ -e "$t" ] || fail 11 "no such file"
  [ -d "$t" ] && fail 12 "is a directory"
  [ -r "$t" ] || fail 1 "permission denied"
  # The check and the open are two steps the agent can race (a directory on the
  # path swapped for a symlink): check again what fd 3 actually opened.
  command exec 3< "$t" || fail 11 "no such file"
  o=$(readlink -- "/proc/$$/fd/3" && printf x) || fail 1 "cannot resolve the opened file"
  o=\${o%x}
  o=\${o%"$nl"}
  case "$o/" in "$ws"/*) ;; *) fail 10 "path$nl$o" ;; esac
  [ -d "/proc/$$/fd/3" ] && fail 12 "is a directory"
  exec cat <&3
  ;;
write)
  target "$3" 1 path
  [ -d "$t" ] && fail 12 "is a directory"
  mkdir -p -- "\${t%/*}" || exit 1
  exec cat > "$t"
  ;;
list)
  target "$3" 1 path
  [ -e "$t" ] || fail 11 "no such directory"
  [ -d "$t" ] || fail 12 "not a directory"
  [ -r "$t" ] && [ -x "$t" ] || fail 1 "permission denied"
  for f in "$t"/* "$t"/.[!.]* "$t"/..?*; do
    if [ -L "$f" ]; then k=l; elif [ -d "$f" ]; then k=d; elif [ -f "$f" ]; then k=f; elif [ -e "$f" ]; then k=o; else continue; fi
    printf '%s%s\\0' "$k" "\${f##*/}"
  done
  ;;
mkdir)
  target "$3" 1 path
  mkdir -p -- "$t"
  ;;
remove)
  target "$3" 0 path
  [ "$t" = "$ws" ] && fail 14 "the workspace root"
  rm -rf -- "$t"
  ;;
rename)
  target "$3" 0 from
  s=$t
  target "$4" 0 to
  if [ "$s" = "$ws" ] || [ "$t" = "$ws" ]; then fail 14 "the workspace root"; fi
  [ -e "$s" ] || [ -L "$s" ] || fail 11 "no such file or directory"
  mkdir -p -- "\${t%/*}" || exit 1
  exec mv -f -T -- "$s" "$t"
  ;;
exists)
  target "$3" 0 path
  if [ -e "$t" ] || [ -L "$t" ]; then printf 1; else printf 0; fi
  ;;
lstat)
  target "$3" "$4" path
  [ -e "$t" ] || [ -L "$t" ] || fail 11 "no such file or directory"
  exec stat -c '%f %s %Y' -- "$t"
  ;;
*)
  fail 2 "unknown operation $op"
  ;;
esac
`
