/**
 * Guards for the optional members of the contracts: call them through these
 * helpers and an unsupported method becomes an `UnsupportedCapabilityError`
 * instead of a `TypeError`. A present method is always called, so a
 * provider's own `UnsupportedCapabilityError` (with its hint) reaches the
 * caller; a missing one is reported against the capability flag as it is.
 */
import { UnsupportedCapabilityError } from './errors.js'
import type { SandboxHandle, SandboxSnapshotRef } from './handle.js'
import type { SandboxProvider, SandboxRestoreInput } from './provider.js'
import type { SandboxFileStat } from './fs.js'

/**
 * Take a snapshot, or throw {@link UnsupportedCapabilityError} (`snapshots`).
 * @param label - Optional human label stored with the snapshot.
 */
export async function snapshotSandbox(handle: SandboxHandle, label?: string): Promise<SandboxSnapshotRef> {
  if (!handle.snapshot) throw new UnsupportedCapabilityError({ provider: handle.provider, capability: 'snapshots', method: 'snapshot', advertised: handle.capabilities.snapshots })
  return handle.snapshot(label)
}

/** Fork a sandbox, or throw {@link UnsupportedCapabilityError} (`fork`). */
export async function forkSandbox(handle: SandboxHandle): Promise<SandboxHandle> {
  if (!handle.fork) throw new UnsupportedCapabilityError({ provider: handle.provider, capability: 'fork', method: 'fork', advertised: handle.capabilities.fork })
  return handle.fork()
}

/** Restore a snapshot, or throw {@link UnsupportedCapabilityError} (`snapshots`). */
export async function restoreSandboxSnapshot(provider: SandboxProvider, input: SandboxRestoreInput): Promise<SandboxHandle> {
  if (!provider.restoreSnapshot) throw new UnsupportedCapabilityError({ provider: provider.name, capability: 'snapshots', method: 'restoreSnapshot', advertised: provider.capabilities().snapshots })
  return provider.restoreSnapshot(input)
}

/** `lstat` a path, or throw {@link UnsupportedCapabilityError} (`fs`). */
export async function lstatSandboxPath(handle: SandboxHandle, path: string): Promise<SandboxFileStat> {
  if (!handle.fs.lstat) throw new UnsupportedCapabilityError({ provider: handle.provider, capability: 'fs', method: 'fs.lstat' })
  return handle.fs.lstat(path)
}
