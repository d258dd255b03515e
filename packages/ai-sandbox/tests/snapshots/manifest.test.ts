/**
 * The snapshot manifest, pure: path order is UTF-8 byte order, the hash is
 * over one canonical JSON (key order and unknown fields do not matter to
 * it), and a restore's checks refuse every malformed or unsafe manifest with
 * the right reason, naming the entry.
 */
import { describe, expect, it } from 'vitest'
import { hashSandboxSnapshotManifest, SandboxSnapshotError, type SandboxSnapshotEntry, type SandboxSnapshotManifest } from '../../src/index.js'
import { comparePaths, unsafePathReason, verifySnapshotManifest } from '../../src/snapshots/manifest.js'
import { seededRandom } from '../helpers/seeded-random.js'

const SHA = 'a'.repeat(64)
const manifestOf = (entries: SandboxSnapshotEntry[]): SandboxSnapshotManifest => ({ version: 1, entries })
const verified = (manifest: SandboxSnapshotManifest, max = 1024) => verifySnapshotManifest(manifest, hashSandboxSnapshotManifest(manifest), max)

function failure(run: () => unknown): SandboxSnapshotError {
  try {
    run()
  } catch (error) {
    if (SandboxSnapshotError.isInstance(error)) return error
    throw error
  }
  throw new Error('expected a SandboxSnapshotError')
}

describe('comparePaths', () => {
  it('orders like the UTF-8 bytes, astral characters after U+E000..U+FFFF', () => {
    const random = seededRandom(7)
    const alphabet = ['a', 'b', '/', '-', '.', 'é', '\u{e000}', '\u{ffee}', '\u{1f600}', '名', ' ', '\n']
    const paths = Array.from({ length: 400 }, () => Array.from({ length: 1 + Math.floor(random() * 5) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''))
    const byBytes = [...paths].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    expect([...paths].sort(comparePaths)).toEqual(byBytes)
    expect(comparePaths('a', 'a/b')).toBeLessThan(0)
    expect(comparePaths('a-b', 'a/b')).toBeLessThan(0)
  })
})

describe('hashSandboxSnapshotManifest', () => {
  const manifest = manifestOf([
    { path: 'a.txt', type: 'file', mode: 0o644, size: 1, sha256: SHA },
    { path: 'empty', type: 'directory', mode: 0o755 },
  ])

  it('is 64 hex digits, stable across JSON round trips and key order', () => {
    const hash = hashSandboxSnapshotManifest(manifest)
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
    expect(hashSandboxSnapshotManifest(JSON.parse(JSON.stringify(manifest)) as SandboxSnapshotManifest)).toBe(hash)
    const shuffled = { entries: [{ sha256: SHA, size: 1, mode: 0o644, type: 'file', path: 'a.txt' }, { mode: 0o755, type: 'directory', path: 'empty' }], version: 1 } as unknown as SandboxSnapshotManifest
    expect(hashSandboxSnapshotManifest(shuffled)).toBe(hash)
  })

  it('changes with any field of any entry', () => {
    const hash = hashSandboxSnapshotManifest(manifest)
    const [file, dir] = manifest.entries as [Extract<SandboxSnapshotEntry, { type: 'file' }>, SandboxSnapshotEntry]
    for (const changed of [{ ...file, mode: 0o600 }, { ...file, size: 2 }, { ...file, sha256: 'b'.repeat(64) }, { ...file, path: 'b.txt' }]) {
      expect(hashSandboxSnapshotManifest(manifestOf([changed, dir]))).not.toBe(hash)
    }
  })
})

describe('unsafePathReason', () => {
  it.each(['', '/etc/passwd', '../x', 'a/../../x', './a', 'a/./b', 'a//b', 'a/', 'a\0b', '\ud800x', `${'x'.repeat(256)}`, `${'a/'.repeat(2100)}a`])('refuses %j', (path) => {
    expect(unsafePathReason(path)).toBeTypeOf('string')
  })

  it.each(['a', 'a/b/c.txt', '.hidden', '..a', 'a..', 'new\nline', 'ünï 名前', '\u{1f600}.txt', 'x'.repeat(255)])('accepts %j', (path) => {
    expect(unsafePathReason(path)).toBeUndefined()
  })
})

describe('verifySnapshotManifest', () => {
  const good: SandboxSnapshotEntry[] = [
    { path: 'a.txt', type: 'file', mode: 0o644, size: 1, sha256: SHA },
    { path: 'b/c.txt', type: 'file', mode: 0o400, size: 0, sha256: SHA },
    { path: 'empty', type: 'directory', mode: 0o700 },
  ]

  it('returns a good manifest', () => {
    expect(verified(manifestOf(good)).entries).toHaveLength(3)
  })

  it('refuses a wrong shape, an unknown field or another version as invalid-manifest', () => {
    for (const value of [null, {}, { version: 2, entries: [] }, { version: 1, entries: [{ path: 'a', type: 'symlink', mode: 0o777 }] }, { version: 1, entries: [{ ...good[0], extra: 1 }] }, { version: 1, entries: [], extra: 1 }]) {
      expect(failure(() => verifySnapshotManifest(value, SHA, 1024)).reason, JSON.stringify(value)).toBe('invalid-manifest')
    }
  })

  it('refuses a manifest whose hash differs, before anything else', () => {
    const error = failure(() => verifySnapshotManifest(manifestOf(good), SHA, 1024))
    expect(error.reason).toBe('manifest-hash-mismatch')
  })

  it.each([
    ['an absolute path', [{ path: '/etc/x', type: 'file', mode: 0o644, size: 0, sha256: SHA }], 'unsafe-path', '/etc/x'],
    ['a climbing path', [{ path: 'a/../../x', type: 'file', mode: 0o644, size: 0, sha256: SHA }], 'unsafe-path', 'a/../../x'],
    ['a NUL byte', [{ path: 'a\0b', type: 'directory', mode: 0o755 }], 'unsafe-path', 'a\0b'],
    ['an x bit on a file', [{ path: 'run.sh', type: 'file', mode: 0o744, size: 0, sha256: SHA }], 'invalid-manifest', 'run.sh'],
    ['setuid on a file', [{ path: 'f', type: 'file', mode: 0o4644, size: 0, sha256: SHA }], 'invalid-manifest', 'f'],
    ['sticky on a folder', [{ path: 'd', type: 'directory', mode: 0o1777 }], 'invalid-manifest', 'd'],
    ['a file over maxFileBytes', [{ path: 'big', type: 'file', mode: 0o644, size: 1025, sha256: SHA }], 'invalid-manifest', 'big'],
    ['an entry under a file', [{ path: 'a', type: 'file', mode: 0o644, size: 0, sha256: SHA }, { path: 'a/b', type: 'file', mode: 0o644, size: 0, sha256: SHA }], 'invalid-manifest', 'a/b'],
    ['an entry under an empty folder', [{ path: 'a', type: 'directory', mode: 0o755 }, { path: 'a/b', type: 'directory', mode: 0o755 }], 'invalid-manifest', 'a/b'],
    ['a repeated path', [{ path: 'a', type: 'directory', mode: 0o755 }, { path: 'a', type: 'directory', mode: 0o755 }], 'invalid-manifest', 'a'],
    ['entries out of order', [{ path: 'b', type: 'directory', mode: 0o755 }, { path: 'a', type: 'directory', mode: 0o755 }], 'invalid-manifest', 'a'],
  ] as [string, SandboxSnapshotEntry[], string, string][])('refuses %s (hash recomputed)', (_, entries, reason, path) => {
    const error = failure(() => verified(manifestOf(entries)))
    expect({ reason: error.reason, path: error.path }).toEqual({ reason, path })
    expect(error.message).toContain('nothing was written')
  })
})
