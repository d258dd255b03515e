/**
 * Structured output with the real `claude` CLI on the local-process provider,
 * against aimock: `chat({ outputSchema })` runs the CLI with `--json-schema`,
 * the CLI offers the model a `StructuredOutput` tool with the schema as its
 * input, and the accepted call comes back as the typed object (or as
 * `structured-output.complete` on the stream). A model that never calls the
 * tool, one the CLI rejects 5 times, and an object the schema's refinements
 * reject each end with the documented error. afterAll checks for leftovers.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { chat, StandardSchemaValidationError, toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { CLAUDE_STRUCTURED_OUTPUT_TOOL, claudeCodeText, STRUCTURED_OUTPUT_INVALID, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel, userTexts, type ClaudeHome, type FakeModel } from '../src/aimock.js'
import { custom, ofType, processesWithHome, recording } from './helpers/run-claude.js'

const fixture = fileURLToPath(new URL('../fixtures/structured-output.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-structured-e2e-'))
const provider = localProcessSandbox({ root })

const started: { models: FakeModel[]; homes: ClaudeHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const model of started.models.splice(0)) await model.stop()
  for (const home of started.homes.splice(0)) home.cleanup()
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
  expect(allHomes.filter((dir) => existsSync(dir)), 'every CLI HOME is removed').toEqual([])
  expect(allHomes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

/** The fake model, a HOME for the CLI and the adapter, all removed after the test. */
async function setup(): Promise<{ model: FakeModel; options: ClaudeCodeOptions }> {
  const model = await startFakeModel(fixture)
  started.models.push(model)
  const home = makeClaudeHome('claude-structured-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, options: { executable: claudeBinary(), env: home.env(model.url) } }
}

/** A sandbox (spawns recorded) whose thread sandbox is destroyed after the test. */
function sandboxFor(id: string, threadId: string): { sandbox: SandboxDefinition; spawned: string[] } {
  const spy = recording(provider, true)
  const sandbox = defineSandbox({ id, provider: spy.provider })
  started.sandboxes.push({ sandbox, threadId })
  return { sandbox, spawned: spy.spawned }
}

const user = (content: string): ModelMessage => ({ role: 'user', content })
const City = z.object({ city: z.string(), population: z.number(), landmarks: z.array(z.string()) })
const CITY_JSON_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' }, landmarks: { type: 'array', items: { type: 'string' } } }, required: ['city', 'population', 'landmarks'], additionalProperties: false }

/** The tools a journal entry offered the model, by name. */
function offeredTools(entry: ReturnType<FakeModel['requests']>[number]): Record<string, { parameters?: unknown }> {
  const tools = ((entry.body ?? {}) as { tools?: { function?: { name?: string; parameters?: unknown } }[] }).tools ?? []
  return Object.fromEntries(tools.map((t) => [t.function?.name ?? '', { parameters: t.function?.parameters }]))
}

/** chat({ outputSchema, stream: true }) collected. */
async function streamed(input: { options: ClaudeCodeOptions; sandbox: SandboxDefinition; threadId: string; prompt: string; outputSchema: z.ZodType }): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  const stream = chat({ adapter: claudeCodeText('sonnet', input.options), threadId: input.threadId, messages: [user(input.prompt)], outputSchema: input.outputSchema, stream: true, middleware: [withSandbox(input.sandbox)] })
  for await (const chunk of stream) chunks.push(chunk as StreamChunk)
  return chunks
}

/** What chat({ outputSchema }) rejected with. */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error, 'chat() rejects').toBeInstanceOf(Error)
  return error as Error & { code?: string }
}

describe('structured output with the real Claude Code CLI', () => {
  it('chat({ outputSchema }) returns the typed object the model gave through the StructuredOutput tool', async () => {
    const { model, options } = await setup()
    const { sandbox, spawned } = sandboxFor('cc-so-object', 't-so-object')
    const city = await chat({ adapter: claudeCodeText('sonnet', options), threadId: 't-so-object', messages: [user('Describe Lisbon')], outputSchema: City, middleware: [withSandbox(sandbox)] })

    expectTypeOf(city).toEqualTypeOf<z.infer<typeof City>>()
    expect(city).toEqual({ city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] })
    // chat() converted the schema; the CLI got it as --json-schema and offered it to the model as the StructuredOutput tool.
    expect(spawned).toHaveLength(1)
    expect(spawned[0]).toContain(` --json-schema '${JSON.stringify(CITY_JSON_SCHEMA)}'`)
    expect(model.requests()).toHaveLength(1)
    expect(offeredTools(model.requests()[0]!)[CLAUDE_STRUCTURED_OUTPUT_TOOL]?.parameters).toEqual(CITY_JSON_SCHEMA)
    expect(userTexts(model.requests()[0]!)).toEqual(['Describe Lisbon'])
  })

  it('the streamed run carries structured-output.complete right before RUN_FINISHED', async () => {
    const { options } = await setup()
    const { sandbox } = sandboxFor('cc-so-stream', 't-so-stream')
    const chunks = await streamed({ options, sandbox, threadId: 't-so-stream', prompt: 'Describe Lisbon', outputSchema: City })

    const complete = custom(chunks, 'structured-output.complete')
    expect(complete).toHaveLength(1)
    expect(complete[0]!.value).toMatchObject({ object: { city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] }, raw: JSON.stringify({ city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] }) })
    const terminal = chunks.filter((c) => c.type === 'RUN_FINISHED' || c.type === 'RUN_ERROR')
    expect(terminal.map((c) => c.type)).toEqual(['RUN_FINISHED'])
    expect(chunks.indexOf(complete[0] as StreamChunk)).toBeLessThan(chunks.indexOf(terminal[0]!))
    // One start, before the complete event (the order core's own adapters use).
    const start = custom(chunks, 'structured-output.start')
    expect(start).toHaveLength(1)
    expect(chunks.indexOf(start[0] as StreamChunk)).toBeLessThan(chunks.indexOf(complete[0] as StreamChunk))
    // The agent's own turn stays visible: its text and the StructuredOutput call.
    expect(ofType(chunks, 'TEXT_MESSAGE_CONTENT').map((c) => c.delta).join('')).toBe('Here is Lisbon.')
    expect(ofType(chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual([CLAUDE_STRUCTURED_OUTPUT_TOOL])
  })

  it('combines chat() tools and the schema: a bridged host tool runs, then the answer is the object', async () => {
    const { model, options } = await setup()
    const { sandbox } = sandboxFor('cc-so-tools', 't-so-tools')
    const calls: string[] = []
    const lookup = toolDefinition({
      name: 'lookup_order',
      description: 'Look up an order by id and return its status.',
      inputSchema: z.object({ orderId: z.string() }),
    }).server(async ({ orderId }) => {
      calls.push(orderId)
      return { orderId, status: 'shipped', carrier: 'Pelican Post' }
    })
    const Order = z.object({ orderId: z.string(), status: z.enum(['pending', 'shipped']), carrier: z.string() })
    const order = await chat({ adapter: claudeCodeText('sonnet', options), threadId: 't-so-tools', messages: [user('Where is order A-17?')], tools: [lookup], outputSchema: Order, middleware: [withSandbox(sandbox)] })

    expect(order).toEqual({ orderId: 'A-17', status: 'shipped', carrier: 'Pelican Post' })
    expect(calls, 'the host tool ran once, on the host').toEqual(['A-17'])
    expect(model.requests()).toHaveLength(2)
    // The bridged tool is one of the CLI's deferred MCP tools; StructuredOutput is offered beside them.
    expect(offeredTools(model.requests()[0]!)[CLAUDE_STRUCTURED_OUTPUT_TOOL]?.parameters).toMatchObject({ required: ['orderId', 'status', 'carrier'] })
  })

  it('a model that never calls StructuredOutput ends the run with structured_output_invalid', async () => {
    const { model, options } = await setup()
    const { sandbox } = sandboxFor('cc-so-no-call', 't-so-no-call')
    const error = await rejection(chat({ adapter: claudeCodeText('sonnet', options), threadId: 't-so-no-call', messages: [user('Describe Atlantis')], outputSchema: City, middleware: [withSandbox(sandbox)] }))

    expect(error.code).toBe(STRUCTURED_OUTPUT_INVALID)
    expect(error.message).toContain('without calling the StructuredOutput tool')
    expect(error.message).toContain('Still a myth')
    // The CLI asked once more ("[structured-output-enforce] You MUST call the StructuredOutput tool") before giving up.
    expect(model.requests()).toHaveLength(2)

    const chunks = await streamed({ options, sandbox, threadId: 't-so-no-call', prompt: 'Describe Atlantis', outputSchema: City })
    expect(custom(chunks, 'structured-output.complete')).toEqual([])
    expect(ofType(chunks, 'RUN_FINISHED')).toEqual([])
    expect(ofType(chunks, 'RUN_ERROR').map((c) => c.code)).toEqual([STRUCTURED_OUTPUT_INVALID])
  })

  it('an answer the CLI rejects against the schema 5 times ends with structured_output_invalid and its reason', async () => {
    const { model, options } = await setup()
    const { sandbox } = sandboxFor('cc-so-retries', 't-so-retries')
    const Moons = z.object({ planet: z.string(), moons: z.number().int() })
    const error = await rejection(chat({ adapter: claudeCodeText('sonnet', options), threadId: 't-so-retries', messages: [user('Count the moons of Mars')], outputSchema: Moons, middleware: [withSandbox(sandbox)] }))

    expect(error.code).toBe(STRUCTURED_OUTPUT_INVALID)
    expect(error.message).toContain('Failed to provide valid structured output after 5 attempts')
    expect(error.message).toContain('/moons: must be integer')
    expect(model.requests()).toHaveLength(5)
  })

  it('an object that passes the JSON Schema but fails the zod schema is rejected by chat() (validation happens there)', async () => {
    const { options } = await setup()
    const { sandbox } = sandboxFor('cc-so-refine', 't-so-refine')
    const isPrime = (n: number) => n > 1 && Array.from({ length: Math.floor(Math.sqrt(n)) - 1 }, (_, i) => i + 2).every((d) => n % d !== 0)
    const Prime = z.object({ prime: z.number().int().refine(isPrime, 'not a prime') })
    const error = await rejection(chat({ adapter: claudeCodeText('sonnet', options), threadId: 't-so-refine', messages: [user('Pick a prime number')], outputSchema: Prime, middleware: [withSandbox(sandbox)] }))

    expect(error.code).toBe('structured-output-validation-failed')
    expect(error.message).toContain('not a prime')
    expect(error.cause).toBeInstanceOf(StandardSchemaValidationError)
    // The stream does not validate (chat()'s documented behaviour): it carries the object as the model gave it.
    const chunks = await streamed({ options, sandbox, threadId: 't-so-refine', prompt: 'Pick a prime number', outputSchema: Prime })
    expect(custom(chunks, 'structured-output.complete')[0]?.value.object).toEqual({ prime: 4 })
  })
})
