/**
 * The deterministic workspace tree of the `snapshots` table: `files` files
 * in nested folders (depth 0 to 3, fan-out 8), about `bytes` bytes in all,
 * with a size mix of many small files and a few large ones (half of the
 * bytes in about one file of 500, each at most 4 MiB), plus a few empty
 * folders. Same arguments, same paths, sizes and bytes. Every file's content
 * is unique (it starts with its path), so no two share a blob. Owns no
 * sandbox: `writeSnapshotTree` writes into a host folder.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

/** One planned file: its path (relative, `/`-separated) and size in bytes. */
export interface PlannedFile {
  readonly path: string
  readonly size: number
}

/** The planned tree: files, the empty folders, and the byte total. */
export interface SnapshotTreePlan {
  readonly files: readonly PlannedFile[]
  readonly emptyDirectories: readonly string[]
  readonly bytes: number
}

/** Largest "large" file (4 MiB). */
const MAX_LARGE_BYTES = 4 * 1024 * 1024
/** Files per large file. */
const FILES_PER_LARGE = 500
/** Share of the bytes in the large files. */
const LARGE_SHARE = 0.5

/** mulberry32: a small seeded PRNG giving floats in [0, 1). */
function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The folder of file `index`: depth `index % 4`, fan-out 8 at each level. */
function folderOf(index: number): string {
  const depth = index % 4
  const parts: string[] = []
  let rest = Math.floor(index / 4)
  for (let level = 0; level < depth; level++) {
    parts.push(`${['src', 'lib', 'docs', 'test', 'assets', 'pkg', 'tools', 'data'][rest % 8]}${level}`)
    rest = Math.floor(rest / 8)
  }
  return parts.join('/')
}

/**
 * Plan a tree of `files` files and about `bytes` bytes (sizes are whole bytes
 * and a file holds at least its path, so the total is off by a little).
 *
 * @example
 * ```ts
 * planSnapshotTree(2000, 20 * 1024 * 1024).files.length // => 2000
 * ```
 */
export function planSnapshotTree(files: number, bytes: number, seed = 1): SnapshotTreePlan {
  const random = prng(seed)
  const large = Math.min(files, Math.max(1, Math.round(files / FILES_PER_LARGE)))
  const largeSize = Math.min(MAX_LARGE_BYTES, Math.floor((bytes * LARGE_SHARE) / large))
  const smallBudget = bytes - largeSize * large
  const small = files - large
  // Skewed weights (cube of a uniform): most small files are tiny, a few reach tens of KiB.
  const weights = Array.from({ length: small }, () => random() ** 3 + 0.002)
  const weightSum = weights.reduce((sum, weight) => sum + weight, 0)
  const planned: PlannedFile[] = []
  let smallIndex = 0
  // Large files spread evenly through the indexes, so they land in every depth.
  const largeEvery = Math.max(1, Math.floor(files / large))
  for (let index = 0; index < files; index++) {
    const isLarge = index % largeEvery === largeEvery - 1 && planned.length - smallIndex < large
    const folder = folderOf(index)
    const name = `${isLarge ? 'blob' : 'file'}-${index}.${isLarge ? 'bin' : 'txt'}`
    const path = folder === '' ? name : `${folder}/${name}`
    // At least the path and its newline, so every content is unique.
    const size = isLarge ? largeSize : Math.max(path.length + 1, Math.floor((weights[smallIndex++]! / weightSum) * smallBudget))
    planned.push({ path, size })
  }
  const emptyDirectories = ['empty', 'src0/empty', 'build/cache/empty']
  return { files: planned, emptyDirectories, bytes: planned.reduce((sum, file) => sum + file.size, 0) }
}

/** 4 MiB of seeded pseudo-random bytes that file contents are cut from. */
function noiseBlock(seed: number): Buffer {
  const random = prng(seed ^ 0x5eed)
  const block = Buffer.alloc(MAX_LARGE_BYTES + 64 * 1024)
  for (let at = 0; at + 4 <= block.length; at += 4) block.writeUInt32LE(Math.floor(random() * 4294967296), at)
  return block
}

/**
 * Write `plan` into the host folder `root` (made if missing): each file is
 * its path and a newline, then noise from an offset that depends on its index,
 * cut to its size. Mode 0644 files, 0755 folders.
 */
export async function writeSnapshotTree(root: string, plan: SnapshotTreePlan, seed = 1): Promise<void> {
  const noise = noiseBlock(seed)
  await mkdir(root, { recursive: true })
  for (const dir of new Set([...plan.files.map((file) => dirname(file.path)), ...plan.emptyDirectories])) await mkdir(join(root, dir), { recursive: true, mode: 0o755 })
  const write = async (file: PlannedFile, index: number) => {
    const head = Buffer.from(`${file.path}\n`)
    const offset = (index * 7919) % (noise.length - MAX_LARGE_BYTES)
    const bytes = Buffer.concat([head, noise.subarray(offset, offset + Math.max(0, file.size - head.length))]).subarray(0, file.size)
    await writeFile(join(root, file.path), bytes, { mode: 0o644 })
  }
  const batch = 64
  for (let start = 0; start < plan.files.length; start += batch) await Promise.all(plan.files.slice(start, start + batch).map((file, offset) => write(file, start + offset)))
}
