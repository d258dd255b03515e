/**
 * The sandbox permission policy: a default verdict, allow/ask/deny command
 * globs and capability gates. Core validates it, judges command lines
 * (`evaluateCommand`), expands `script:<name>` and hands it to adapters.
 * Invariant: an allow rule never allows a line whose effect its words do not
 * show. Source: spec 000, "Policy". One file: schema, judge and expansion
 * read the same rules. Design notes: docs/design/workspace.md
 */
import { z } from 'zod'

import { parseOptions } from '../contracts/validate.js'
import { splitCommandLine } from '../shell/command-line.js'
import { globsOverlap } from '../shell/glob-overlap.js'
import { hasGlob } from '../shell/glob-word.js'
import { flagsCover } from '../shell/known-commands.js'
import { PNPM_COMMANDS, YARN_COMMANDS } from '../shell/package-runners.js'
import { readSimpleCommand, type SimpleCommand } from '../shell/simple-command.js'

/** A verdict for an action the agent wants to take. */
export type PolicyDecision = 'allow' | 'ask' | 'deny'

/**
 * Glob patterns per verdict, matched against each simple command of a line
 * (see {@link evaluateCommand}). `*` matches any run of characters, `?` one;
 * a pattern must match the whole simple command; a trailing ` *` also
 * matches the bare command (`git push *` matches `git push`). `script:<name>`
 * names a workspace script.
 */
export interface CommandRules {
  allow?: readonly string[]
  ask?: readonly string[]
  deny?: readonly string[]
}

/** Gates for whole classes of actions. */
export interface PolicyCapabilities {
  /** May the agent create, edit or delete files through its own tools? Default `true`. */
  fileWrite?: boolean
  /** May the agent use network tools (web fetch/search)? Default `true`. Shell commands need the provider's network policy. */
  network?: boolean
}

/** A validated sandbox policy. */
export interface SandboxPolicy {
  /** Verdict for a command no rule matches. */
  readonly default: PolicyDecision
  readonly commands: { readonly allow: readonly string[]; readonly ask: readonly string[]; readonly deny: readonly string[] }
  readonly capabilities: { readonly fileWrite: boolean; readonly network: boolean }
}

/** Input of {@link defineSandboxPolicy}. */
export interface SandboxPolicyInput {
  /** Default `'allow'`: the sandbox is the boundary. */
  default?: PolicyDecision
  commands?: CommandRules
  capabilities?: PolicyCapabilities
}

const patterns = z.array(z.string().trim().min(1, 'patterns are non-empty globs such as "git push *"')).optional()
const policySchema = z
  .object({
    default: z.enum(['allow', 'ask', 'deny']).optional(),
    commands: z.object({ allow: patterns, ask: patterns, deny: patterns }).strict().optional(),
    capabilities: z.object({ fileWrite: z.boolean().optional(), network: z.boolean().optional() }).strict().optional(),
  })
  .strict()

/**
 * Validate a policy and fill in defaults.
 *
 * @param input - `default` (default `'allow'`), `commands` glob lists, `capabilities` gates (both default `true`).
 * @returns A frozen {@link SandboxPolicy}.
 * @throws SandboxConfigError naming the bad field, e.g. `policy.commands.deny.0`.
 * @example
 * ```ts
 * const policy = defineSandboxPolicy({
 *   default: 'allow',
 *   commands: { deny: ['git push *', 'rm -rf /*'], ask: ['npm publish*'] },
 *   capabilities: { network: false },
 * })
 * ```
 */
export function defineSandboxPolicy(input: SandboxPolicyInput = {}): SandboxPolicy {
  const parsed = parseOptions(policySchema, input, 'policy')
  return Object.freeze({
    default: parsed.default ?? 'allow',
    commands: Object.freeze({
      allow: Object.freeze([...(parsed.commands?.allow ?? [])]),
      ask: Object.freeze([...(parsed.commands?.ask ?? [])]),
      deny: Object.freeze([...(parsed.commands?.deny ?? [])]),
    }),
    capabilities: Object.freeze({ fileWrite: parsed.capabilities?.fileWrite ?? true, network: parsed.capabilities?.network ?? true }),
  })
}

/** Options of {@link evaluateCommand}. */
export interface EvaluateCommandOptions {
  /** The workspace's `scripts` (name → command). */
  scripts?: Readonly<Record<string, string>>
}

/**
 * Decide a shell command line under a policy: the best-effort judge for
 * adapters that answer the agent's permission requests themselves (Grok
 * Build). It is not a shell parser that guarantees safety: the boundary is
 * the provider (a container, `network: 'none'`); a deny list under
 * `default: 'allow'` is a guard-rail, `default: 'deny'` the strict mode.
 *
 * 1. The line is split into its simple commands at `;`, `&&`, `||`, `|`,
 *    `&` and newlines, honouring quotes, backslashes and comments
 *    (shell-quote reads the words). Quotes are removed and whitespace
 *    collapsed: `git 'push'  origin` is judged as `git push origin`.
 *    Redirections are left out of the words (`2>&1`, `> /dev/null`).
 * 2. Each simple command is judged alone: **deny**, then **ask**, then
 *    **allow**, else it is unmatched. Deny and ask rules see the command as
 *    written and what it runs underneath: past `VAR=value`, wrappers and
 *    their options (`sudo`, `env`, `timeout`, `nice`, `xargs`, `flock`,
 *    `setsid`, … see `shell/known-commands.ts`), package runners (`npx`,
 *    `npm exec`, `pnpm exec`/`dlx`, `yarn exec`/`dlx`, `bunx`, … see
 *    `shell/package-runners.ts`), `!`, compound keywords and
 *    function definitions, a program's directory, git's global options
 *    (`git -C . push`), and into `$(…)`, backticks, `<(…)`, shell scripts
 *    (`bash -O extglob -c '…'`), command strings (`eval`, `env -S`, `trap`,
 *    `script -c`, `su -c`, `watch`, `npx -c`, `pnpm -c exec`, `bun exec`),
 *    `find -exec` and aliases defined on the
 *    line. They match braces as expanded, a glob word as any word it could
 *    expand to (`git p*sh`), and rm's flags as a set (`rm -fr` for
 *    `rm -rf *`). Allow rules match only the command exactly as written.
 * 3. Allow rules never apply to a line holding something whose effect its
 *    words do not show: command or process substitution, a subshell or
 *    group, a compound command or function, a here-document, output
 *    redirection to a file (other than `/dev/null`, `/dev/stdout`,
 *    `/dev/stderr` and fd copies like `2>&1`), `eval`, a shell given a script
 *    inline or on stdin (`sh -c`, `curl … | bash`), a command string, an
 *    alias, an unquoted glob or brace expansion, `$"…"`, a program named by a
 *    variable, or an unterminated quote. Such a line gets the deny/ask
 *    verdict of what is visible, else the default: with `default: 'deny'` it
 *    is denied.
 * 4. The line's verdict is the strictest of its parts, an unmatched part
 *    counting as the default: any deny (or an unmatched part under
 *    `default: 'deny'`) → `'deny'`; else any ask → `'ask'`; else any
 *    unmatched part → the default; else (every part allowed by a rule)
 *    `'allow'`. An empty line gets the default.
 *
 * Patterns are globs over a simple command: `*` matches any run of
 * characters, `?` one, everything else is literal, anchored at both ends; a
 * trailing ` *` means "with any arguments or none", so `git push *` also
 * matches the bare `git push` (never `git pushy`). Script-aware: `script:<name>`
 * matches the workspace script's own command and the package-manager forms
 * that run it ({@link expandScriptPattern}); a command that runs a script is
 * also judged by the script's command (deny and ask always; it is allowed
 * when the script's command is allowed by rules), and a line that is exactly
 * a script's command takes that script's `script:<name>` rules as a whole.
 *
 * @param policy - The validated policy.
 * @param command - The command line as the agent would run it (`sh -c`).
 * @param options - `scripts`: the workspace's scripts, for `script:<name>` rules. Default none.
 * @returns `'allow'`, `'ask'` or `'deny'`.
 * @example
 * ```ts
 * const policy = defineSandboxPolicy({ commands: { deny: ['git push *'] } })
 * evaluateCommand(policy, 'git push')                       // 'deny'
 * evaluateCommand(policy, 'npm test && git push origin')    // 'deny'
 * evaluateCommand(policy, 'git status')                     // 'allow' (the default)
 * ```
 */
export function evaluateCommand(policy: SandboxPolicy, command: string, options: EvaluateCommandOptions = {}): PolicyDecision {
  const judged = judgeLine(policy, command, options.scripts ?? {}, 0)
  if (judged.deny || (judged.unmatched && policy.default === 'deny')) return 'deny'
  if (judged.ask) return 'ask'
  return judged.unmatched ? policy.default : 'allow'
}

/**
 * The commands a pattern stands for: a `script:<name>` pattern becomes the
 * script's own command and the package-manager forms that run it
 * (`npm run <name>`, `pnpm run <name>`, `pnpm <name>`, `yarn run <name>`,
 * `yarn <name>`, `bun run <name>`; `npm <name>` only for npm's own
 * shortcuts `test`, `start`, `stop`, `restart`; the bare `pnpm <name>` and
 * `yarn <name>` not for names that are those tools' own commands, such as
 * `install` or `publish`). Any other pattern is returned as it is
 * (whitespace collapsed). For mappers that hand patterns to a CLI.
 *
 * @param pattern - A policy pattern.
 * @param scripts - The workspace's `scripts` (name → command). Default none.
 * @returns The commands; `[]` for a `script:<name>` the workspace does not define.
 * @example
 * ```ts
 * expandScriptPattern('script:test', { test: 'vitest run' })
 * // ['vitest run', 'npm run test', 'npm test', 'pnpm run test', 'pnpm test', 'yarn run test', 'yarn test', 'bun run test']
 * expandScriptPattern('git push *') // ['git push *']
 * ```
 */
export function expandScriptPattern(pattern: string, scripts: Readonly<Record<string, string>> = {}): string[] {
  const normalised = normalise(pattern)
  if (!normalised.startsWith(SCRIPT_PREFIX)) return [normalised]
  const name = normalised.slice(SCRIPT_PREFIX.length)
  if (!Object.hasOwn(scripts, name)) return []
  return [...new Set([normalise(scripts[name]!), ...runnerForms(name)])]
}

const SCRIPT_PREFIX = 'script:'
/** npm runs these scripts without `run`. */
const NPM_SHORTCUTS = new Set(['test', 'start', 'stop', 'restart'])
const normalise = (command: string) => command.trim().replace(/\s+/g, ' ')

/** The package-manager commands that run the script `name`. */
function runnerForms(name: string): string[] {
  return [
    `npm run ${name}`,
    ...(NPM_SHORTCUTS.has(name) ? [`npm ${name}`] : []),
    `pnpm run ${name}`,
    ...(PNPM_COMMANDS.has(name) ? [] : [`pnpm ${name}`]),
    `yarn run ${name}`,
    ...(YARN_COMMANDS.has(name) ? [] : [`yarn ${name}`]),
    `bun run ${name}`,
  ]
}

/** What a line or command was found to hold: any denied part, any asked part, any part no rule allows. */
interface Judgement {
  deny: boolean
  ask: boolean
  unmatched: boolean
}

/** Scripts that run scripts, shells in shells: judged this deep, then unmatched. */
const MAX_DEPTH = 8

function merge(into: Judgement, from: Judgement): void {
  into.deny ||= from.deny
  into.ask ||= from.ask
  into.unmatched ||= from.unmatched
}

function judgeLine(policy: SandboxPolicy, line: string, scripts: Readonly<Record<string, string>>, depth: number): Judgement {
  const judged: Judgement = { deny: false, ask: false, unmatched: false }
  if (depth > MAX_DEPTH) return { ...judged, unmatched: true }
  const parsed = splitCommandLine(line)
  if (parsed.commands.length === 0) judged.unmatched = true
  for (const body of parsed.hidden) merge(judged, judgeLine(policy, body, scripts, depth + 1))
  for (const words of parsed.commands) merge(judged, judgeCommand(policy, readSimpleCommand(words), parsed.opaque, scripts, depth))
  // A line that is exactly a workspace script's command takes its script:<name> rules whole.
  const whole = normalise(line)
  const scriptRule = (list: readonly string[]) => list.some((p) => p.startsWith(SCRIPT_PREFIX) && scriptCommand(p, scripts) === whole)
  if (scriptRule(policy.commands.deny)) judged.deny = true
  if (scriptRule(policy.commands.ask)) judged.ask = true
  if (scriptRule(policy.commands.allow)) judged.unmatched = false
  return judged
}

function judgeCommand(policy: SandboxPolicy, command: SimpleCommand, lineOpaque: boolean, scripts: Readonly<Record<string, string>>, depth: number): Judgement {
  const judged: Judgement = { deny: false, ask: false, unmatched: false }
  for (const inner of command.nested) merge(judged, judgeLine(policy, inner, scripts, depth + 1))
  const matches = (list: readonly string[], forms: readonly string[]) => list.some((pattern) => forms.some((form) => matchPattern(pattern, form, scripts)))
  const covers = (list: readonly string[]) => list.some((pattern) => command.forms.some((form) => matchPattern(pattern, form, scripts) || coversLoosely(pattern, form)))
  const denied = covers(policy.commands.deny)
  const asked = covers(policy.commands.ask)
  judged.deny ||= denied
  judged.ask ||= asked
  // A command that runs a workspace script is also judged by the script's own command.
  let scriptAllowed = false
  for (const form of command.forms) {
    const name = scriptRunBy(form, scripts)
    if (name === undefined) continue
    const script = judgeLine(policy, scripts[name]!, scripts, depth + 1)
    judged.deny ||= script.deny
    judged.ask ||= script.ask
    if (form === command.exact && !script.deny && !script.ask && !script.unmatched) scriptAllowed = true
  }
  const allowed = !lineOpaque && !command.opaque && (scriptAllowed || matches(policy.commands.allow, [command.exact]))
  // A part a deny or ask rule names is matched: only a part no rule names falls to the default.
  if (!allowed && !denied && !asked) judged.unmatched = true
  return judged
}

/** The normalised command of the script a `script:<name>` pattern names, if the workspace has it. */
function scriptCommand(pattern: string, scripts: Readonly<Record<string, string>>): string | undefined {
  const name = normalise(pattern).slice(SCRIPT_PREFIX.length)
  return Object.hasOwn(scripts, name) ? normalise(scripts[name]!) : undefined
}

/** The script a simple command runs through a package manager, if any. */
function scriptRunBy(form: string, scripts: Readonly<Record<string, string>>): string | undefined {
  const name = form.slice(form.lastIndexOf(' ') + 1)
  return Object.hasOwn(scripts, name) && runnerForms(name).includes(form) ? name : undefined
}

/**
 * The extra ways a deny or ask rule (never an allow rule) covers a form: a
 * glob word the shell could expand to the rule's word (`git p*sh`), and
 * flags in another spelling, order or grouping (`rm -fr`, `rm -r -f`).
 */
function coversLoosely(pattern: string, form: string): boolean {
  if (normalise(pattern).startsWith(SCRIPT_PREFIX)) return false
  const meets = (rule: string, text: string) => (hasGlob(text) ? globsOverlap(rule, text) : globToRegExp(rule).test(text))
  return meets(pattern, form) || flagsCover(pattern, form, meets)
}

function matchPattern(pattern: string, form: string, scripts: Readonly<Record<string, string>>): boolean {
  if (!normalise(pattern).startsWith(SCRIPT_PREFIX)) return globToRegExp(pattern).test(form)
  const own = scriptCommand(pattern, scripts)
  if (own === undefined) return false
  // The script's own command, also as its words would be read (quotes removed).
  const simple = splitCommandLine(own)
  const read = simple.commands.length === 1 && !simple.opaque ? simple.commands[0]!.join(' ') : own
  return form === own || form === read || runnerForms(normalise(pattern).slice(SCRIPT_PREFIX.length)).includes(form)
}

/**
 * A policy glob as an anchored regular expression: `*` any run (spaces
 * included), `?` one character, everything else literal; whitespace
 * collapsed; a trailing ` *` also matches nothing (`git push *` matches
 * `git push`).
 * @example
 * ```ts
 * globToRegExp('git push *').test('git push') // true
 * ```
 */
export function globToRegExp(glob: string): RegExp {
  const cached = compiled.get(glob)
  if (cached) return cached
  const normalised = normalise(glob)
  const bare = normalised.endsWith(' *')
  const chars = [...(bare ? normalised.slice(0, -2) : normalised)]
  const body = chars.map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\/]/g, '\\$&'))).join('')
  const regExp = new RegExp(`^${body}${bare ? '(?: .*)?' : ''}$`, 's')
  // Policies are few and long-lived, their patterns judged for every command: compile each once (bounded, oldest dropped first).
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!)
  compiled.set(glob, regExp)
  return regExp
}

/** Compiled policy globs by their source text. Without the `g` or `y` flag a RegExp keeps no state between `test` calls, so sharing one is safe. */
const compiled = new Map<string, RegExp>()
const MAX_COMPILED = 1024

