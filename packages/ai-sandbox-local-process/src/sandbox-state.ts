/**
 * The on-disk layout of one sandbox and its in-memory state. A sandbox is
 * `<root>/<id>/` holding `workspace/` (what the agent sees) and `sandbox.json`
 * (id, creation time, key, labels, env), so env set through `handle.env.set`
 * survives into `provider.resume()` from another provider instance.
 * Invariant: an id never contains a path separator or `..`, so `<root>/<id>`
 * always stays a direct child of the root.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { destroyedError, errnoCode, fsError, parseConfig } from './errors.js'
import type { ProcessGroup } from './process-group.js'

/** Default exec output limit (stdout plus stderr), in bytes: 64 MiB, the same as the Docker provider's. */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = 64 * 1024 * 1024

/** Default bound of one `fs.read`/`fs.readBytes`, in bytes: 64 MiB, the same as the Docker provider's. */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024

/** File name of the metadata next to the workspace. */
export const METADATA_FILE = 'sandbox.json'

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/

const metadataSchema = z.object({
  id: z.string(),
  createdAt: z.number(),
  key: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  env: z.record(z.string(), z.string()),
})

/** What `sandbox.json` holds. */
export type SandboxMetadata = z.output<typeof metadataSchema>

/** Live state of one sandbox, shared by every handle this provider instance made for it. */
export interface SandboxState {
  readonly id: string
  /** `<root>/<id>`. */
  readonly dir: string
  /** `<root>/<id>/workspace`, symlinks resolved. */
  readonly workspaceRoot: string
  readonly killGraceMs: number
  /** Output (stdout plus stderr) above which `exec` kills the command and throws `SandboxLimitError`, in bytes. */
  readonly maxExecOutputBytes: number
  /** Largest file `fs.read`/`fs.readBytes` return, in bytes; larger ones throw `SandboxLimitError` `file-too-large`. */
  readonly maxReadBytes: number
  /** Process groups started by this provider instance that may still have live members. */
  readonly groups: Set<ProcessGroup>
  /** The sandbox environment; replaced (never mutated) by {@link setEnv}. */
  env: Readonly<Record<string, string>>
  metadata: SandboxMetadata
  /** Serialises `env.set` calls so concurrent ones never lose a variable. */
  envWrites: Promise<void>
  destroyed: boolean
  /** @throws SandboxOperationError `destroyed` once the sandbox is gone. */
  assertLive: (method: string) => void
}

/** A fresh random sandbox id (a UUID, which satisfies {@link assertValidId}). */
export function newSandboxId(): string {
  return randomUUID()
}

/**
 * Refuse ids that could address anything but a direct child of the root.
 * @throws SandboxConfigError `id` for an id with `/`, `..` or other characters.
 */
export function assertValidId(id: unknown, field: string): asserts id is string {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
    throw new SandboxConfigError(field, `Invalid option ${field}: ${JSON.stringify(id)} is not a local-process sandbox id. Ids are 1-128 letters, digits, "-" or "_" (no "/" or ".."), as returned in handle.id.`)
  }
}

/** Build the state object of a sandbox whose directory exists. */
export function makeState(input: { id: string; dir: string; workspaceRoot: string; killGraceMs: number; maxExecOutputBytes?: number; maxReadBytes?: number; metadata: SandboxMetadata }): SandboxState {
  const state: SandboxState = {
    id: input.id,
    dir: input.dir,
    workspaceRoot: input.workspaceRoot,
    killGraceMs: input.killGraceMs,
    maxExecOutputBytes: input.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
    maxReadBytes: input.maxReadBytes ?? DEFAULT_MAX_READ_BYTES,
    groups: new Set(),
    env: Object.freeze({ ...input.metadata.env }),
    metadata: input.metadata,
    envWrites: Promise.resolve(),
    destroyed: false,
    assertLive: (method) => {
      if (state.destroyed) throw destroyedError(state.id, method)
    },
  }
  return state
}

/** Create `<dir>/workspace` and write the first `sandbox.json`. */
export async function createSandboxDir(dir: string, metadata: SandboxMetadata): Promise<void> {
  try {
    // Owner-only: the default root lives in the shared temp directory.
    await mkdir(dir, { recursive: true, mode: 0o700 })
    await mkdir(join(dir, 'workspace'), { recursive: true })
  } catch (error) {
    throw fsError('mkdir', dir, error)
  }
  await writeMetadata(dir, metadata)
}

/** True when `<dir>/workspace` is an existing directory. */
export async function workspaceExists(dir: string): Promise<boolean> {
  try {
    return (await stat(join(dir, 'workspace'))).isDirectory()
  } catch (error) {
    if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return false
    throw fsError('stat', dir, error)
  }
}

/** Read `sandbox.json`; a missing one (a hand-made directory) yields empty metadata. */
export async function readMetadata(dir: string, id: string): Promise<SandboxMetadata> {
  let text: string
  try {
    text = await readFile(join(dir, METADATA_FILE), 'utf8')
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return { id, createdAt: Date.now(), env: {} }
    throw fsError('read', join(dir, METADATA_FILE), error)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new SandboxConfigError(METADATA_FILE, `${join(dir, METADATA_FILE)} is not valid JSON; fix or delete it.`, { cause: error })
  }
  return parseConfig(metadataSchema, json, METADATA_FILE)
}

/** Write `sandbox.json` atomically (temp file, then rename). */
export async function writeMetadata(dir: string, metadata: SandboxMetadata): Promise<void> {
  const target = join(dir, METADATA_FILE)
  const temp = `${target}.${process.pid}.${randomUUID()}.tmp`
  try {
    await writeFile(temp, `${JSON.stringify(metadata, null, 2)}\n`, { mode: 0o600 })
    await rename(temp, target)
  } catch (error) {
    throw fsError('write', target, error)
  }
}

/** Validation of `env.set` input (and of `create({ env })` and per-call env): names are portable shell identifiers. */
export const envSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'variable names must be letters, digits and "_", not starting with a digit (e.g. MY_VAR)'),
  z.string().refine((value) => !value.includes('\0'), 'values cannot contain NUL'),
)

/**
 * Merge `vars` into the sandbox env and persist it. Calls run one after
 * another, each on top of the previous one's result.
 * @throws SandboxConfigError `env.set.<NAME>` for a bad name or value.
 */
export async function setEnv(state: SandboxState, vars: Record<string, string>): Promise<void> {
  state.assertLive('env.set')
  parseConfig(envSchema, vars, 'env.set')
  const run = state.envWrites.then(async () => {
    const env = Object.freeze({ ...state.env, ...vars })
    const metadata = { ...state.metadata, env: { ...env } }
    await writeMetadata(state.dir, metadata)
    state.env = env
    state.metadata = metadata
  })
  // The queue continues after a failed write; this caller still gets the error.
  state.envWrites = run.catch(() => undefined)
  return run
}
