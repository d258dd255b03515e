/**
 * The provider of finding M1: processes and `fs` both on the host, the
 * sandbox a host folder (the naive host provider's processes), and an
 * `fs.write` in the check-then-act shape a provider author writes first:
 * `realpath` of the parent must be inside the workspace, `lstat` refuses a
 * final symlink, then `writeFile(<target>.tmp-<n>)` and `rename` onto the
 * target, both by path string. Every failure is a sandbox error, so the only
 * rule it breaks is confinement: a folder swapped for a symlink between the
 * check and the `writeFile` puts the temp file outside. No pause is added:
 * the window is the provider's own, a few event-loop turns wide. Only `write`
 * is implemented; the other fs methods throw `UnsupportedCapabilityError`.
 */
import { lstat, realpath, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { SandboxError, SandboxOperationError, SandboxPathError, UnsupportedCapabilityError } from '../../src/contracts/index.js'
import type { SandboxFs, SandboxHandle, SandboxProvider } from '../../src/contracts/index.js'
import { toWorkspaceRelative } from '../../src/paths/workspace-path.js'
import { naiveHostProvider } from './naive-host-provider.js'

const NAME = 'check-then-act'

/** The naive host provider (processes on the host, a temp folder per sandbox) with the check-then-act `fs.write`. */
export function checkThenActProvider(tag: string): SandboxProvider {
  const base = naiveHostProvider(tag)
  const withFs = (handle: SandboxHandle): SandboxHandle => ({ ...handle, capabilities: { ...handle.capabilities, fs: true }, fs: checkThenActFs(handle.workspaceRoot) })
  return {
    ...base,
    name: NAME,
    capabilities: () => ({ ...base.capabilities(), fs: true }),
    create: async (input) => withFs(await base.create(input)),
    resume: async (input) => {
      const handle = await base.resume(input)
      return handle && withFs(handle)
    },
  }
}

function inside(real: string, root: string): boolean {
  return real === root || real.startsWith(`${root}/`)
}

function checkThenActFs(workspace: string): SandboxFs {
  let temps = 0
  const root = realpath(workspace)
  const write = async (path: string, data: string | Uint8Array): Promise<void> => {
    const absolute = join(workspace, toWorkspaceRelative(path, workspace))
    const parent = dirname(absolute)
    try {
      const real = await realpath(parent)
      if (!inside(real, await root)) throw new SandboxPathError('symlink-escape', path, `${path} leads outside the workspace (to ${real})`)
      if ((await lstat(absolute).catch(() => undefined))?.isSymbolicLink()) throw new SandboxPathError('symlink-escape', path, `${path} is a symlink`)
      const temp = `${absolute}.tmp-${++temps}`
      await writeFile(temp, data)
      await rename(temp, absolute)
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error
      const code = (error as { code?: unknown }).code
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new SandboxPathError('not-found', path, `${path}: a folder on the way is missing`, { cause: error })
      throw new SandboxOperationError('fs-failed', NAME, `fs.write(${path}) failed: ${String(error)}`, { cause: error })
    }
  }
  return new Proxy({ write } as unknown as SandboxFs, {
    get: (target, method) =>
      method === 'write'
        ? target.write
        : async () => {
            throw new UnsupportedCapabilityError({ provider: NAME, capability: 'fs', method: `fs.${String(method)}` })
          },
  })
}
