/**
 * The fake agent's session store: one JSON file per session under
 * `$HOME/.grok/sessions/`, so a later process can load a session the way
 * the real CLI resumes one from its home directory.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** One turn of a stored conversation. */
export interface StoredTurn {
  role: 'user' | 'agent'
  text: string
}

/** A stored session. */
export interface StoredSession {
  id: string
  cwd: string
  model: string
  history: StoredTurn[]
}

const dir = () => join(process.env.HOME || homedir(), '.grok', 'sessions')

/** Read a stored session, or `undefined` when there is none. */
export function readSession(id: string): StoredSession | undefined {
  const file = join(dir(), `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.json`)
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as StoredSession) : undefined
}

/** Write a session back. */
export function writeSession(session: StoredSession): void {
  mkdirSync(dir(), { recursive: true })
  writeFileSync(join(dir(), `${session.id.replace(/[^A-Za-z0-9_-]/g, '_')}.json`), `${JSON.stringify(session, null, 2)}\n`)
}
