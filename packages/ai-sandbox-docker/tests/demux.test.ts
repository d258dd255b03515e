// The exec stream demultiplexer on hand-made frames: headers and payloads
// split at every possible byte boundary, stdin frames dropped, truncation
// noticed. Pure: no engine needed.
import { describe, expect, it } from 'vitest'
import { Demuxer } from '../src/demux.js'

function frame(type: number, text: string): Buffer {
  const payload = Buffer.from(text)
  const header = Buffer.alloc(8)
  header[0] = type
  header.writeUInt32BE(payload.length, 4)
  return Buffer.concat([header, payload])
}

function run(chunks: Buffer[]) {
  const out: Buffer[] = []
  const err: Buffer[] = []
  const demux = new Demuxer({ stdout: (b) => out.push(Buffer.from(b)), stderr: (b) => err.push(Buffer.from(b)) })
  for (const chunk of chunks) demux.push(chunk)
  return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), truncated: demux.truncated }
}

describe('Demuxer', () => {
  const stream = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(0, 'stdin echo'), frame(1, 'wörld ✓'), frame(1, '')])

  it('splits stdout and stderr from one chunk', () => {
    expect(run([stream])).toEqual({ stdout: 'hello wörld ✓', stderr: 'oops', truncated: false })
  })

  it('gives the same result for every split point and for byte-by-byte delivery', () => {
    for (let cut = 1; cut < stream.length; cut++) {
      expect(run([stream.subarray(0, cut), stream.subarray(cut)])).toEqual({ stdout: 'hello wörld ✓', stderr: 'oops', truncated: false })
    }
    expect(run([...stream].map((byte) => Buffer.from([byte])))).toEqual({ stdout: 'hello wörld ✓', stderr: 'oops', truncated: false })
  })

  it('notices a stream that ends inside a frame', () => {
    expect(run([stream.subarray(0, 10)]).truncated).toBe(true)
    expect(run([stream.subarray(0, 3)]).truncated).toBe(true)
  })
})
