/**
 * The filesystem contract of a sandbox handle. Invariant: anything resolving
 * outside the workspace is refused (`SandboxPathError` `escape` /
 * `symlink-escape`), also while a directory is swapped for a symlink; only
 * regular files are read or written; reads are bounded by `maxReadBytes`.
 * The conformance kit checks each rule (`fs-races.ts`).
 * Design notes: docs/design/contracts.md
 */

/** One directory entry returned by {@link SandboxFs.list}. */
export interface SandboxDirEntry {
  /** File name without directory. */
  readonly name: string
  /** Workspace-relative path with `/` separators. */
  readonly path: string
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
}

/** Metadata from {@link SandboxFs.lstat} (a symlink is described, not followed). */
export interface SandboxFileStat {
  readonly type: 'file' | 'directory' | 'symlink' | 'other'
  /** Size in bytes. */
  readonly size: number
  /** POSIX permission bits, e.g. `0o644`. */
  readonly mode: number
  /** Last modification, epoch ms. */
  readonly mtimeMs: number
}

/** One change seen by {@link SandboxFs.watch}. */
export interface SandboxWatchEvent {
  readonly type: 'create' | 'change' | 'delete'
  /** Workspace-relative path with `/` separators. */
  readonly path: string
  /** Epoch ms when the change was observed. */
  readonly timestamp: number
}

/** A running watch; `close()` stops it and resolves once no more events fire. */
export interface SandboxWatcher {
  close: () => Promise<void>
}

/** The workspace filesystem of a sandbox. */
export interface SandboxFs {
  /**
   * Read a file as UTF-8 text. Throws `SandboxPathError` (`not-found`) when
   * missing, (`special-file`) for a FIFO or device, (`hard-link`) for a file
   * with other hard links; `SandboxLimitError` (`file-too-large`) above the
   * provider's `maxReadBytes` (64 MiB by default on the bundled providers).
   */
  read: (path: string) => Promise<string>
  /** Read a file's exact bytes; the same refusals and size bound as {@link SandboxFs.read}. */
  readBytes: (path: string) => Promise<Uint8Array>
  /**
   * Write text (UTF-8) or bytes, creating parent directories. Replaces an
   * existing regular file (a hard-linked one by a new file renamed over the
   * name, so its other links are untouched); refuses a FIFO or device (`special-file`).
   */
  write: (path: string, data: string | Uint8Array) => Promise<void>
  /** List a directory's direct entries, sorted by name. */
  list: (path?: string) => Promise<SandboxDirEntry[]>
  /** Create a directory and its parents; no error when it exists. */
  mkdir: (path: string) => Promise<void>
  /** Remove a file or a directory tree; no error when it is missing. */
  remove: (path: string) => Promise<void>
  /** Move or rename, replacing the destination file if present. */
  rename: (from: string, to: string) => Promise<void>
  /** True when the path exists (a dangling symlink counts as existing). */
  exists: (path: string) => Promise<boolean>
  /** Describe a path without following a final symlink. Optional. */
  lstat?: (path: string) => Promise<SandboxFileStat>
  /** Watch the workspace recursively. Optional (capability `watch` in errors). */
  watch?: (onEvent: (event: SandboxWatchEvent) => void, options?: { ignore?: readonly string[] }) => Promise<SandboxWatcher>
}
