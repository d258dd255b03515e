/**
 * Who holds a lock row, and whether that process is gone: a holder id is
 * `<uuid> pid:<n> scope:<hex>`. Invariant: a holder is judged dead only when
 * its scope is this process's own and the OS says its pid no longer runs (or is
 * a zombie); every other row keeps the lease rule.
 * Design notes: docs/design/stores.md
 */
import { createHash, randomUUID } from 'node:crypto'
import { readFileSync, readlinkSync } from 'node:fs'
import { hostname } from 'node:os'

const BOOT_ID = readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim())
const PID_NAMESPACE = readOr(() => readlinkSync('/proc/self/ns/pid'))

/**
 * Whether this process can judge holders at all: only where Linux names the
 * boot and the pid namespace (and `/proc` is this namespace's own). Without
 * them two namespaces on one host could share a scope, and a live holder
 * would look dead; then every row keeps the lease rule.
 */
const CAN_JUDGE = BOOT_ID !== '' && PID_NAMESPACE !== '' && readOr(() => readlinkSync(`/proc/${process.pid}/ns/pid`)) === PID_NAMESPACE

/** This process's scope: a hash of the host name, the boot id and the pid namespace. */
const SCOPE = createHash('sha256').update([hostname(), BOOT_ID, PID_NAMESPACE].join('\n')).digest('hex').slice(0, 16)

const HOLDER_PATTERN = / pid:(\d+) scope:([0-9a-f]{16})$/

/** A fresh holder id for one `withLock` call of this process. */
export function newHolderId(): string {
  return `${randomUUID()} pid:${process.pid} scope:${SCOPE}`
}

/**
 * True when `holder` names a process of this machine and pid namespace that
 * no longer runs. False for a live process, a process of another scope, a
 * pid this process may not signal (EPERM: it exists), and any id without a
 * pid (written by an older version or by hand).
 */
export function isDeadHolder(holder: string): boolean {
  const match = HOLDER_PATTERN.exec(holder)
  if (!CAN_JUDGE || match === null || match[2] !== SCOPE) return false
  const pid = Number(match[1])
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
  // Killed but not yet reaped by its parent: a zombie holds nothing.
  return isZombie(pid)
}

function isZombie(pid: number): boolean {
  const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'))
  // Field 3, after the parenthesised command name (which may itself hold spaces or parentheses).
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z'
}

function readOr(read: () => string): string {
  try {
    return read()
  } catch {
    return ''
  }
}
