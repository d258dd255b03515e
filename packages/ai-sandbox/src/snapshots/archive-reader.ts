/**
 * The second half of a capture: the tar stream of the chosen entries, read
 * with tar-stream as it arrives. Each member must be the next chosen path,
 * of the kind the listing saw; a file's bytes go through `redact` and the
 * secret zeroing, are hashed, and a blob not seen yet is put. Invariant: at
 * most one file's bytes are held at a time.
 */
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Headers } from 'tar-stream'
import { SandboxConfigError } from '../contracts/errors.js'
import type { ChosenEntry } from './capture-selection.js'
import { SandboxSnapshotError } from './errors.js'
import type { SandboxSnapshotEntry, SandboxSnapshotFileEntry } from './manifest.js'
import type { ResolvedSnapshotPolicy } from './policy.js'
import { unreadableOutput, type SnapshotScratch, type TarStream } from './sandbox-io.js'
import type { SecretZeroer } from './secret-zeroing.js'

/** Counts of one capture. */
export interface CaptureStats {
  readonly files: number
  readonly directories: number
  readonly bytes: number
  readonly blobs: number
  readonly zeroedSecrets: number
}

/** What the archive reader needs besides the chosen entries. */
export interface ArchiveReaderOptions {
  readonly putBlob: (sha256: string, bytes: Uint8Array) => Promise<void>
  readonly policy: ResolvedSnapshotPolicy
  readonly zeroer: SecretZeroer
  readonly maxFileBytes: number
}

/**
 * Reads the tar stream of the chosen entries: checks each entry against the
 * next chosen path and its kind, cleans and hashes file bytes, puts each new
 * blob, and builds the manifest entries.
 */
export class ArchiveReader {
  readonly #entries: SandboxSnapshotEntry[] = []
  /** Files stored so far by path, for tar's hard-link entries. */
  readonly #files = new Map<string, SandboxSnapshotFileEntry>()
  readonly #put = new Set<string>()
  #next = 0
  #bytes = 0
  #zeroed = 0

  constructor(
    private readonly scratch: SnapshotScratch,
    private readonly chosen: readonly ChosenEntry[],
    private readonly options: ArchiveReaderOptions,
  ) {}

  /** Parse the archive; resolves once every entry was handled. */
  async read(tar: TarStream, bytes: AsyncIterable<Uint8Array>): Promise<void> {
    const extract = tar.extract()
    let own: unknown
    let handling: Promise<void> = Promise.resolve()
    extract.on('entry', (header: Headers, stream: NodeJS.ReadableStream, next: () => void) => {
      handling = this.#entry(header, stream).then(next, (error: unknown) => {
        own = error
        extract.destroy(error as Error)
      })
    })
    try {
      await pipeline(Readable.from(bytes), extract)
      await handling
    } catch (error) {
      if (SandboxSnapshotError.isInstance(error) || (error === own && !(error instanceof ArchiveFormatError))) throw error
      throw unreadableOutput(this.scratch, 'the workspace archive (tar)', error)
    }
    if (own !== undefined) throw own
    if (this.#next !== this.chosen.length) throw this.#changed(this.chosen[this.#next]!.path, 'is missing from the archive')
  }

  /** The manifest's entries, in path order. */
  finish(): SandboxSnapshotEntry[] {
    return this.#entries
  }

  stats(): CaptureStats {
    const files = this.#files.size
    return { files, directories: this.#entries.length - files, bytes: this.#bytes, blobs: this.#put.size, zeroedSecrets: this.#zeroed }
  }

  async #entry(header: Headers, stream: NodeJS.ReadableStream): Promise<void> {
    const path = archivePath(header.name)
    const expected = this.chosen[this.#next++]
    if (expected === undefined || expected.path !== path) {
      stream.resume()
      throw this.#changed(path, `appeared in the archive where ${expected ? JSON.stringify(expected.path) : 'nothing'} was expected`)
    }
    const mode = (header.mode ?? 0) & 0o777
    if (header.type === 'directory' && expected.type === 'directory') {
      stream.resume()
      this.#entries.push({ path, type: 'directory', mode })
      return
    }
    if (expected.type !== 'file') {
      stream.resume()
      throw this.#changed(path, `was a directory when listed and is a ${header.type ?? 'different kind of entry'} now`)
    }
    if (header.type === 'link') {
      stream.resume()
      const target = this.#files.get(archivePath(header.linkname ?? ''))
      if (!target) throw this.#changed(path, `is a hard link to ${JSON.stringify(header.linkname)}, which is not stored`)
      this.#store({ ...target, path, mode })
      return
    }
    if (header.type !== 'file' && header.type !== 'contiguous-file') {
      stream.resume()
      throw this.#changed(path, `was a regular file when listed and is a ${header.type ?? 'different kind of entry'} now`)
    }
    if ((mode & 0o111) !== 0) {
      stream.resume()
      throw new SandboxSnapshotError('executable', `${this.scratch.operation}: ${JSON.stringify(path)} became executable while it was read; blobs already put are unreferenced. Capture again once nothing writes to the workspace.`, { path })
    }
    const size = header.size ?? 0
    if (size > this.options.maxFileBytes) {
      stream.resume()
      throw new SandboxSnapshotError('file-too-large', `${this.scratch.operation}: ${JSON.stringify(path)} grew past maxFileBytes (${this.options.maxFileBytes}) while it was read.`, { path })
    }
    let bytes = await readAll(stream, size)
    if (this.options.policy.redact) {
      const redacted: unknown = await this.options.policy.redact({ path, bytes, secrets: this.options.zeroer.values })
      if (!(redacted instanceof Uint8Array)) throw new SandboxConfigError('captureSandboxWorkspace.policy.redact', `Invalid option captureSandboxWorkspace.policy.redact: it returned ${typeof redacted} for ${JSON.stringify(path)}; return the file's bytes as a Uint8Array.`)
      // A copy, so zeroing never writes into a buffer redact handed back from elsewhere.
      if (redacted !== bytes) bytes = Buffer.from(redacted)
    }
    this.#zeroed += this.options.zeroer.zero(bytes)
    const sha256 = createHash('sha256').update(bytes).digest('hex')
    if (!this.#put.has(sha256)) {
      this.#put.add(sha256)
      await this.options.putBlob(sha256, bytes)
    }
    this.#store({ path, type: 'file', mode, size: bytes.length, sha256 })
  }

  #store(entry: SandboxSnapshotFileEntry): void {
    this.#entries.push(entry)
    this.#files.set(entry.path, entry)
    this.#bytes += entry.size
  }

  #changed(path: string, what: string): SandboxSnapshotError {
    return new SandboxSnapshotError('changed', `${this.scratch.operation}: ${JSON.stringify(this.scratch.scrub(path))} ${what}: the workspace changed while it was read; blobs already put are unreferenced. Capture again once nothing writes to the workspace.`, { path })
  }
}

/** A tar member name as a workspace path: without the leading `./` and a directory's trailing `/`. */
function archivePath(name: string): string {
  return name.replace(/^(\.\/)+/, '').replace(/\/+$/, '')
}

/** An archive entry whose content does not match its header: the archive is damaged. */
class ArchiveFormatError extends Error {}

/** Read an entry's content whole, into one buffer of the size its header gave. */
async function readAll(stream: NodeJS.ReadableStream, size: number): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(size)
  let at = 0
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (at + chunk.length > size) throw new ArchiveFormatError('a tar entry is longer than its header says')
    chunk.copy(bytes, at)
    at += chunk.length
  }
  if (at !== size) throw new ArchiveFormatError('a tar entry is shorter than its header says')
  return bytes
}
