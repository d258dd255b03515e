/**
 * Merges the workspace definition's MCP servers into a repository's
 * `.codex/config.toml`, on parsed TOML (smol-toml), never on text. Pure.
 * A definition server replaces a same-name server as a whole table.
 * Invariant: the result parses as TOML, and integers and floats keep their kind.
 * Design notes: docs/design/harness-adapters.md
 */
import { parse, stringify, TomlError, type TomlTable } from 'smol-toml'

/**
 * The first line of the comment block that opens `.codex/config.toml` once
 * the projection has merged into it. The next line lists the servers that
 * came from the definition, so a later projection knows which tables are its
 * own. Comments of the repository's file are not kept in the merged file.
 */
export const CODEX_CONFIG_BLOCK = "# --- @tanstack/ai-codex: this repository's .codex/config.toml with the MCP servers of the workspace definition merged in (rewritten on each projection; edit the definition or the repository's file) ---"
/** The second line of the block: `# mcp_servers from the definition: ["a","b"]`. */
const OWNED_PREFIX = '# mcp_servers from the definition: '

/** One `[mcp_servers.<name>]` table as Codex reads it. */
export type CodexMcpTable = ({ url: string; http_headers?: Record<string, string> } | { command: string; args: string[]; env?: Record<string, string> }) & { default_tools_approval_mode?: 'approve' }

/** What {@link mergeCodexConfig} decided. */
export type CodexConfigMerge =
  /** Write `text`; `replaced` names repository servers a definition server replaced. */
  | { kind: 'write'; text: string; replaced: string[] }
  /** Leave the file as it is (or absent). */
  | { kind: 'keep' }
  /** The repository's file cannot be merged; `problem` says why, for the error message. */
  | { kind: 'invalid'; problem: string }

/**
 * Merge `servers` (the definition's tables by name, `{}` for none) into the
 * file's current text (`undefined`: no file).
 * @example
 * ```ts
 * mergeCodexConfig('model = "gpt-5.5"\n[mcp_servers.repo]\ncommand = "repo-mcp"\n', { issues: { url: 'https://mcp.example.com/mcp' } })
 * // { kind: 'write', text: '# --- @tanstack/ai-codex: …\n# mcp_servers from the definition: ["issues"]\nmodel = "gpt-5.5"\n\n[mcp_servers.repo]\n…\n[mcp_servers.issues]\n…', replaced: [] }
 * ```
 */
export function mergeCodexConfig(existing: string | undefined, servers: Readonly<Record<string, CodexMcpTable>>): CodexConfigMerge {
  const text = existing ?? ''
  const owned = ownedServers(text)
  const names = Object.keys(servers)
  // Nothing to declare and nothing of ours in the file: the repository's file is none of our business, valid or not.
  if (names.length === 0 && owned.length === 0) return { kind: 'keep' }
  let doc: TomlTable
  try {
    // Integers as BigInt, so that every `number` left is a float and is written back as one.
    doc = text.trim() === '' ? {} : parse(text, { integersAsBigInt: true })
  } catch (error) {
    const where = error instanceof TomlError ? ` (line ${error.line}, column ${error.column})` : ''
    return { kind: 'invalid', problem: `it is not valid TOML${where}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}` }
  }
  const present = doc.mcp_servers
  if (present !== undefined && !isTable(present)) return { kind: 'invalid', problem: '`mcp_servers` is not a table' }
  const theirs = Object.entries(present ?? {}).filter(([name]) => !owned.includes(name))
  const replaced = theirs.filter(([name]) => names.includes(name)).map(([name]) => name)
  const mcp = { ...Object.fromEntries(theirs.filter(([name]) => !names.includes(name))), ...servers }
  if (names.length === 0) {
    // Take back what an earlier projection merged in; what is left is the repository's own.
    if (Object.keys(mcp).length > 0) doc.mcp_servers = mcp
    else delete doc.mcp_servers
    const rest = stringify(doc, { numbersAsFloat: true })
    return { kind: 'write', text: rest.trim() === '' ? '' : rest, replaced }
  }
  // Spreading keeps the key order, so an existing `mcp_servers` stays where the repository had it.
  const merged: TomlTable = { ...doc, mcp_servers: mcp }
  const block = `${CODEX_CONFIG_BLOCK}\n${OWNED_PREFIX}${JSON.stringify(names)}\n`
  return { kind: 'write', text: `${block}${stringify(merged, { numbersAsFloat: true })}`, replaced }
}

/** The servers an earlier projection wrote, from the block at the top of the file (none when it is not there). */
function ownedServers(text: string): string[] {
  const [first, second] = text.split('\n', 2)
  if (first !== CODEX_CONFIG_BLOCK || !second?.startsWith(OWNED_PREFIX)) return []
  try {
    const names: unknown = JSON.parse(second.slice(OWNED_PREFIX.length))
    return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : []
  } catch {
    return [] // a damaged line only means treating every server as the repository's
  }
}

function isTable(value: unknown): value is TomlTable {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
}
