/**
 * The wire types of the control server, taken from `@cloudflare/sandbox`
 * (types only: nothing of the SDK runs in the container). Exported names are
 * used as they are; the result types the SDK does not export are derived from
 * its client classes, as docs/design/cloudflare.md section 7 shows. Error
 * bodies are `SdkErrorBody` (what the DO parses), never the legacy `ErrorResponse`.
 */
import type { FileClient, ProcessInfoResult, SessionTerminatedError } from '@cloudflare/sandbox'

export type {
  CommandExecuteResponse,
  CreateSessionRequest,
  CreateSessionResponse,
  DeleteSessionRequest,
  DeleteSessionResponse,
  ExecEvent,
  ExecuteRequest,
  LogEvent,
  MkdirRequest,
  PingResponse,
  ProcessCleanupResult,
  ProcessInfoResult,
  ProcessKillResult,
  ProcessListResult,
  ProcessLogsResult,
  ProcessStartResult,
  ProcessStatus,
  ReadFileRequest,
  StartProcessRequest,
  WriteFileRequest,
} from '@cloudflare/sandbox'

export type MkdirResult = Awaited<ReturnType<FileClient['mkdir']>>
export type WriteFileResult = Awaited<ReturnType<FileClient['writeFile']>>
/** The non-`'none'` overload: text or base64 content. */
export type ReadFileResult = Awaited<ReturnType<FileClient['readFile']>> & { content: string }
export type DeleteFileResult = Awaited<ReturnType<FileClient['deleteFile']>>
export type RenameFileResult = Awaited<ReturnType<FileClient['renameFile']>>
export type MoveFileResult = Awaited<ReturnType<FileClient['moveFile']>>
export type FileExistsResult = Awaited<ReturnType<FileClient['exists']>>
export type ListFilesResult = Awaited<ReturnType<FileClient['listFiles']>>
export type FileInfo = ListFilesResult['files'][number]
export type VersionResponse = { success: boolean; version: string; timestamp: string }

/** One process as the process routes describe it. */
export type ProcessDto = ProcessInfoResult['process']

/** What the DO parses from a non-2xx answer; `code` picks the SDK's error class. */
export type SdkErrorBody = Omit<SessionTerminatedError['errorResponse'], 'context'> & { context: Record<string, unknown> }
export type ErrorCode = SdkErrorBody['code']

/** `POST /api/rename` (no exported type). */
export interface RenameRequest {
  oldPath: string
  newPath: string
  sessionId?: string
}

/** `POST /api/move` (no exported type). */
export interface MoveRequest {
  sourcePath: string
  destinationPath: string
  sessionId?: string
}

/** `POST /api/list-files` (no exported type). */
export interface ListFilesRequest {
  path: string
  sessionId?: string
  options?: { recursive?: boolean; includeHidden?: boolean }
}
