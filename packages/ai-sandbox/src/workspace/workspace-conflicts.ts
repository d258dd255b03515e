/**
 * Collisions between the things a workspace declares, refused when it is
 * defined: two skills of a kind that would land in the same place (the later
 * would silently replace or shadow the earlier), an MCP server named like the
 * tool bridge, and file skills that `instructions` would overwrite. Each error
 * names the entries involved by their `workspace.skills.<index>` field.
 * Pure: it looks at the declaration only, never at a sandbox.
 */
import { posix } from 'node:path'
import { SandboxConfigError } from '../contracts/errors.js'
import { TOOL_BRIDGE_SERVER_NAME } from '../bridge/server-name.js'
import { INSTRUCTION_FILES, SKILLS_DIR } from './provision.js'
import type { Skill } from './skills.js'

/**
 * Refuse colliding declarations.
 * @throws SandboxConfigError with field `workspace.skills.<index>` of the later entry of a colliding pair (the message names both), or of an `mcpSkill` named `tanstack`.
 */
export function assertNoWorkspaceConflicts(skills: readonly Skill[], instructions: string | undefined): void {
  const seen = new Map<string, number>()
  skills.forEach((skill, i) => {
    const field = `workspace.skills.${i}`
    if (skill.kind === 'mcp' && skill.name === TOOL_BRIDGE_SERVER_NAME) {
      fail(field, `the MCP server name "${TOOL_BRIDGE_SERVER_NAME}" is reserved for the tool bridge that serves chat({ tools }) to the agent; an mcpSkill of that name would be shadowed. Rename this mcpSkill.`)
    }
    if (skill.kind === 'file' && instructions !== undefined) {
      const top = normalise(skill.path).split('/')[0]!
      if ((INSTRUCTION_FILES as readonly string[]).includes(top)) {
        fail(field, `fileSkill "${skill.path}" collides with instructions, which write ${INSTRUCTION_FILES.join(', ')} at the workspace root and would overwrite it. Put that text in instructions, or drop instructions and keep the fileSkill.`)
      }
    }
    const place = placeOf(skill)
    const earlier = seen.get(place.key)
    if (earlier !== undefined) fail(field, `${place.what} collides with workspace.skills.${earlier}: ${place.why} Rename or remove one of them.`)
    seen.set(place.key, i)
  })
  assertNoFileNesting(skills)
}

/** Where a skill lands, as a key two colliding skills share. */
function placeOf(skill: Skill): { key: string; what: string; why: string } {
  switch (skill.kind) {
    case 'mcp':
      return { key: `mcp:${skill.name}`, what: `mcpSkill "${skill.name}"`, why: 'both declare an MCP server of that name, and a harness config holds one server per name.' }
    case 'agent':
      return { key: `agent:${skill.name}`, what: `agentSkill "${skill.name}"`, why: 'both declare a skill of that name, and a harness keeps one skill folder per name.' }
    case 'git': {
      const folder = skill.into ? posix.normalize(skill.into).replace(/(.)\/+$/, '$1') : `<workspace>/${SKILLS_DIR}/${skill.name}`
      return { key: `git:${folder}`, what: `gitSkill ${skill.url}`, why: `both would be cloned into ${folder}${skill.into ? '' : ' (the folder is the repository name)'}; give one of them another "into".` }
    }
    case 'file': {
      const path = normalise(skill.path)
      return { key: `file:${path}`, what: `fileSkill "${skill.path}"`, why: `both write the workspace file ${path}.` }
    }
  }
}

/** A file skill at `a` and another at `a/b`: the first needs `a` as a file, the second as a directory. */
function assertNoFileNesting(skills: readonly Skill[]): void {
  const files = skills.flatMap((skill, i) => (skill.kind === 'file' ? [{ i, path: normalise(skill.path) }] : []))
  for (const outer of files) {
    const inner = files.find((other) => other.path.startsWith(`${outer.path}/`))
    if (inner) {
      const [first, second] = outer.i < inner.i ? [outer, inner] : [inner, outer]
      fail(`workspace.skills.${second.i}`, `fileSkill "${second.path}" collides with workspace.skills.${first.i} (fileSkill "${first.path}"): ${outer.path} cannot be both a file and the directory holding ${inner.path}. Rename or remove one of them.`)
    }
  }
}

/** A workspace-relative path in one spelling: `./a//b/` and `a/b` are the same file. */
function normalise(path: string): string {
  return posix.normalize(path).replace(/^(\.\/)+/, '').replace(/\/+$/, '')
}

function fail(field: string, detail: string): never {
  throw new SandboxConfigError(field, `Invalid option ${field}: ${detail}`)
}
