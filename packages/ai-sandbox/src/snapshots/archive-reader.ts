/**
 * The second half of a capture: the tar stream of the chosen entries, read
 * with modern-tar as it arrives. Each member must be the next chosen path,
 * of the kind the listing saw; a file's bytes go through `redact` and the
 * secret zeroing, are hashed, and a blob not seen yet is put. Invariant: at
 * most one file's bytes are held at a time.
 */
import { createHash } from 'node:crypto'
import { createTarDecoder, type TarHeader } from 'modern-tar'
import { SandboxConfigError } from '../contracts/errors.js'
import type { ChosenEntry } from './capture-selection.js'
import { SandboxSnapshotError } from './errors.js'
import type { SandboxSnapshotEntry, SandboxSnapshotFileEntry } from './manifest.js'
import type { ResolvedSnapshotPolicy } from './policy.js'
import { unreadableOutput, type SnapshotScratch } from './sandbox-io.js'
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

  /**
   * Parse the archive as it arrives (one, or several written one after the
   * other: xargs may run tar several times); resolves once every entry was
   * handled. Each archive gets a decoder of its own (a decoder stops at its
   * archive's end); memory holds one entry's body and the stream's buffers.
   */
  async read(bytes: AsyncIterable<Uint8Array>): Promise<void> {
    const splitter = new ArchiveSplitter()
    let open: { writer: WritableStreamDefaultWriter<Uint8Array>; consumed: Promise<void> } | undefined
    const close = async (): Promise<void> => {
      const current = open
      open = undefined
      if (!current) return
      await current.writer.close().catch(() => undefined)
      await current.consumed
    }
    const input = bytes[Symbol.asyncIterator]()
    try {
      for (;;) {
        const next = await input.next().catch((error: unknown) => {
          throw new ArchiveFormatError('the archive stream failed', { cause: error })
        })
        if (next.done) break
        for (const segment of splitter.push(next.value)) {
          if (!open) {
            const decoder = createTarDecoder()
            open = { writer: decoder.writable.getWriter(), consumed: this.#consume(decoder.readable) }
            open.consumed.catch(() => undefined)
          }
          await Promise.race([open.writer.write(segment.bytes), open.consumed])
          if (segment.ends) await close()
        }
      }
      splitter.end()
      await close()
    } catch (error) {
      await open?.writer.abort(error).catch(() => undefined)
      // Release the byte stream, so the process behind it is not left holding output nobody reads.
      await input.return?.().catch(() => undefined)
      // What the entry handler threw (a putBlob or redact failure, a changed tree) passes through as it is.
      if (error instanceof ArchiveFormatError) throw unreadableOutput(this.scratch, 'the workspace archive (tar)', error.cause ?? error)
      throw error
    }
    if (this.#next !== this.chosen.length) throw this.#changed(this.chosen[this.#next]!.path, 'is missing from the archive')
  }

  /** Handle every entry of one archive's decoder, in order. */
  async #consume(entries: ReadableStream<{ header: TarHeader; body: ReadableStream<Uint8Array> }>): Promise<void> {
    const reader = entries.getReader()
    try {
      for (;;) {
        const next = await reader.read().catch((error: unknown) => {
          throw new ArchiveFormatError('the tar decoder failed', { cause: error })
        })
        if (next.done) return
        await this.#entry(next.value.header, next.value.body)
      }
    } catch (error) {
      await reader.cancel(error).catch(() => undefined)
      throw error
    }
  }

  /** The manifest's entries, in path order. */
  finish(): SandboxSnapshotEntry[] {
    return this.#entries
  }

  stats(): CaptureStats {
    const files = this.#files.size
    return { files, directories: this.#entries.length - files, bytes: this.#bytes, blobs: this.#put.size, zeroedSecrets: this.#zeroed }
  }

  async #entry(header: TarHeader, stream: ReadableStream<Uint8Array>): Promise<void> {
    const path = archivePath(header.name)
    const expected = this.chosen[this.#next++]
    if (expected === undefined || expected.path !== path) {
      await stream.cancel()
      throw this.#changed(path, `appeared in the archive where ${expected ? JSON.stringify(expected.path) : 'nothing'} was expected`)
    }
    const mode = (header.mode ?? 0) & 0o777
    if (header.type === 'directory' && expected.type === 'directory') {
      await stream.cancel()
      this.#entries.push({ path, type: 'directory', mode })
      return
    }
    if (expected.type !== 'file') {
      await stream.cancel()
      throw this.#changed(path, `was a directory when listed and is a ${header.type ?? 'different kind of entry'} now`)
    }
    if (header.type === 'link') {
      await stream.cancel()
      const target = this.#files.get(archivePath(header.linkname ?? ''))
      if (!target) throw this.#changed(path, `is a hard link to ${JSON.stringify(header.linkname)}, which is not stored`)
      this.#store({ ...target, path, mode })
      return
    }
    if (header.type !== undefined && header.type !== 'file') {
      await stream.cancel()
      throw this.#changed(path, `was a regular file when listed and is a ${header.type ?? 'different kind of entry'} now`)
    }
    if ((mode & 0o111) !== 0) {
      await stream.cancel()
      throw new SandboxSnapshotError('executable', `${this.scratch.operation}: ${JSON.stringify(path)} became executable while it was read; blobs already put are unreferenced. Capture again once nothing writes to the workspace.`, { path })
    }
    const size = header.size ?? 0
    if (size > this.options.maxFileBytes) {
      await stream.cancel()
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
async function readAll(stream: ReadableStream<Uint8Array>, size: number): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(size)
  let at = 0
  const reader = stream.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (at + value.length > size) {
      await reader.cancel()
      throw new ArchiveFormatError('a tar entry is longer than its header says')
    }
    bytes.set(value, at)
    at += value.length
  }
  if (at !== size) throw new ArchiveFormatError('a tar entry is shorter than its header says')
  return bytes
}

/** tar's block: every header and the padding of every body is a multiple of it. */
const BLOCK = 512

/**
 * Cuts a stream of concatenated tar archives apart, as it arrives: a header
 * block gives its body's size (blocks passed over whole), two zero blocks end
 * an archive, and zero blocks between archives (tar pads its output to a
 * record size) are dropped. Holds less than one block between calls.
 */
class ArchiveSplitter {
  #pending: Uint8Array = new Uint8Array(0)
  /** Body blocks still to pass before the next header. */
  #skip = 0
  #zeros = 0
  #inArchive = false

  /** The whole blocks of `chunk` (after the partial block held back), cut where an archive ends. */
  push(chunk: Uint8Array): { bytes: Uint8Array; ends: boolean }[] {
    const data = this.#pending.length === 0 ? chunk : concat(this.#pending, chunk)
    const segments: { bytes: Uint8Array; ends: boolean }[] = []
    let start = 0
    let at = 0
    while (data.length - at >= BLOCK) {
      if (this.#skip > 0) {
        const blocks = Math.min(this.#skip, Math.floor((data.length - at) / BLOCK))
        at += blocks * BLOCK
        this.#skip -= blocks
        continue
      }
      const block = data.subarray(at, at + BLOCK)
      at += BLOCK
      if (!isZero(block)) {
        this.#inArchive = true
        this.#zeros = 0
        this.#skip = Math.ceil(headerSize(block) / BLOCK)
      } else if (!this.#inArchive) {
        start = at // padding between archives
      } else if (++this.#zeros === 2) {
        segments.push({ bytes: data.subarray(start, at), ends: true })
        start = at
        this.#zeros = 0
        this.#inArchive = false
      }
    }
    if (at > start) segments.push({ bytes: data.subarray(start, at), ends: false })
    this.#pending = data.slice(at)
    return segments
  }

  /** The stream ended: it must end on an archive's end. */
  end(): void {
    if (this.#pending.length > 0 || this.#inArchive) throw new ArchiveFormatError('the archive ends before its end-of-archive blocks')
  }
}

function isZero(block: Uint8Array): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false
  return true
}

/** The body size in a tar header block: 12 octal digits at offset 124, or base-256 when the high bit is set. */
function headerSize(block: Uint8Array): number {
  const field = block.subarray(124, 136)
  let size = 0
  if ((field[0]! & 0x80) !== 0) {
    for (let i = 1; i < field.length; i++) size = size * 256 + field[i]!
  } else {
    const text = new TextDecoder().decode(field).replace(/\0[\s\S]*$/, '').trim()
    size = text === '' ? 0 : Number.parseInt(text, 8)
  }
  if (!Number.isSafeInteger(size) || size < 0) throw new ArchiveFormatError('a tar header has no readable size')
  return size
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a, 0)
  joined.set(b, a.length)
  return joined
}
