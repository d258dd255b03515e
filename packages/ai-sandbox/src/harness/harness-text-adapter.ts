/**
 * `harnessTextAdapter`: the factory skeleton every harness adapter shares.
 * It validates the model id and the options (with the credential advice),
 * declares the CLI's prompt limit, and returns the `TextAdapter` whose
 * `chatStream` is `runHarness` with the adapter's own parts; structured output
 * runs through the stream (`'event'`) or is refused with the adapter's error.
 */
import type { TextAdapter, TextOptions } from '@tanstack/ai'
import { z } from 'zod'
import { getProjection, getSandboxPolicy, SandboxCapability } from '../capabilities/tokens.js'
import { parseOptions } from '../contracts/validate.js'
import { toSandboxPath } from '../paths/workspace-path.js'
import { removeSandboxRunFiles, sandboxRunFilePath, writeSandboxRunFile } from '../shell/sandbox-run-file.js'
import { defineSandboxPolicy, type SandboxPolicy } from '../workspace/policy.js'
import type { WorkspaceProjection } from '../workspace/projection.js'
import { harnessCliEnv } from './harness-cli-env.js'
import type { HarnessLaunch, HarnessPrepareContext, RunHarnessOptions } from './harness-launch.js'
import { credentialOptionAdvice, type HarnessCommonOptions } from './harness-option-fields.js'
import { declareHarnessPromptLimit, type HarnessPromptLimit } from './prompt-limit.js'
import { runHarness } from './run-harness.js'

/** A harness adapter's `TextAdapter`: text only, per-call options `TModelOptions`. */
export type HarnessTextAdapter<TModelOptions extends Record<string, any>> = TextAdapter<string, TModelOptions, readonly ['text'], any>

/** What an adapter is made of (see {@link harnessTextAdapter}). */
export interface HarnessTextAdapterSpec<TConfig extends HarnessCommonOptions, TModelOptions extends Record<string, any>> {
  /** The adapter's name, also the harness name in logs, errors and events, e.g. `'codex'`. */
  readonly harness: string
  /** The factory's name, the prefix of every option error. Default: the harness name in camel case plus `Text` (`codex` → `codexText`, `claude-code` → `claudeCodeText`). */
  readonly factory?: string
  /** The model ids the CLI takes, and the message for one it does not (e.g. `'expected a model id such as "gpt-5.5"'`). */
  readonly modelRule: { readonly pattern: RegExp; readonly expected: string }
  /** The adapter's strict options schema (its own fields plus `harnessOptionFields`). */
  readonly optionsSchema: z.ZodType
  /** The CLI's credential variables, the usual one first: the advice for a credential key in the options. */
  readonly credentials: readonly [string, ...string[]]
  /** Host variables forwarded to the CLI when the workspace does not set them. */
  readonly forwardedHostEnv: readonly string[]
  /** The CLI's prompt limit, declared once per adapter (`declareHarnessPromptLimit`). */
  readonly promptLimit?: HarnessPromptLimit
  /** `'event'`: `chat({ outputSchema })` runs in the stream; `'refused'`: it throws {@link HarnessTextAdapterSpec.unsupported} from chatStream, before the CLI starts (withSandbox has made the sandbox by then). */
  readonly structuredOutput: 'event' | 'refused'
  /** The adapter's error for what it cannot do (`structuredOutput()`, a refused schema). */
  readonly unsupported: () => Error
  /** The adapter's own parts of one run: translator, `prepare`, and the optional session, prompt, run-id and journal settings. */
  readonly run: (config: TConfig, options: TextOptions<TModelOptions>) => HarnessRunParts
}

/** What an adapter's `prepare` gets from {@link harnessTextAdapter}: the run, plus what every adapter resolves the same way. */
export interface HarnessAdapterPrepareContext extends HarnessPrepareContext {
  /** The run's sandbox policy (`getSandboxPolicy`), or the default policy when the run has none. */
  readonly policy: SandboxPolicy
  /** The workspace projection (`getProjection`), when the run has a workspace. */
  readonly projection: WorkspaceProjection | undefined
  /** The CLI's working directory: the `cwd` option inside the workspace, else the workspace root. */
  readonly cwd: string
  /** The CLI's environment (`harnessCliEnv` with the adapter's forwarded names and its `env` option): `base` first, `settings` over the forwarded names, `env` last. */
  readonly cliEnv: (layers?: { base?: Record<string, string>; settings?: Record<string, string> }) => Record<string, string>
  /**
   * Write a run file, `/tmp/tanstack-<harness>/<runId>.<suffix>` (`writeSandboxRunFile`), and get its path. Every file written
   * this way is removed when the run ends (after the launch's own `cleanup`), or at once when `prepare` throws or ends the run.
   * @param what - What the file is, for the error message (e.g. `'the prompt file'`).
   */
  readonly writeRunFile: (suffix: string, content: string, what?: string) => Promise<string>
}

/** The parts of `runHarness`'s options an adapter supplies per run; its `prepare` gets a {@link HarnessAdapterPrepareContext}. */
export type HarnessRunParts = Pick<RunHarnessOptions, 'translator'> &
  Partial<Pick<RunHarnessOptions, 'sessionId' | 'sessionGone' | 'prompt' | 'runIdPrefix' | 'journal'>> & {
    readonly prepare: (context: HarnessAdapterPrepareContext) => Promise<HarnessLaunch>
  }

/**
 * Build a harness adapter from its own parts. Errors name the factory
 * (`spec.factory`, by default after the harness: `codex` → `codexText.model`,
 * `claude-code` → `claudeCodeText.options.<field>`).
 *
 * @param model - The model id the caller passed.
 * @param options - The options the caller passed (`undefined`: none).
 * @param spec - See {@link HarnessTextAdapterSpec}.
 * @returns The `TextAdapter` (`requires: [SandboxCapability]`).
 * @throws SandboxConfigError `<factory>.model` or `<factory>.options.<field>` for a bad model id or option.
 * @example
 * ```ts
 * export function myCliText(model: string, options?: MyOptions) {
 *   return harnessTextAdapter(model, options, { harness: 'my-cli', modelRule, optionsSchema, credentials: ['MY_API_KEY'], forwardedHostEnv: ['MY_API_KEY'], structuredOutput: 'refused', unsupported: () => new MyUnsupportedError(), run: (config) => ({ translator, prepare }) })
 * }
 * ```
 */
export function harnessTextAdapter<TConfig extends HarnessCommonOptions, TModelOptions extends Record<string, any>>(model: string, options: TConfig | undefined, spec: HarnessTextAdapterSpec<TConfig, TModelOptions>): HarnessTextAdapter<TModelOptions> {
  const { harness } = spec
  const factory = spec.factory ?? `${harness.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())}Text`
  parseOptions(z.string().regex(spec.modelRule.pattern, spec.modelRule.expected), model, `${factory}.model`)
  if (spec.promptLimit) declareHarnessPromptLimit(harness, spec.promptLimit)
  const config = parseOptions(spec.optionsSchema, options ?? {}, `${factory}.options`, credentialOptionAdvice(factory, spec.credentials)) as TConfig
  return {
    kind: 'text',
    name: harness,
    model,
    requires: [SandboxCapability],
    '~types': undefined as unknown as HarnessTextAdapter<TModelOptions>['~types'],
    // Declared in both modes, so that chat({ outputSchema }) hands the schema to chatStream: it runs there ('event'), or is
    // refused before the CLI starts ('refused'; otherwise chat() would run a whole turn, then call structuredOutput()).
    supportsCombinedToolsAndSchema: () => true,
    combinedStructuredOutputSource: () => 'event',
    chatStream: (textOptions) => {
      if (spec.structuredOutput === 'refused' && textOptions.outputSchema !== undefined) throw spec.unsupported()
      return runHarness({
        harness,
        model,
        options: textOptions,
        secrets: { forwardedHostEnv: spec.forwardedHostEnv, env: config.env },
        ...(config.timeoutMs ? { timeoutMs: config.timeoutMs } : {}),
        ...(config.exitGraceMs !== undefined ? { exitGraceMs: config.exitGraceMs } : {}),
        ...(config.maxLineBytes !== undefined ? { maxLineBytes: config.maxLineBytes } : {}),
        ...runParts(spec, config, textOptions),
      })
    },
    structuredOutput() {
      return Promise.reject(spec.unsupported())
    },
  }
}

/** The adapter's run parts, its `prepare` handed the resolved policy, projection, working directory, environment and run files. */
function runParts<TConfig extends HarnessCommonOptions, TModelOptions extends Record<string, any>>(spec: HarnessTextAdapterSpec<TConfig, TModelOptions>, config: TConfig, textOptions: TextOptions<TModelOptions>): Omit<RunHarnessOptions, 'harness' | 'model' | 'options'> {
  const parts = spec.run(config, textOptions)
  const capabilities = textOptions.capabilities!
  return {
    ...parts,
    prepare: async (run) => {
      const { handle } = run
      const files: string[] = []
      const removeFiles = () => removeSandboxRunFiles(handle, files)
      let launch: HarnessLaunch
      try {
        launch = await parts.prepare({
          ...run,
          policy: getSandboxPolicy(capabilities, { optional: true }) ?? defineSandboxPolicy(),
          projection: getProjection(capabilities, { optional: true }),
          cwd: toSandboxPath(config.cwd ?? '.', handle.workspaceRoot),
          cliEnv: (layers = {}) => harnessCliEnv({ capabilities, forwardedHostEnv: spec.forwardedHostEnv, ...layers, ...(config.env ? { env: config.env } : {}) }),
          writeRunFile: (suffix, content, what) => {
            const file = sandboxRunFilePath(`/tmp/tanstack-${spec.harness}`, run.runId, suffix)
            files.push(file) // before the write: a half-written file goes too
            return writeSandboxRunFile(handle, { file, content, harness: spec.harness, ...(what ? { what } : {}) })
          },
        })
      } catch (error) {
        await removeFiles()
        throw error
      }
      if (files.length === 0) return launch
      if ('end' in launch) return removeFiles().then(() => launch)
      const { cleanup } = launch
      return { ...launch, cleanup: () => Promise.resolve(cleanup?.()).finally(removeFiles) }
    },
  }
}
