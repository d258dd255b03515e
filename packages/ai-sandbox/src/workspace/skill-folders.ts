/**
 * Skills as folders of `SKILL.md`, the layout Claude Code, Codex and Grok
 * Build read (each under its own folder, e.g. `.claude/skills`): an agent
 * skill becomes `<dir>/<name>/SKILL.md`, a cloned git skill repository is
 * linked in. Adapters call it from their projection's `write`.
 */
import { posix } from 'node:path'
import { shellJoin, shellQuote } from '../shell/quote.js'
import { gitSkillPath } from './provision.js'
import type { ProjectionContext } from './projection.js'
import type { AgentSkill } from './skills.js'

/**
 * The `SKILL.md` text of an agent skill: YAML front matter with its name and
 * description (default: the name), then its content (default: a line saying
 * to use the skill), ending in a newline.
 */
export function agentSkillMarkdown(skill: Pick<AgentSkill, 'name' | 'description' | 'content'>): string {
  const body = skill.content ?? `Use the "${skill.name}" skill when the task calls for it.`
  const frontmatter = `---\nname: ${skill.name}\ndescription: ${JSON.stringify(skill.description ?? skill.name)}\n---\n\n`
  return `${frontmatter}${body.endsWith('\n') ? body : `${body}\n`}`
}

/**
 * Write the workspace's agent and git skills as skill folders under `dir`
 * (relative to the workspace root): each agent skill as `<dir>/<name>/SKILL.md`;
 * each git skill repository linked in, as one skill when it has `SKILL.md` at
 * its root, else each folder with a `SKILL.md` one level down or under
 * `skills/`. A git skill with none gets a warning through `ctx.warn`.
 * @param ctx - The projection context the adapter's `write` received.
 * @param dir - The harness's skills folder, e.g. `.claude/skills`.
 * @throws SandboxOperationError when the sandbox's `fs` refuses a write.
 */
export async function writeSkillFolders(ctx: ProjectionContext, dir: string): Promise<void> {
  for (const skill of ctx.workspace.skills) {
    if (skill.kind === 'agent') {
      await ctx.handle.fs.write(posix.join(dir, skill.name, 'SKILL.md'), agentSkillMarkdown(skill))
    } else if (skill.kind === 'git') {
      const linked = await linkSkillRepository(ctx, gitSkillPath(skill, ctx.handle.workspaceRoot), skill.name, dir)
      if (linked === 0) ctx.warn(`git skill "${skill.name}" has no SKILL.md (at its root or in <dir>/SKILL.md, skills/<dir>/SKILL.md); nothing was linked into ${dir}.`)
    }
  }
}

/** Link a cloned skills repository into `dir`; returns how many skills were linked (0 when the script failed). */
async function linkSkillRepository(ctx: ProjectionContext, repo: string, name: string, dir: string): Promise<number> {
  const skillsDir = posix.join(ctx.handle.workspaceRoot, dir)
  const script = [
    `mkdir -p ${shellQuote(skillsDir)}`,
    `n=0`,
    `if [ -f ${shellQuote(`${repo}/SKILL.md`)} ]; then ln -sfn ${shellJoin([repo, `${skillsDir}/${name}`])} && n=1; else`,
    `  for f in ${shellQuote(repo)}/*/SKILL.md ${shellQuote(repo)}/skills/*/SKILL.md; do [ -f "$f" ] || continue; d=$(dirname "$f"); ln -sfn "$d" ${shellQuote(skillsDir)}/"$(basename "$d")" && n=$((n+1)); done`,
    `fi`,
    `echo $n`,
  ].join('\n')
  const result = await ctx.handle.process.exec(script)
  return result.exitCode === 0 ? Number(result.stdout.trim()) || 0 : 0
}
