/**
 * `harnessTextAdapter`: the factory skeleton every harness adapter shares.
 * It validates the model id and the options (with the credential advice),
 * declares the CLI's prompt limit, and returns the `TextAdapter` whose
 * `chatStream` is `runHarness` with the adapter's own parts; structured output
 * runs through the stream (`'event'`) or is refused with the adapter's error.
 */
import type { TextAdapter, TextOptions } from '@tanstack/ai'
import { z } from 'zod'
import { SandboxCapability } from '../capabilities/tokens.js'
import { parseOptions } from '../contracts/validate.js'
import type { RunHarnessOptions } from './harness-launch.js'
import { credentialOptionAdvice, type HarnessCommonOptions } from './harness-option-fields.js'
import { declareHarnessPromptLimit, type HarnessPromptLimit } from './prompt-limit.js'
import { runHarness } from './run-harness.js'

/** A harness adapter's `TextAdapter`: text only, per-call options `TModelOptions`. */
export type HarnessTextAdapter<TModelOptions extends Record<string, any>> = TextAdapter<string, TModelOptions, readonly ['text'], any>

/** What an adapter is made of (see {@link harnessTextAdapter}). */
export interface HarnessTextAdapterSpec<TConfig extends HarnessCommonOptions, TModelOptions extends Record<string, any>> {
  /** The adapter's name, also the harness name in logs, errors and events, e.g. `'codex'`; its factory is named after it (`codexText`, `claudeCodeText`). */
  readonly harness: string
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
  /** `'event'`: `chat({ outputSchema })` runs in the stream; `'refused'`: it throws {@link HarnessTextAdapterSpec.unsupported} before anything runs. */
  readonly structuredOutput: 'event' | 'refused'
  /** The adapter's error for what it cannot do (`structuredOutput()`, a refused schema). */
  readonly unsupported: () => Error
  /** The adapter's own parts of one run: translator, `prepare`, and the optional session, prompt, run-id and journal settings. */
  readonly run: (config: TConfig, options: TextOptions<TModelOptions>) => HarnessRunParts
}

/** The parts of `runHarness`'s options an adapter supplies per run. */
export type HarnessRunParts = Pick<RunHarnessOptions, 'translator' | 'prepare'> & Partial<Pick<RunHarnessOptions, 'sessionId' | 'sessionGone' | 'prompt' | 'runIdPrefix' | 'journal'>>

/**
 * Build a harness adapter from its own parts. Errors name the factory after
 * the harness: `codex` → `codexText.model`, `claude-code` → `claudeCodeText.options.<field>`.
 *
 * @param model - The model id the caller passed.
 * @param options - The options the caller passed (`undefined`: none).
 * @param spec - See {@link HarnessTextAdapterSpec}.
 * @returns The `TextAdapter` (`requires: [SandboxCapability]`).
 * @throws SandboxConfigError `<factory>.model` or `<factory>.options.<field>` for a bad model id or option.
 * @example
 * ```ts
 * export function myText(model: string, options?: MyOptions) {
 *   return harnessTextAdapter(model, options, { harness: 'my-cli', modelRule, optionsSchema, credentials: ['MY_API_KEY'], forwardedHostEnv: ['MY_API_KEY'], structuredOutput: 'refused', unsupported: () => new MyUnsupportedError(), run: (config) => ({ translator, prepare }) })
 * }
 * ```
 */
export function harnessTextAdapter<TConfig extends HarnessCommonOptions, TModelOptions extends Record<string, any>>(model: string, options: TConfig | undefined, spec: HarnessTextAdapterSpec<TConfig, TModelOptions>): HarnessTextAdapter<TModelOptions> {
  const { harness } = spec
  const factory = `${harness.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())}Text`
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
    // refused before the sandbox runs anything ('refused'; otherwise chat() would run a whole turn, then call structuredOutput()).
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
        ...spec.run(config, textOptions),
      })
    },
    structuredOutput() {
      return Promise.reject(spec.unsupported())
    },
  }
}
