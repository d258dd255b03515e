/**
 * Bridge events as chunks: the channel's CUSTOM chunk shapes, the merge that
 * interleaves them into an adapter stream without ever waiting on the bridge,
 * and the out-of-band predicate.
 */
import type { StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { createBridgeEventChannel, isBridgeCustomChunk, mergeChunkStreams, toolBridgeEventOf, TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT } from '../../src/index.js'

const text = (delta: string) => ({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta }) as unknown as StreamChunk

/** A primary stream whose items the test releases one by one. */
function gate() {
  const items: StreamChunk[] = []
  const waiters: (() => void)[] = []
  let ended = false
  let returned = false
  const push = (chunk: StreamChunk) => {
    items.push(chunk)
    waiters.splice(0).forEach((w) => w())
  }
  async function* stream(): AsyncGenerator<StreamChunk> {
    try {
      for (;;) {
        while (items.length === 0 && !ended) await new Promise<void>((resolve) => waiters.push(resolve))
        if (items.length === 0) return
        yield items.shift()!
      }
    } finally {
      returned = true
    }
  }
  return {
    stream,
    push,
    end: () => {
      ended = true
      waiters.splice(0).forEach((w) => w())
    },
    get returned() {
      return returned
    },
  }
}

describe('createBridgeEventChannel', () => {
  it('turns events into CUSTOM chunks named by kind, and ends after close', async () => {
    const channel = createBridgeEventChannel()
    channel.onEvent({ type: 'call', toolCallId: 't1', toolName: 'add', input: { a: 1 } })
    channel.onEvent({ type: 'custom', toolCallId: 't1', toolName: 'add', name: 'progress', value: { step: 1 } })
    channel.onEvent({ type: 'result', toolCallId: 't1', toolName: 'add', isError: false, content: '2' })
    channel.close()
    channel.onEvent({ type: 'result', toolCallId: 't2', toolName: 'add', isError: false, content: 'late' })
    const chunks: unknown[] = []
    for await (const chunk of channel.stream) chunks.push(chunk)
    expect(chunks).toEqual([
      { type: 'CUSTOM', name: TOOL_BRIDGE_CALL_EVENT, value: { toolCallId: 't1', toolName: 'add', input: { a: 1 } } },
      { type: 'CUSTOM', name: 'progress', value: { step: 1, toolCallId: 't1' } },
      { type: 'CUSTOM', name: TOOL_BRIDGE_RESULT_EVENT, value: { toolCallId: 't1', toolName: 'add', isError: false, content: '2' } },
    ])
    expect([TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT]).toEqual(['tool-bridge.call', 'tool-bridge.result'])
  })
})

describe('mergeChunkStreams', () => {
  it('interleaves bridge chunks in arrival order and ends with the primary, draining what is ready', async () => {
    const primary = gate()
    const channel = createBridgeEventChannel()
    const out: string[] = []
    const merged = (async () => {
      for await (const chunk of mergeChunkStreams(primary.stream(), channel.stream)) out.push(chunk.type === 'CUSTOM' ? (chunk as { name: string }).name : (chunk as { delta: string }).delta)
    })()
    const settle = () => new Promise((resolve) => setImmediate(resolve))
    primary.push(text('a'))
    await settle()
    channel.onEvent({ type: 'call', toolCallId: 't', toolName: 'x', input: {} })
    await settle()
    primary.push(text('b'))
    await settle()
    channel.onEvent({ type: 'result', toolCallId: 't', toolName: 'x', isError: false, content: '' })
    primary.end()
    await merged
    expect(out).toEqual(['a', TOOL_BRIDGE_CALL_EVENT, 'b', TOOL_BRIDGE_RESULT_EVENT])
  })

  it('does not wait for an open side stream once the primary ended', async () => {
    const channel = createBridgeEventChannel()
    async function* primary() {
      yield text('only')
    }
    const out: StreamChunk[] = []
    for await (const chunk of mergeChunkStreams(primary(), channel.stream)) out.push(chunk)
    expect(out).toHaveLength(1)
  })

  it('stops the primary when the consumer leaves early', async () => {
    const primary = gate()
    const channel = createBridgeEventChannel()
    primary.push(text('a'))
    for await (const chunk of mergeChunkStreams(primary.stream(), channel.stream)) {
      expect(chunk.type).toBe('TEXT_MESSAGE_CONTENT')
      break
    }
    expect(primary.returned, 'suspended at a yield: returned at once').toBe(true)
  })

  it('returns a primary whose read was pending when the consumer left, once that read settles', async () => {
    const primary = gate()
    const channel = createBridgeEventChannel()
    channel.onEvent({ type: 'call', toolCallId: 't', toolName: 'x', input: {} })
    for await (const chunk of mergeChunkStreams(primary.stream(), channel.stream)) {
      expect(chunk.type).toBe('CUSTOM')
      break
    }
    expect(primary.returned).toBe(false)
    primary.push(text('late'))
    await new Promise((resolve) => setImmediate(resolve))
    expect(primary.returned).toBe(true)
  })

  it('passes a primary error through', async () => {
    async function* failing(): AsyncGenerator<StreamChunk> {
      yield text('a')
      throw new Error('cli crashed')
    }
    const run = async () => {
      for await (const chunk of mergeChunkStreams(failing(), createBridgeEventChannel().stream)) void chunk
    }
    await expect(run()).rejects.toThrow('cli crashed')
  })
})

describe('isBridgeCustomChunk', () => {
  it('is true for every CUSTOM chunk and false otherwise', () => {
    expect(isBridgeCustomChunk({ type: 'CUSTOM', name: TOOL_BRIDGE_RESULT_EVENT, value: {} } as unknown as StreamChunk)).toBe(true)
    expect(isBridgeCustomChunk({ type: 'CUSTOM', name: 'anything-a-tool-emits', value: {} } as unknown as StreamChunk)).toBe(true)
    expect(isBridgeCustomChunk(text('x'))).toBe(false)
  })
})

describe('toolBridgeEventOf', () => {
  it('reads call and result chunks back, typed, and nothing else', async () => {
    const channel = createBridgeEventChannel()
    channel.onEvent({ type: 'call', toolCallId: 't1', toolName: 'add', input: { a: 1 } })
    channel.onEvent({ type: 'result', toolCallId: 't1', toolName: 'add', isError: true, content: 'boom' })
    channel.onEvent({ type: 'custom', toolCallId: 't1', toolName: 'add', name: 'progress', value: {} })
    channel.close()
    const read = []
    for await (const chunk of channel.stream) read.push(toolBridgeEventOf(chunk))
    expect(read).toEqual([
      { name: TOOL_BRIDGE_CALL_EVENT, value: { toolCallId: 't1', toolName: 'add', input: { a: 1 } } },
      { name: TOOL_BRIDGE_RESULT_EVENT, value: { toolCallId: 't1', toolName: 'add', isError: true, content: 'boom' } },
      undefined,
    ])
    expect(toolBridgeEventOf(text('x'))).toBeUndefined()
  })
})
