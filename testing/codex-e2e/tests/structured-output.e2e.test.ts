/**
 * Structured output with the real `codex` CLI on the local-process provider,
 * against aimock: `chat({ outputSchema })` writes the schema to a run file,
 * runs `codex exec --output-schema <file>`, Codex sends it to the model as the
 * Responses API's `text.format`, and the final message comes back as the typed
 * object (or as `structured-output.complete` on the stream); the file is gone
 * after the run. A prose answer and an object the schema rejects each end with
 * the documented error. afterAll checks for leftovers.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { chat, StandardSchemaValidationError, toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { codexText, STRUCTURED_OUTPUT_INVALID, type CodexOptions } from '@tanstack/ai-codex'
import { defineSandbox, withSandbox, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { codexBinary, FAKE_MODEL, makeCodexHome, startFakeModel, userTexts, type CodexHome, type FakeModel } from '../src/aimock.js'
import { custom, ofType, processesWithHome, recording, waitFor } from './helpers/run-codex.js'

const fixture = fileURLToPath(new URL('../fixtures/structured-output.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'codex-structured-e2e-'))
const provider = localProcessSandbox({ root })

const started: { models: FakeModel[]; homes: CodexHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
const allHomes: string[] = []
const schemaFiles: string[] = []

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
  expect(schemaFiles.filter((file) => existsSync(file)), 'every schema run file is removed').toEqual([])
})

/** The fake model, a HOME whose config.toml points Codex at it, and the adapter options, all removed after the test. */
async function setup(): Promise<{ model: FakeModel; options: CodexOptions }> {
  const model = await startFakeModel(fixture)
  started.models.push(model)
  const home = makeCodexHome(model.url, 'codex-structured-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, options: { executable: codexBinary(), env: home.env() } }
}

/** A sandbox (spawns recorded) whose thread sandbox is destroyed after the test. */
function sandboxFor(id: string, threadId: string, stdin = true): { sandbox: SandboxDefinition; spawned: string[] } {
  const spy = recording(provider, stdin)
  const sandbox = defineSandbox({ id, provider: spy.provider })
  started.sandboxes.push({ sandbox, threadId })
  return { sandbox, spawned: spy.spawned }
}

/** The `--output-schema` file of a spawned command (remembered for the leftover check). */
function schemaFileOf(command: string): string {
  const file = / --output-schema (\/tmp\/tanstack-codex\/[\w.-]+\.schema\.json) /.exec(command)?.[1]
  expect(file, 'the command passes --output-schema <run file>').toBeDefined()
  schemaFiles.push(file!)
  return file!
}

const user = (content: string): ModelMessage => ({ role: 'user', content })
const City = z.object({ city: z.string(), population: z.number(), landmarks: z.array(z.string()) })
const CITY_JSON_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'number' }, landmarks: { type: 'array', items: { type: 'string' } } }, required: ['city', 'population', 'landmarks'], additionalProperties: false }
const LISBON = { city: 'Lisbon', population: 545000, landmarks: ['Belém Tower', 'Alfama'] }

/** chat({ outputSchema, stream: true }) collected. */
async function streamed(input: { options: CodexOptions; sandbox: SandboxDefinition; threadId: string; prompt: string; outputSchema: z.ZodType }): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  const stream = chat({ adapter: codexText(FAKE_MODEL, input.options), threadId: input.threadId, messages: [user(input.prompt)], outputSchema: input.outputSchema, stream: true, middleware: [withSandbox(input.sandbox)] })
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

describe('structured output with the real Codex CLI', () => {
  it('chat({ outputSchema }) returns the typed object; the schema reached the model as text.format and its run file is removed', async () => {
    const { model, options } = await setup()
    const { sandbox, spawned } = sandboxFor('cx-so-object', 't-so-object')
    const city = await chat({ adapter: codexText(FAKE_MODEL, options), threadId: 't-so-object', messages: [user('Describe Lisbon')], outputSchema: City, middleware: [withSandbox(sandbox)] })

    expectTypeOf(city).toEqualTypeOf<z.infer<typeof City>>()
    expect(city).toEqual(LISBON)
    expect(spawned).toHaveLength(1)
    const file = schemaFileOf(spawned[0]!)
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual(['Describe Lisbon'])
    const body = model.bodies()[0] as { text?: { format?: unknown } }
    expect(body.text?.format).toEqual({ type: 'json_schema', strict: true, schema: CITY_JSON_SCHEMA, name: 'codex_output_schema' })
    expect(await waitFor(() => !existsSync(file)), `${file} is removed after the run`).toBe(true)
  })

  it('the streamed run carries structured-output.complete right before RUN_FINISHED, also without writable stdin', async () => {
    const { options } = await setup()
    const { sandbox, spawned } = sandboxFor('cx-so-stream', 't-so-stream', false)
    const chunks = await streamed({ options, sandbox, threadId: 't-so-stream', prompt: 'Describe Lisbon', outputSchema: City })

    const complete = custom(chunks, 'structured-output.complete')
    expect(complete).toHaveLength(1)
    expect(complete[0]!.value).toMatchObject({ object: LISBON, raw: '{"city":"Lisbon","population":545000,"landmarks":["Belém Tower","Alfama"]}' })
    const terminal = chunks.filter((c) => c.type === 'RUN_FINISHED' || c.type === 'RUN_ERROR')
    expect(terminal.map((c) => c.type)).toEqual(['RUN_FINISHED'])
    expect(chunks.indexOf(complete[0] as StreamChunk)).toBeLessThan(chunks.indexOf(terminal[0]!))
    // One start, before the complete event (the order core's own adapters use).
    const start = custom(chunks, 'structured-output.start')
    expect(start).toHaveLength(1)
    expect(chunks.indexOf(start[0] as StreamChunk)).toBeLessThan(chunks.indexOf(complete[0] as StreamChunk))
    // The prompt came from its file (a provider without writable stdin), the schema from its own.
    expect(spawned[0]).toMatch(/^\{ rm -f \/tmp\/tanstack-codex\/[\w.-]+\.prompt; /)
    expect(await waitFor(() => !existsSync(schemaFileOf(spawned[0]!)))).toBe(true)
  })

  it('combines chat() tools and the schema: a bridged host tool runs, then the final message is the object', async () => {
    const { model, options } = await setup()
    const { sandbox } = sandboxFor('cx-so-tools', 't-so-tools')
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
    const order = await chat({ adapter: codexText(FAKE_MODEL, options), threadId: 't-so-tools', messages: [user('Where is order A-17?')], tools: [lookup], outputSchema: Order, middleware: [withSandbox(sandbox)] })

    expect(order).toEqual({ orderId: 'A-17', status: 'shipped', carrier: 'Pelican Post' })
    expect(calls, 'the host tool ran once, on the host').toEqual(['A-17'])
    expect(model.requests()).toHaveLength(2)
    expect(model.bodies().map((b) => (b as { text?: { format?: { name?: string } } }).text?.format?.name), 'every request of the turn carries the schema').toEqual(['codex_output_schema', 'codex_output_schema'])
  })

  it('a prose answer ends the run with structured_output_invalid', async () => {
    const { options } = await setup()
    const { sandbox } = sandboxFor('cx-so-prose', 't-so-prose')
    const error = await rejection(chat({ adapter: codexText(FAKE_MODEL, options), threadId: 't-so-prose', messages: [user('Describe Atlantis')], outputSchema: City, middleware: [withSandbox(sandbox)] }))

    expect(error.code).toBe(STRUCTURED_OUTPUT_INVALID)
    expect(error.message).toMatch(/^codex: the agent's final message is not JSON/)
    expect(error.message).toContain('Atlantis is a myth; I cannot describe it.')

    const chunks = await streamed({ options, sandbox, threadId: 't-so-prose', prompt: 'Describe Atlantis', outputSchema: City })
    expect(custom(chunks, 'structured-output.complete')).toEqual([])
    expect(ofType(chunks, 'RUN_FINISHED')).toEqual([])
    expect(ofType(chunks, 'RUN_ERROR').map((c) => c.code)).toEqual([STRUCTURED_OUTPUT_INVALID])
  })

  it('JSON that does not match the schema is rejected by chat() (the CLI checks nothing); the stream carries it unvalidated', async () => {
    const { options } = await setup()
    const { sandbox } = sandboxFor('cx-so-mismatch', 't-so-mismatch')
    const Moons = z.object({ planet: z.string(), moons: z.number().int() })
    const error = await rejection(chat({ adapter: codexText(FAKE_MODEL, options), threadId: 't-so-mismatch', messages: [user('Count the moons of Mars')], outputSchema: Moons, middleware: [withSandbox(sandbox)] }))

    expect(error.code).toBe('structured-output-validation-failed')
    expect(error.cause).toBeInstanceOf(StandardSchemaValidationError)
    const chunks = await streamed({ options, sandbox, threadId: 't-so-mismatch', prompt: 'Count the moons of Mars', outputSchema: Moons })
    expect(custom(chunks, 'structured-output.complete')[0]?.value.object).toEqual({ planet: 'Mars', moons: 'two' })
    expect(ofType(chunks, 'RUN_FINISHED')).toHaveLength(1)
  })
})
