/**
 * The poll watcher's pure parts: the listing command, its parser and the
 * listing diff. The command itself runs against GNU and BusyBox tools in the
 * Docker suites of testing/sandbox-e2e.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { diffListings, listCommand, parseListing } from '../../src/watch/listing.js'

const dir = mkdtempSync(join(tmpdir(), 'tsbx-listing-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('listCommand', () => {
  it('prunes names at any depth and slash entries as paths, and never uses find -printf', () => {
    const command = listCommand(['.git', 'node_modules', 'dist/cache'])
    expect(command).toBe("find . \\( -name .git -o -name node_modules -o -path ./dist/cache \\) -prune -o \\( -type f -o -type l \\) -exec stat -c '%i %s %y|%n' {} +")
    expect(command).not.toContain('-printf')
    expect(listCommand([])).toBe("find . \\( -type f -o -type l \\) -exec stat -c '%i %s %y|%n' {} +")
  })

  it('quotes entries so a name cannot inject shell', () => {
    expect(listCommand(["a b'; rm -rf ~"])).toContain("-name 'a b'\\''; rm -rf ~'")
  })

  it('lists files and symlinks, not directories, and skips ignored trees (run with the host tools)', () => {
    mkdirSync(join(dir, 'src/deep'), { recursive: true })
    mkdirSync(join(dir, 'node_modules/pkg'), { recursive: true })
    mkdirSync(join(dir, 'dist/cache'), { recursive: true })
    writeFileSync(join(dir, 'src/deep/a b.txt'), 'x')
    writeFileSync(join(dir, 'node_modules/pkg/index.js'), 'x')
    writeFileSync(join(dir, 'dist/cache/big.bin'), 'x')
    writeFileSync(join(dir, 'dist/out.js'), 'x')
    symlinkSync('src/deep/a b.txt', join(dir, 'link'))
    const stdout = execFileSync('sh', ['-c', listCommand(['node_modules', 'dist/cache'])], { cwd: dir, encoding: 'utf8' })
    expect([...parseListing(stdout).keys()].sort()).toEqual(['dist/out.js', 'link', 'src/deep/a b.txt'])
  })
})

describe('parseListing', () => {
  it('maps the path without ./ to the signature before the first |', () => {
    const listing = parseListing('12 3 2026-11-29 09:27:09.542328599 +0000|./a/x.txt\n13 0 2026-11-29 09:27:10.000000000 +0000|./odd|name\n')
    expect([...listing]).toEqual([
      ['a/x.txt', '12 3 2026-11-29 09:27:09.542328599 +0000'],
      ['odd|name', '13 0 2026-11-29 09:27:10.000000000 +0000'],
    ])
  })

  it('skips lines without a separator (the tail of a name with a newline) and empty output', () => {
    expect([...parseListing('1 1 t|./first\nsecond-half\n\n').keys()]).toEqual(['first'])
    expect(parseListing('').size).toBe(0)
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
