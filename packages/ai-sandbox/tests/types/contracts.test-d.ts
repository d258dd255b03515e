/**
 * Type tests (vitest `expectTypeOf`, run by `pnpm test:types`) pinning the
 * public contracts of `@tanstack/ai-sandbox` that providers, stores and
 * adapters written outside this repository implement or call: their members,
 * which are optional and what each returns. A change here is a change to the
 * published API and needs a changeset.
 */
import type { ChatMiddleware } from '@tanstack/ai'
import { describe, expectTypeOf, it } from 'vitest'
import {
  defineSandbox,
  defineWorkspace,
  withSandbox,
  type ExecOptions,
  type ExecResult,
  type HarnessCommonOptions,
  type ResolvedWorkspace,
  type SandboxCapabilities,
  type SandboxCreateInput,
  type SandboxDefinition,
  type SandboxDefinitionInput,
  type SandboxDestroyInput,
  type SandboxEnv,
  type SandboxFs,
  type SandboxGit,
  type SandboxHandle,
  type SandboxHooks,
  type SandboxHostAccess,
  type SandboxInstanceRecord,
  type SandboxInstanceStore,
  type SandboxLifecycle,
  type SandboxMiddlewareOptions,
  type SandboxPolicy,
  type SandboxPorts,
  type SandboxProcess,
  type SandboxProvider,
  type SandboxRestoreInput,
  type SandboxResumeInput,
  type SandboxSnapshotRef,
  type SecretRef,
  type WorkspaceInput,
} from '../../src/index.js'

describe('SandboxCapabilities', () => {
  it('is eleven required flags and the optional isolated hint', () => {
    expectTypeOf<SandboxCapabilities>().toEqualTypeOf<{
      readonly fs: boolean
      readonly exec: boolean
      readonly env: boolean
      readonly ports: boolean
      readonly backgroundProcesses: boolean
      readonly writableStdin: boolean
      readonly killableProcesses: boolean
      readonly snapshots: boolean
      readonly networkPolicy: boolean
      readonly durableFilesystem: boolean
      readonly fork: boolean
      readonly isolated?: boolean
    }>()
  })
})

describe('SandboxHandle', () => {
  it('has these members; snapshot, fork, hostAccess, journalDir and journalSecret are optional', () => {
    expectTypeOf<SandboxHandle>().toEqualTypeOf<{
      readonly id: string
      readonly provider: string
      readonly capabilities: SandboxCapabilities
      readonly workspaceRoot: string
      readonly fs: SandboxFs
      readonly git: SandboxGit
      readonly process: SandboxProcess
      readonly ports: SandboxPorts
      readonly env: SandboxEnv
      snapshot?: (label?: string) => Promise<SandboxSnapshotRef>
      fork?: () => Promise<SandboxHandle>
      hostAccess?: () => Promise<SandboxHostAccess | undefined>
      readonly journalDir?: string
      readonly journalSecret?: string
      destroy: () => Promise<void>
    }>()
  })

  it('keeps the shapes of ports, env, snapshots and host access', () => {
    expectTypeOf<SandboxPorts['connect']>().toEqualTypeOf<(port: number) => Promise<{ readonly url: string; readonly hostname: string; readonly port: number }>>()
    expectTypeOf<SandboxEnv['set']>().toEqualTypeOf<(vars: Record<string, string>) => Promise<void>>()
    expectTypeOf<SandboxSnapshotRef>().toEqualTypeOf<{ readonly snapshotId: string; readonly createdAt: number; readonly label?: string }>()
    expectTypeOf<SandboxHostAccess>().toEqualTypeOf<{ readonly hostname: string; readonly listenAddress: string }>()
  })

  it('runs commands and reads files with these signatures', () => {
    expectTypeOf<SandboxProcess['exec']>().toEqualTypeOf<(command: string, options?: ExecOptions) => Promise<ExecResult>>()
    expectTypeOf<ExecResult>().toEqualTypeOf<{ readonly exitCode: number; readonly stdout: string; readonly stderr: string }>()
    expectTypeOf<ExecOptions>().toEqualTypeOf<{ cwd?: string; env?: Record<string, string>; signal?: AbortSignal; stdin?: string; timeoutMs?: number }>()
    expectTypeOf<SandboxHandle['fs']['exists']>().parameter(0).toEqualTypeOf<string>()
    expectTypeOf<SandboxHandle['fs']['exists']>().returns.toEqualTypeOf<Promise<boolean>>()
  })
})

describe('SandboxProvider', () => {
  it('has these members; fingerprint, restoreSnapshot and deleteSnapshot are optional', () => {
    expectTypeOf<SandboxProvider>().toEqualTypeOf<{
      readonly name: string
      readonly fingerprint?: string
      capabilities: () => SandboxCapabilities
      create: (input?: SandboxCreateInput) => Promise<SandboxHandle>
      resume: (input: SandboxResumeInput) => Promise<SandboxHandle | null>
      restoreSnapshot?: (input: SandboxRestoreInput) => Promise<SandboxHandle>
      destroy: (input: SandboxDestroyInput) => Promise<void>
      deleteSnapshot?: (input: { snapshotId: string }) => Promise<void>
    }>()
  })

  it('takes these inputs', () => {
    expectTypeOf<SandboxCreateInput>().toEqualTypeOf<{ key?: string; labels?: Record<string, string>; env?: Record<string, string>; network?: 'blocked'; signal?: AbortSignal }>()
    expectTypeOf<SandboxResumeInput>().toEqualTypeOf<{ id: string; signal?: AbortSignal }>()
    expectTypeOf<SandboxRestoreInput>().toEqualTypeOf<{ snapshotId: string; key?: string; labels?: Record<string, string>; env?: Record<string, string>; network?: 'blocked'; signal?: AbortSignal }>()
    expectTypeOf<SandboxDestroyInput>().toEqualTypeOf<{ id: string }>()
  })
})

describe('SandboxInstanceStore', () => {
  it('is get, upsert and delete over instance records', () => {
    expectTypeOf<SandboxInstanceStore>().toEqualTypeOf<{
      get: (key: string) => Promise<SandboxInstanceRecord | null>
      upsert: (record: SandboxInstanceRecord) => Promise<void>
      delete: (key: string) => Promise<void>
    }>()
    expectTypeOf<SandboxInstanceRecord>().toEqualTypeOf<{
      key: string
      provider: string
      providerSandboxId: string
      latestSnapshotId?: string
      threadId: string
      latestRunId?: string
      updatedAt: number
    }>()
  })
})

describe('defineSandbox', () => {
  it('takes SandboxDefinitionInput: id and provider required, the rest optional', () => {
    expectTypeOf(defineSandbox).parameters.toEqualTypeOf<[input: SandboxDefinitionInput]>()
    expectTypeOf(defineSandbox).returns.toEqualTypeOf<SandboxDefinition>()
    expectTypeOf<SandboxDefinitionInput>().toEqualTypeOf<{
      id: string
      provider: SandboxProvider
      workspace?: ResolvedWorkspace
      lifecycle?: SandboxLifecycle
      policy?: SandboxPolicy
      hooks?: SandboxHooks
      fileEvents?: boolean
      instances?: SandboxInstanceStore
    }>()
  })

  it('refuses a definition without an id or provider, and unknown options', () => {
    const provider = {} as SandboxProvider
    // @ts-expect-error: `id` is required
    defineSandbox({ provider })
    // @ts-expect-error: `provider` is required
    defineSandbox({ id: 'x' })
    // @ts-expect-error: there is no `reuse` at the top level; it lives in `lifecycle`
    defineSandbox({ id: 'x', provider, reuse: 'thread' })
    expectTypeOf<SandboxLifecycle['reuse']>().toEqualTypeOf<'thread' | 'none' | undefined>()
  })
})

describe('defineWorkspace', () => {
  it('takes an optional WorkspaceInput and returns a ResolvedWorkspace', () => {
    expectTypeOf(defineWorkspace).parameters.toEqualTypeOf<[input?: WorkspaceInput]>()
    expectTypeOf(defineWorkspace).returns.toEqualTypeOf<ResolvedWorkspace>()
    expectTypeOf<keyof WorkspaceInput>().toEqualTypeOf<'source' | 'setup' | 'scripts' | 'packageManager' | 'secrets' | 'skills' | 'plugins' | 'instructions'>()
    expectTypeOf<WorkspaceInput['scripts']>().toEqualTypeOf<Record<string, string> | undefined>()
    expectTypeOf<WorkspaceInput['secrets']>().toEqualTypeOf<Record<string, SecretRef | string> | undefined>()
    expectTypeOf<WorkspaceInput['plugins']>().toEqualTypeOf<readonly string[] | undefined>()
    expectTypeOf<WorkspaceInput['instructions']>().toEqualTypeOf<string | undefined>()
  })

  it('accepts setup as a command list', () => {
    expectTypeOf<['git init -q', 'pnpm install']>().toExtend<NonNullable<WorkspaceInput['setup']>>()
  })
})

describe('withSandbox', () => {
  it('takes a definition and optional instances/locks stores, durability options and snapshots, and returns chat() middleware', () => {
    expectTypeOf(withSandbox).parameter(0).toEqualTypeOf<SandboxDefinition>()
    expectTypeOf(withSandbox).parameter(1).toEqualTypeOf<SandboxMiddlewareOptions | undefined>()
    expectTypeOf<keyof SandboxMiddlewareOptions>().toEqualTypeOf<'instances' | 'locks' | 'runs' | 'durability' | 'detachOnDisconnect' | 'snapshots'>()
    expectTypeOf<SandboxMiddlewareOptions['instances']>().toEqualTypeOf<SandboxInstanceStore | undefined>()
    expectTypeOf(withSandbox).returns.toExtend<ChatMiddleware>()
  })
})

describe('HarnessCommonOptions', () => {
  it('is the options every adapter accepts', () => {
    expectTypeOf<HarnessCommonOptions>().toEqualTypeOf<{
      cwd?: string
      env?: Record<string, string | SecretRef>
      extraArgs?: string[]
      timeoutMs?: number
      exitGraceMs?: number
      maxLineBytes?: number
    }>()
  })
})
