/**
 * What the sessions and processes share about shells: quoting, the
 * line-based output upstream's server produces, the reaper every shell runs
 * under, and killing a process tree. Invariant: a shell started here never
 * leaves zombies to PID 1 (this Node server, which cannot reap processes it
 * did not spawn): each runs under a perl subreaper that waits for every
 * descendant before it exits.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** One single-quoted shell word. */
export const quote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`

/** Valid environment variable names; anything else is refused before it reaches a shell. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Foreground output as upstream's server returns it: text made of lines, NUL
 * bytes lost, and the final newline dropped (so a missing one cannot be told apart).
 */
export function foregroundText(raw: Buffer): string {
  return raw.toString('utf8').replace(/\0/g, '').replace(/\n$/, '')
}

/** Splits streamed bytes into whole lines, each given back with its `\n`; `flush` ends a last partial line with one. */
export class LineSplitter {
  private rest = ''
  private readonly decoder = new TextDecoder()
  push(chunk: Buffer): string[] {
    const text = this.rest + this.decoder.decode(chunk, { stream: true }).replace(/\0/g, '')
    const lines = text.split('\n')
    this.rest = lines.pop() ?? ''
    return lines.map((line) => `${line}\n`)
  }
  flush(): string[] {
    const last = this.rest + this.decoder.decode().replace(/\0/g, '')
    this.rest = ''
    return last === '' ? [] : [`${last}\n`]
  }
}

/** prctl(2) syscall number per architecture, for PR_SET_CHILD_SUBREAPER (36). */
const PRCTL = process.arch === 'arm64' ? 167 : 157
/**
 * Perl (Debian's essential perl-base) as a subreaper: it forks the shell with
 * this process's fds, drops its own copies (so the shell's exit closes the
 * pipes), and waits for every descendant, orphans included, before exiting.
 */
const REAPER = `syscall(${PRCTL}, 36, 1); my $pid = fork(); die "fork: $!" unless defined $pid;
if ($pid == 0) { exec { $ARGV[0] } @ARGV or die "exec: $!"; }
open(STDIN, '<', '/dev/null'); open(STDOUT, '>', '/dev/null'); require POSIX; POSIX::close(3);
$SIG{TERM} = sub { kill 'TERM', $pid };
while (waitpid(-1, 0) > 0) {}`

/** Spawn `bash --norc` under the reaper, with a command pipe on stdin and a report pipe on fd 3. */
export function spawnShell(cwd: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn('perl', ['-e', REAPER, 'bash', '--norc'], { cwd, env, stdio: ['pipe', 'ignore', 'inherit', 'pipe'] })
}

/** Parent pid and process group of `pid` from /proc, or undefined when it is gone or a zombie. */
function procStat(pid: number): { ppid: number; pgrp: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined
    return { ppid: Number(fields[1]), pgrp: Number(fields[2]) }
  } catch {
    return undefined
  }
}

/** `root` and every live process in its group or below it. */
export function processTree(root: number): number[] {
  const table = new Map<number, { ppid: number; pgrp: number }>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = procStat(Number(name))
    if (stat) table.set(Number(name), stat)
  }
  const found = new Set<number>()
  for (const [pid, stat] of table) if (pid === root || stat.pgrp === root) found.add(pid)
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, stat] of table) {
      if (!found.has(pid) && found.has(stat.ppid)) {
        found.add(pid)
        grew = true
      }
    }
  }
  return [...found]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Kill the tree of `root`: SIGTERM to each process, SIGKILL to what is left
 * after `graceMs`, then wait (up to 2 s more) until none is alive.
 * @returns The last signal sent.
 */
export async function killTree(root: number, graceMs = 2000): Promise<'SIGTERM' | 'SIGKILL'> {
  const signal = (pids: number[], sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, sig)
      } catch {
        // already gone
      }
    }
  }
  signal(processTree(root), 'SIGTERM')
  for (const deadline = Date.now() + graceMs; Date.now() < deadline; await sleep(25)) {
    if (processTree(root).length === 0) return 'SIGTERM'
  }
  signal(processTree(root), 'SIGKILL')
  for (const deadline = Date.now() + 2000; Date.now() < deadline && processTree(root).length > 0; ) await sleep(25)
  return 'SIGKILL'
}

/** True while `pid` is a live (not zombie) process. */
export const alive = (pid: number): boolean => procStat(pid) !== undefined
