/**
 * How a value is written so OpenCode's `{env:…}` / `{file:…}` substitution
 * leaves it as declared: through a `{file:…}` file when it holds either
 * form, with the blanks around it kept in the config (OpenCode trims file
 * content). The real CLI reading such values is in testing/opencode-e2e.
 */
import { describe, expect, it } from 'vitest'
import { envSubstitutable, unsendableHeader, verbatimValue } from '../src/verbatim-value.js'

const at = (path: string) => () => path

describe('verbatimValue', () => {
  it('writes a value without {env: or {file: as it is, needing no file', () => {
    const calls: string[] = []
    for (const value of ['${HOME}', '$HOME', 'a\\b"c', '{env HOME}', '{fileX}', 'héllo ✓', '', '  ']) {
      expect(verbatimValue(value, () => (calls.push(value), '/unused'))).toEqual({ text: value })
    }
    expect(calls, 'no file was asked for').toEqual([])
  })

  it('moves a value holding {env: or {file: into a file, keeping the blanks around it in the config', () => {
    expect(verbatimValue('{env:HOME}', at('/w/v/a.0'))).toEqual({ text: '{file:/w/v/a.0}', file: { path: '/w/v/a.0', content: '{env:HOME}' } })
    expect(verbatimValue(' \t{file:/etc/hostname} x\n ', at('/w/v/a.1'))).toEqual({ text: ' \t{file:/w/v/a.1}\n ', file: { path: '/w/v/a.1', content: '{file:/etc/hostname} x' } })
    expect(verbatimValue('a {env:', at('/w/v/a.2')), 'an unclosed form too: OpenCode would match up to the next } in the file').toEqual({ text: '{file:/w/v/a.2}', file: { path: '/w/v/a.2', content: 'a {env:' } })
  })
})

describe('envSubstitutable', () => {
  it('refuses what OpenCode would break or substitute again after inserting the value', () => {
    expect(envSubstitutable('ghp_abc-123 ${HOME} {env:HOME} é')).toBe(true)
    for (const bad of ['a"b', 'a\\b', 'a\nb', 'a\u0001b', 'x{file:/etc/hostname}']) expect(envSubstitutable(bad), JSON.stringify(bad)).toBe(false)
  })
})

describe('unsendableHeader', () => {
  it('flags what OpenCode cannot send: a character above U+00FF, or non-ASCII in a value over 12 characters', () => {
    for (const ok of ['plain ascii value well over twelve characters', 'héllo ñ ß ÿ', 'éééééééééééé']) expect(unsendableHeader(ok), ok).toBe(false)
    for (const bad of ['✓', '🚀', 'ééééééééééééé', 'héllo wörld ñ']) expect(unsendableHeader(bad), bad).toBe(true)
  })
})
