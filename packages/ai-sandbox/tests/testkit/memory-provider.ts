/**
 * A tiny in-memory sandbox provider with the `fs` capability (and, on
 * request, `snapshots` and `fork`), for testing the provider conformance kit
 * itself. `bugs` switches on one
 * deliberate contract violation at a time, so a test can show that the
 * matching check fails and names the broken rule. Not a real provider: no
 * processes, no symlinks.
 */
import { posix } from 'node:path'
import {
  NO_CAPABILITIES,
  SandboxOperationError,
  SandboxPathError,
  UnsupportedCapabilityError,
  type SandboxCapabilities,
  type SandboxCapabilityName,
  type SandboxDirEntry,
  type SandboxFs,
  type SandboxHandle,
  type SandboxProvider,
} from '../../src/contracts/index.js'
import { toWorkspaceRelative } from '../../src/paths/workspace-path.js'

/** Deliberate violations, one flag per contract rule. */
export interface MemoryProviderBugs {
  /** `fs.read` of a missing file resolves `''` instead of throwing not-found. */
  readMissingAsEmpty?: boolean
  /** `..` and outside absolute paths are silently clamped into the workspace. */
  noConfinement?: boolean
  /** `fs.list` returns entries in insertion order. */
  unsortedList?: boolean
  /** `resume` still finds destroyed sandboxes. */
  resumeDestroyed?: boolean
  /** `snapshot()` exists although `snapshots` is false, and throws a bare Error. */
  bareErrorSnapshot?: boolean
  /** `snapshots` and `fork` are advertised (true) but the methods are missing. */
  flagsWithoutMethods?: boolean
}

/** Optional capabilities the fake can switch on. */
export interface MemoryProviderFeatures {
  snapshots?: boolean
  fork?: boolean
  /** With the flags false: define snapshot/fork/restoreSnapshot, each throwing UnsupportedCapabilityError (as local-process does). */
  throwingOptionalMethods?: boolean
}

const ROOT = '/memory/workspace'

/** The files of one sandbox; copied for snapshots and forks. */
interface Tree {
  files: Map<string, Uint8Array>
  dirs: Set<string>
}

const copyTree = (tree: Tree): Tree => ({ files: new Map([...tree.files].map(([k, v]) => [k, v.slice()])), dirs: new Set(tree.dirs) })

/** Build the fake provider, optionally with `bugs` and extra `features`. */
export function memoryProvider(bugs: MemoryProviderBugs = {}, features: MemoryProviderFeatures = {}): SandboxProvider {
  const live = new Map<string, SandboxHandle>()
  const destroyed = new Map<string, SandboxHandle>()
  const snapshots = new Map<string, Tree>()
  const advertise = bugs.flagsWithoutMethods === true
  const capabilities: SandboxCapabilities = { ...NO_CAPABILITIES, fs: true, snapshots: advertise || !!features.snapshots, fork: advertise || !!features.fork }
  let next = 0
  const start = (tree: Tree): SandboxHandle => {
    const id = `mem-${++next}`
    const handle = makeHandle(id, tree, bugs, async () => {
      const h = live.get(id)
      live.delete(id)
      if (h) destroyed.set(id, h)
    }, capabilities)
    if (features.snapshots) {
      handle.snapshot = async (label) => {
        const snapshotId = `snap-${++next}`
        snapshots.set(snapshotId, copyTree(tree))
        return { snapshotId, createdAt: Date.now(), label }
      }
    }
    if (features.fork) handle.fork = async () => start(copyTree(tree))
    if (features.throwingOptionalMethods) {
      handle.snapshot = unsupported('snapshots', 'snapshot')
      handle.fork = unsupported('fork', 'fork')
    }
    live.set(id, handle)
    return handle
  }
  const provider: SandboxProvider = {
    name: 'memory',
    capabilities: () => capabilities,
    create: async () => start({ files: new Map(), dirs: new Set(['']) }),
    async resume({ id }) {
      return live.get(id) ?? (bugs.resumeDestroyed ? (destroyed.get(id) ?? null) : null)
    },
    async destroy({ id }) {
      await live.get(id)?.destroy()
    },
  }
  if (features.snapshots) {
    provider.restoreSnapshot = async ({ snapshotId }) => {
      const tree = snapshots.get(snapshotId)
      if (!tree) throw new SandboxOperationError('not-found', 'memory', `No snapshot ${snapshotId}`)
      return start(copyTree(tree))
    }
  }
  if (features.throwingOptionalMethods) provider.restoreSnapshot = unsupported('snapshots', 'restoreSnapshot')
  return provider
}

function unsupported(capability: SandboxCapabilityName, method: string): () => Promise<never> {
  return async () => {
    throw new UnsupportedCapabilityError({ provider: 'memory', capability, method })
  }
}

function makeHandle(id: string, tree: Tree, bugs: MemoryProviderBugs, destroy: () => Promise<void>, capabilities: SandboxCapabilities): SandboxHandle {
  const handle: SandboxHandle = {
    id,
    provider: 'memory',
    capabilities,
    workspaceRoot: ROOT,
    fs: memoryFs(tree, bugs),
    git: {
      clone: unsupported('exec', 'git.clone'),
      status: unsupported('exec', 'git.status'),
      add: unsupported('exec', 'git.add'),
      commit: unsupported('exec', 'git.commit'),
      push: unsupported('exec', 'git.push'),
      pull: unsupported('exec', 'git.pull'),
      branch: unsupported('exec', 'git.branch'),
    },
    process: { exec: unsupported('exec', 'process.exec'), spawn: unsupported('backgroundProcesses', 'process.spawn') },
    ports: { connect: unsupported('ports', 'ports.connect') },
    env: { set: unsupported('env', 'env.set') },
    destroy,
  }
  if (bugs.bareErrorSnapshot) {
    handle.snapshot = async () => {
      throw new Error('not implemented')
    }
  }
  return handle
}

function memoryFs({ files, dirs }: Tree, bugs: MemoryProviderBugs): SandboxFs {
  const rel = (path: string) => {
    if (bugs.noConfinement) return posix.normalize(`/${path.replace(/^\/workspace\/?/, '')}`).replace(/^\/+/, '')
    return toWorkspaceRelative(path, ROOT)
  }
  const mkdirs = (dir: string) => {
    for (let d = dir; d !== '' && d !== '.'; d = posix.dirname(d)) dirs.add(d)
  }
  const isUnder = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`)
  const fileOf = (path: string) => {
    const data = files.get(rel(path))
    if (!data && bugs.readMissingAsEmpty) return new Uint8Array()
    if (!data) throw new SandboxPathError('not-found', path, `No such file: ${path}`)
    return data
  }
  const move = (map: Map<string, Uint8Array> | Set<string>, from: string, to: string) => {
    for (const key of [...map.keys()]) {
      if (!isUnder(key, from)) continue
      const value = map instanceof Map ? map.get(key)! : undefined
      map.delete(key)
      const target = to + key.slice(from.length)
      if (map instanceof Map) map.set(target, value!)
      else map.add(target)
    }
  }
  return {
    read: async (path) => new TextDecoder().decode(fileOf(path)),
    readBytes: async (path) => new Uint8Array(fileOf(path)),
    async write(path, data) {
      const r = rel(path)
      mkdirs(posix.dirname(r))
      files.set(r, typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data))
    },
    async list(path = '') {
      const dir = rel(path || '.')
      const names = new Map<string, SandboxDirEntry['type']>()
      for (const f of files.keys()) if (posix.dirname(f) === (dir || '.')) names.set(posix.basename(f), 'file')
      for (const d of dirs) if (d !== '' && posix.dirname(d) === (dir || '.')) names.set(posix.basename(d), 'directory')
      const entries = [...names].map(([name, type]) => ({ name, type, path: dir ? `${dir}/${name}` : name }))
      return bugs.unsortedList ? entries : entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    },
    mkdir: async (path) => mkdirs(rel(path)),
    async remove(path) {
      const r = rel(path)
      for (const f of [...files.keys()]) if (isUnder(f, r)) files.delete(f)
      for (const d of [...dirs]) if (d !== '' && isUnder(d, r)) dirs.delete(d)
    },
    async rename(from, to) {
      const [f, t] = [rel(from), rel(to)]
      mkdirs(posix.dirname(t))
      move(files, f, t)
      move(dirs, f, t)
    },
    exists: async (path) => files.has(rel(path)) || dirs.has(rel(path)),
    async lstat(path) {
      const r = rel(path)
      if (dirs.has(r)) return { type: 'directory', size: 0, mode: 0o755, mtimeMs: Date.now() }
      return { type: 'file', size: fileOf(path).length, mode: 0o644, mtimeMs: Date.now() }
    },
  }
}
