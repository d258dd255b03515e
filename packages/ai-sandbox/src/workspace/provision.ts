/**
 * Bootstrap-time provisioning that every harness shares: git skills cloned,
 * file skills written, and `instructions` as `AGENTS.md` with `CLAUDE.md` and
 * `GEMINI.md` pointing at it. Harness-specific files (MCP configs, skill
 * folders) are written later, per run, by the projection.
 */
import { posix } from 'node:path'
import type { SandboxHandle } from '../contracts/handle.js'
import { gitAuthEnv, redactUrl } from '../git/exec-git.js'
import { shellJoin, shellQuote } from '../shell/quote.js'
import type { ResolvedWorkspace } from './define-workspace.js'
import { WorkspaceBootstrapError } from './errors.js'
import { redactSecrets } from '../secrets/secret-values.js'
import type { GitSkill } from './skills.js'

/** Where git skills go when they have no `into`, relative to the workspace root. */
export const SKILLS_DIR = '.tanstack-skills'

/** The instruction files `instructions` produce: the canonical file first. */
export const INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md'] as const

/** Workspace-relative paths bootstrap creates that belong out of git status. */
export function provisionedPaths(workspace: ResolvedWorkspace): string[] {
  return workspace.skills.some((s) => s.kind === 'git' && !s.into) ? [SKILLS_DIR] : []
}

/** Absolute path inside the sandbox where a git skill lives. */
export function gitSkillPath(skill: GitSkill, workspaceRoot: string): string {
  return skill.into ?? posix.join(workspaceRoot, SKILLS_DIR, skill.name)
}

/**
 * Clone git skills, write file skills and the instruction files.
 * @throws WorkspaceBootstrapError `source` naming the skill when a clone or write fails (secrets redacted), or naming the path when the source has a directory where an instruction file goes.
 */
export async function provisionWorkspace(handle: SandboxHandle, workspace: ResolvedWorkspace): Promise<void> {
  const redact = (text: string) => redactSecrets(text, Object.values(workspace.secrets))
  for (const skill of workspace.skills) {
    if (skill.kind === 'git') await cloneSkill(handle, skill, redact)
    else if (skill.kind === 'file') await writeOrExplain(() => handle.fs.write(skill.path, skill.content), `fileSkill "${skill.path}" could not be written into the workspace`, 'Check that the source has no directory at that path.', redact)
  }
  if (workspace.instructions === undefined) return
  await refuseInstructionDirectories(handle)
  await writeOrExplain(() => writeInstructions(handle, workspace.instructions!), `instructions could not be written as ${INSTRUCTION_FILES.join(', ')}`, 'Check what the source has at those paths.', redact)
}

/**
 * Instructions replace files named like the instruction files, never a
 * directory (that would be EISDIR, or a silently deleted tree for the links).
 * @throws WorkspaceBootstrapError `source` naming the first such directory.
 */
async function refuseInstructionDirectories(handle: SandboxHandle): Promise<void> {
  const found = await handle.process.exec(`for f in ${INSTRUCTION_FILES.join(' ')}; do if [ -d "$f" ]; then printf '%s\\n' "$f"; fi; done`)
  const dir = found.stdout.split('\n').find((line) => (INSTRUCTION_FILES as readonly string[]).includes(line))
  if (dir === undefined) return
  throw new WorkspaceBootstrapError(
    'source',
    `The workspace source has a directory at ${posix.join(handle.workspaceRoot, dir)}, where instructions write the file ${dir} (AGENTS.md holds the text; CLAUDE.md and GEMINI.md link to it). ` +
      `Remove or rename the ${dir} directory in the source, or drop defineWorkspace({ instructions }).`,
  )
}

/** Run a write; turn its failure into a `source` bootstrap error that says what was being written. */
async function writeOrExplain(write: () => Promise<void>, what: string, fix: string, redact: (text: string) => string): Promise<void> {
  try {
    await write()
  } catch (error) {
    const detail = redact(error instanceof Error ? error.message : String(error))
    throw new WorkspaceBootstrapError('source', `${what}: ${detail}\n${fix}`, { cause: error })
  }
}

async function cloneSkill(handle: SandboxHandle, skill: GitSkill, redact: (text: string) => string): Promise<void> {
  const target = gitSkillPath(skill, handle.workspaceRoot)
  const { env, secret } = gitAuthEnv(skill.secret ? { token: skill.secret } : undefined)
  const args = ['git', 'clone', '--quiet', '--depth', '1', '--single-branch', ...(skill.ref ? [`--branch=${skill.ref}`] : []), '--', skill.url, target]
  const result = await handle.process.exec(`mkdir -p ${shellQuote(posix.dirname(target))} && ${shellJoin(args)}`, { env: { GIT_TERMINAL_PROMPT: '0', ...env } })
  if (result.exitCode === 0) return
  let detail = redact(redactUrl(`${result.stderr}${result.stdout}`.trim()))
  if (secret) detail = detail.split(secret).join('[redacted]')
  throw new WorkspaceBootstrapError('source', `gitSkill "${skill.name}" could not be cloned from ${redactUrl(skill.url)} into ${target} (exit ${result.exitCode}): ${detail}\nCheck the repository, ref and secret in gitSkill({ ... }).`)
}

/** `AGENTS.md` with the text; `CLAUDE.md` and `GEMINI.md` as symlinks to it, or copies where a symlink cannot be made. */
async function writeInstructions(handle: SandboxHandle, text: string): Promise<void> {
  const [canonical, ...aliases] = INSTRUCTION_FILES
  await handle.fs.write(canonical, text.endsWith('\n') ? text : `${text}\n`)
  for (const alias of aliases) {
    await handle.fs.remove(alias)
    const linked = await handle.process.exec(`ln -s ${canonical} ${alias}`)
    if (linked.exitCode !== 0) await handle.fs.write(alias, await handle.fs.read(canonical))
  }
}
