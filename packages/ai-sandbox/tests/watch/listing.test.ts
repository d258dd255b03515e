/**
 * The poll watcher's pure parts: the listing command (run here with the host's
 * GNU tools; the Docker suites of testing/sandbox-e2e run it on BusyBox and
 * Debian), its parser, the signature reader and the listing diff.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { WorkspaceWatchError } from '../../src/index.js'
import { diffListings, listCommand, listedStat, parseListing } from '../../src/watch/listing.js'

const dir = mkdtempSync(join(tmpdir(), 'tsbx-listing-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const SIG = '12 3 2026-11-29 09:27:09.542328599 +0000'

/** One batch as the command prints it: NUL-terminated names in base64 (wrapped at 76), `:`, then `lines`. */
function batch(names: readonly (string | Buffer)[], lines: readonly string[]): string {
  const encoded = Buffer.concat(names.flatMap((name) => [Buffer.from(name), Buffer.from([0])])).toString('base64')
  return `${encoded.match(/.{1,76}/g)!.join('\n')}\n:\n${lines.map((line) => `${line}\n`).join('')}`
}

/** Run the listing command in `cwd` with the host tools. */
const list = (cwd: string, ignore: readonly string[] = []) => execFileSync('sh', ['-c', listCommand(ignore)], { cwd, encoding: 'utf8' })

describe('listCommand', () => {
  it('prunes names at any depth and slash entries as paths, quoted, with tools GNU and BusyBox share', () => {
    const command = listCommand(['.git', 'node_modules', 'dist/cache', "a b'; rm -rf ~"])
    expect(command).toContain("find . \\( -name .git -o -name node_modules -o -path ./dist/cache -o -name 'a b'\\''; rm -rf ~' \\) -prune -o \\( -type f -o -type l \\) -exec sh -c ")
    expect(command).toMatch(/ sh \{\} \+$/)
    for (const unportable of ['-printf', '-print0', 'base64 -w', '--printf', 'xxd', 'hexdump']) expect(command).not.toContain(unportable)
    expect(listCommand([])).toContain('find . \\( -type f -o -type l \\) -exec sh -c ')
  })

  it('lists files and symlinks, not directories, and skips ignored trees', () => {
    const root = join(dir, 'plain')
    mkdirSync(join(root, 'src/deep'), { recursive: true })
    mkdirSync(join(root, 'node_modules/pkg'), { recursive: true })
    mkdirSync(join(root, 'dist/cache'), { recursive: true })
    writeFileSync(join(root, 'src/deep/a b.txt'), 'x')
    writeFileSync(join(root, 'node_modules/pkg/index.js'), 'x')
    writeFileSync(join(root, 'dist/cache/big.bin'), 'x')
    writeFileSync(join(root, 'dist/out.js'), 'x')
    symlinkSync('src/deep/a b.txt', join(root, 'link'))
    const listing = parseListing(list(root, ['node_modules', 'dist/cache']))
    expect([...listing.keys()].sort()).toEqual(['dist/out.js', 'link', 'src/deep/a b.txt'])
    for (const signature of listing.values()) expect(signature).toMatch(/^\d+ \d+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ [+-]\d{4}$/)
  })

  it('carries any byte but NUL in a name; a name that is not UTF-8 is left out and reported', () => {
    const root = join(dir, 'odd')
    mkdirSync(join(root, 'sub'), { recursive: true })
    const names = ['line\nbreak.txt', 'evil\n1 1 2026-01-01 00:00:00.000000000 +0000|..', 'pipe|name', 'back\\slash', '-dash', 'trailing\n', 'tab\there', 'ünï', 'sub/: colon', 'sub/!']
    for (const name of names) writeFileSync(join(root, name), 'x')
    writeFileSync(join(root, 'sub/bad\uFFFD'), 'x') // a real U+FFFD in a name is valid UTF-8
    execFileSync('sh', ['-c', "printf x > \"sub/$(printf 'bad\\377')\""], { cwd: root })
    const skipped: string[] = []
    const listing = parseListing(list(root), (name, why) => void skipped.push(`${why} ${name}`))
    expect([...listing.keys()].sort()).toEqual([...names, 'sub/bad\uFFFD'].sort())
    expect(skipped).toEqual(['not-utf8 ./sub/bad\\xff'])
  })
  it('leaves out a file that is gone by the time stat runs, keeping the rest of its batch', () => {
    const root = join(dir, 'vanishing')
    const shim = join(dir, 'shim')
    mkdirSync(root)
    mkdirSync(shim)
    for (const name of ['a', 'b', 'c']) writeFileSync(join(root, name), 'x')
    // A stat that removes ./b first: the batch's stat fails part-way, as when a file vanishes mid-listing.
    const realStat = execFileSync('sh', ['-c', 'command -v stat'], { encoding: 'utf8' }).trim()
    writeFileSync(join(shim, 'stat'), `#!/bin/sh\nrm -f ./b\nexec ${realStat} "$@"\n`, { mode: 0o755 })
    const stdout = execFileSync('sh', ['-c', listCommand([])], { cwd: root, encoding: 'utf8', env: { ...process.env, PATH: `${shim}:${process.env.PATH}` } })
    expect(stdout).toContain('\n!\n')
    expect([...parseListing(stdout).keys()].sort()).toEqual(['a', 'c'])
  })
})

describe('parseListing', () => {
  it('pairs each batch\'s names with its signature lines, over several batches', () => {
    const stdout = batch(['./a/x.txt', './odd|name'], [SIG, '13 0 2026-11-29 09:27:10.000000000 +0000']) + batch(['./b'], ['14 1 2026-11-29 09:27:11 +0100'])
    expect([...parseListing(stdout)]).toEqual([
      ['a/x.txt', SIG],
      ['odd|name', '13 0 2026-11-29 09:27:10.000000000 +0000'],
      ['b', '14 1 2026-11-29 09:27:11 +0100'],
    ])
    expect(parseListing('').size).toBe(0)
  })

  it('leaves out a file gone before stat (`-`), and restarts a batch after `!`', () => {
    expect([...parseListing(batch(['./gone', './kept'], ['-', SIG])).keys()]).toEqual(['kept'])
    // stat failed part-way: its partial lines, then `!`, then one line per name.
    expect([...parseListing(batch(['./a', './gone', './c'], [SIG, SIG, '!', SIG, '-', SIG]) + batch(['./d'], [SIG])).keys()]).toEqual(['a', 'c', 'd'])
  })

  it('leaves out names that are not plain paths below . and reports them', () => {
    const skipped: string[] = []
    const names = ['./..', '../x', './a/../b', './a//b', '/etc/passwd', './.', './ok']
    const listing = parseListing(batch(names, names.map(() => SIG)), (name, why) => void skipped.push(`${why} ${name}`))
    expect([...listing.keys()]).toEqual(['ok'])
    expect(skipped).toEqual(names.slice(0, -1).map((name) => `not-plain ${name}`))
    expect([...parseListing(batch([Buffer.from([0x2e, 0x2f, 0xc3])], [SIG]), (name, why) => void skipped.push(`${why} ${name}`)).keys()]).toEqual([])
    expect(skipped.at(-1)).toBe('not-utf8 ./\\xc3')
  })

  it('throws list-failed for output that is not a listing, rather than reading it as deletions', () => {
    const cases = [
      `${SIG}|./a\n`, // the old line format
      'Li9hAA==\n', // no separator
      'Li9hAA==\n:\n', // fewer signatures than names
      'Li9hAA==\n:\nnot a signature\n',
      'Li9h\n:\n' + `${SIG}\n`, // names not NUL-terminated
    ]
    for (const stdout of cases) {
      const error = (() => {
        try {
          parseListing(stdout)
        } catch (caught) {
          return caught
        }
        return undefined
      })()
      expect(error, JSON.stringify(stdout)).toBeInstanceOf(WorkspaceWatchError)
      expect((error as WorkspaceWatchError).reason).toBe('list-failed')
    }
  })
})

describe('listedStat', () => {
  it('reads size and mtime in epoch ms with the fraction, honouring the zone', () => {
    expect(listedStat(SIG)).toEqual({ size: 3, mtimeMs: Date.UTC(2026, 10, 29, 9, 27, 9) + 542.328599 })
    expect(listedStat('1 7 2026-11-29 10:27:09 +0100')).toEqual({ size: 7, mtimeMs: Date.UTC(2026, 10, 29, 9, 27, 9) })
    expect(listedStat('garbage')).toBeNull()
  })
})

describe('diffListings', () => {
  it('reports creates, changes and deletes sorted by path', () => {
    const before = new Map([
      ['b.txt', '1 1 t1'],
      ['a.txt', '2 1 t1'],
      ['gone.txt', '3 1 t1'],
    ])
    const after = new Map([
      ['b.txt', '1 2 t2'],
      ['a.txt', '2 1 t1'],
      ['new.txt', '4 1 t2'],
    ])
    expect(diffListings(before, after)).toEqual([
      { type: 'change', path: 'b.txt' },
      { type: 'delete', path: 'gone.txt' },
      { type: 'create', path: 'new.txt' },
    ])
  })

  it('treats a null signature (reported by a native watcher) as unchanged while the file exists', () => {
    expect(diffListings(new Map([['a', null]]), new Map([['a', '1 1 t']]))).toEqual([])
    expect(diffListings(new Map([['a', null]]), new Map())).toEqual([{ type: 'delete', path: 'a' }])
  })

  it('reports nothing for equal listings', () => {
    const same = new Map([['a', '1 1 t']])
    expect(diffListings(same, new Map(same))).toEqual([])
  })
})
