/**
 * The file routes: write and read (text, or base64 byte-exact), mkdir,
 * delete, rename, move, exists and list-files, with Node's `fs` as the server
 * runs as root. Relative paths resolve against the workspace (upstream uses
 * the session's shell cwd; the SDK's own calls send absolute paths). Errors
 * carry the SDK's codes, so `FileNotFoundError: …` reaches the Worker.
 */
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { basename, join, relative, resolve } from 'node:path'
import { StandinError, now, required } from './http.js'
import { WORKSPACE } from './sessions.js'
import type {
  DeleteFileResult,
  FileExistsResult,
  FileInfo,
  ListFilesRequest,
  ListFilesResult,
  MkdirRequest,
  MkdirResult,
  MoveFileResult,
  MoveRequest,
  ReadFileRequest,
  ReadFileResult,
  RenameFileResult,
  RenameRequest,
  WriteFileRequest,
  WriteFileResult,
} from './wire.js'

/** Encoded reads refuse files above this (upstream's limit). */
const MAX_READ_BYTES = 32 * 1024 * 1024

const absolute = (path: string): string => resolve(WORKSPACE, path)

/** A Node fs error as the SDK's error code. */
function fsError(error: unknown, path: string): StandinError {
  const code = (error as NodeJS.ErrnoException).code
  const map: Record<string, [StandinError['code'], number, string]> = {
    ENOENT: ['FILE_NOT_FOUND', 404, `File not found: ${path}`],
    EEXIST: ['FILE_EXISTS', 409, `File already exists: ${path}`],
    EACCES: ['PERMISSION_DENIED', 403, `Permission denied: ${path}`],
    EPERM: ['PERMISSION_DENIED', 403, `Permission denied: ${path}`],
    EISDIR: ['IS_DIRECTORY', 400, `Path is a directory: ${path}`],
    ENOTDIR: ['NOT_DIRECTORY', 400, `Not a directory: ${path}`],
    ENOTEMPTY: ['FILESYSTEM_ERROR', 500, `Directory not empty: ${path}`],
    ENOSPC: ['NO_SPACE', 507, `No space left on device: ${path}`],
  }
  const [sdkCode, status, message] = map[code ?? ''] ?? ['FILESYSTEM_ERROR', 500, `${(error as Error).message}`]
  return new StandinError(sdkCode, message, status, { path, errno: code })
}

async function guarded<T>(path: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw error instanceof StandinError ? error : fsError(error, path)
  }
}

/** `POST /api/write`: `encoding: 'base64'` means `content` is base64 of the bytes. */
export async function writeRoute(body: WriteFileRequest): Promise<WriteFileResult> {
  const path = required(body as never, 'path')
  if (typeof body.content !== 'string') throw new StandinError('VALIDATION_FAILED', 'content is required', 400, { field: 'content' })
  const base64 = body.encoding === 'base64'
  if (base64 && !/^[A-Za-z0-9+/=]*$/.test(body.content)) throw new StandinError('VALIDATION_FAILED', 'content is not valid base64', 400, { path })
  await guarded(path, () => writeFile(absolute(path), base64 ? Buffer.from(body.content, 'base64') : body.content))
  return { success: true, path, timestamp: now(), exitCode: 0 }
}

/** Whether bytes look like text (valid UTF-8 without NUL). */
function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

/** `POST /api/read`: base64 when asked or when the bytes are not text, UTF-8 otherwise. */
export async function readRoute(body: ReadFileRequest): Promise<ReadFileResult> {
  const path = required(body as never, 'path')
  return guarded(path, async () => {
    const info = await stat(absolute(path))
    if (info.isDirectory()) throw new StandinError('IS_DIRECTORY', `Path is a directory: ${path}`, 400, { path })
    if (info.size > MAX_READ_BYTES) throw new StandinError('FILE_TOO_LARGE', `File too large: ${path} (${info.size} bytes, limit ${MAX_READ_BYTES})`, 413, { path, size: info.size })
    const bytes = await readFile(absolute(path))
    const text = isText(bytes)
    const base64 = body.encoding === 'base64' || (body.encoding === undefined && !text)
    return {
      success: true,
      path,
      content: base64 ? bytes.toString('base64') : bytes.toString('utf8'),
      encoding: base64 ? 'base64' : 'utf-8',
      isBinary: !text,
      mimeType: text ? 'text/plain' : 'application/octet-stream',
      size: bytes.length,
      timestamp: now(),
      exitCode: 0,
    }
  })
}

/** `POST /api/mkdir`. */
export async function mkdirRoute(body: MkdirRequest): Promise<MkdirResult> {
  const path = required(body as never, 'path')
  const recursive = body.recursive === true
  await guarded(path, () => mkdir(absolute(path), { recursive }))
  return { success: true, path, recursive, timestamp: now(), exitCode: 0 }
}

/** `POST /api/delete`: a file (a directory is refused, as upstream does). */
export async function deleteRoute(body: { path?: string }): Promise<DeleteFileResult> {
  const path = required(body, 'path')
  await guarded(path, async () => {
    if ((await lstat(absolute(path))).isDirectory()) throw new StandinError('IS_DIRECTORY', `Cannot delete directory with deleteFile(): ${path}`, 400, { path })
    await rm(absolute(path))
  })
  return { success: true, path, timestamp: now(), exitCode: 0 }
}

/** `POST /api/rename`: `{ oldPath, newPath }`. */
export async function renameRoute(body: RenameRequest): Promise<RenameFileResult> {
  const oldPath = required(body as never, 'oldPath')
  const newPath = required(body as never, 'newPath')
  await guarded(oldPath, () => rename(absolute(oldPath), absolute(newPath)))
  return { success: true, path: oldPath, newPath, timestamp: now(), exitCode: 0 }
}

/** `POST /api/move`: `{ sourcePath, destinationPath }`. */
export async function moveRoute(body: MoveRequest): Promise<MoveFileResult> {
  const sourcePath = required(body as never, 'sourcePath')
  const destinationPath = required(body as never, 'destinationPath')
  await guarded(sourcePath, () => rename(absolute(sourcePath), absolute(destinationPath)))
  return { success: true, path: sourcePath, newPath: destinationPath, timestamp: now(), exitCode: 0 }
}

/** `POST /api/exists`. */
export async function existsRoute(body: { path?: string }): Promise<FileExistsResult> {
  const path = required(body, 'path')
  const exists = await lstat(absolute(path)).then(
    () => true,
    () => false,
  )
  return { success: true, path, exists, timestamp: now() }
}

/** `rwxr-xr-x` from a mode. */
function modeString(mode: number): string {
  return [0o400, 0o200, 0o100, 0o40, 0o20, 0o10, 4, 2, 1].map((bit, i) => (mode & bit ? 'rwx'[i % 3] : '-')).join('')
}

/** `POST /api/list-files`: entries of a directory (recursive and hidden ones on request), sorted by path. */
export async function listFilesRoute(body: ListFilesRequest): Promise<ListFilesResult> {
  const path = required(body as never, 'path')
  const root = absolute(path)
  const { recursive = false, includeHidden = false } = body.options ?? {}
  const files: FileInfo[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      if (!includeHidden && name.startsWith('.')) continue
      const full = join(dir, name)
      const info = await lstat(full)
      const type = info.isSymbolicLink() ? 'symlink' : info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other'
      const mode = info.mode & 0o777
      files.push({
        name: basename(full),
        absolutePath: full,
        relativePath: relative(root, full),
        type,
        size: info.size,
        modifiedAt: info.mtime.toISOString(),
        mode: modeString(mode),
        permissions: { readable: (mode & 0o400) !== 0, writable: (mode & 0o200) !== 0, executable: (mode & 0o100) !== 0 },
      })
      if (recursive && type === 'directory') await walk(full)
    }
  }
  await guarded(path, async () => {
    if (!(await stat(root)).isDirectory()) throw new StandinError('NOT_DIRECTORY', `Not a directory: ${path}`, 400, { path })
    await walk(root)
  })
  return { success: true, path, files, count: files.length, timestamp: now(), exitCode: 0 }
}
