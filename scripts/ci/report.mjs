#!/usr/bin/env node
// Reads the vitest JSON reports `.ci/run` writes and prints where the time
// went: the slowest test files, a total per project (the folder whose
// `tests/` holds the file) and each failed test with the head of its message.
// With --total it prints only the closing line that
// counts the tests of every report given. It reads; it never decides whether
// CI passed (`.ci/run` does, from the exit codes).
// A file's time is its whole time from --times FILE (scripts/ci/file-times-reporter.mjs:
// setup, imports, tests and hooks) when that file exists, else the span of its
// tests in the JSON report.
// With --durations FILE it also writes each file's seconds there, the figures
// vitest.sequencer.ts orders files by.
// Usage: node scripts/ci/report.mjs <report.json> [--label NAME] [--slowest N] [--times FILE] [--durations FILE]
//        node scripts/ci/report.mjs --total <report.json>...
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'

const args = process.argv.slice(2)
const option = (name, fallback) => {
  const at = args.indexOf(name)
  return at === -1 ? fallback : args[at + 1]
}
const read = (file) => (file && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined)
const seconds = (ms) => (ms / 1000).toFixed(1)
const countLine = (reports, missing) => {
  const sum = (key) => reports.reduce((total, r) => total + (r[key] ?? 0), 0)
  const skipped = sum('numPendingTests') + sum('numTodoTests')
  return `${sum('numPassedTests')} passed, ${sum('numFailedTests')} failed${skipped ? `, ${skipped} skipped` : ''}${missing.length ? ` (no report from ${missing.join(', ')})` : ''}`
}

if (args[0] === '--total') {
  const files = args.slice(1)
  const reports = files.map(read)
  console.log(countLine(reports.filter(Boolean), files.filter((_, i) => !reports[i])))
  process.exit(0)
}

const file = args[0]
const label = option('--label', file)
const slowest = Number(option('--slowest', 25))
const report = read(file)
if (!report) {
  console.log(`\n${label}: no test report was written (${file})`)
  process.exit(0)
}

/** The checkout the report came from: `.ci/run` writes its reports in the repository's `.tmp/`. */
const repository = resolve(dirname(file), '..')

/** `packages/ai-sandbox/tests/x.test.ts` -> project `ai-sandbox`, and the path relative to the repository. */
const locate = (name) => {
  const path = relative(repository, name)
  const match = /^(?:packages|examples|testing)\/([^/]+)\//.exec(path)
  return { path, project: match ? match[1] : '(other)' }
}

const times = read(option('--times', undefined)) ?? {}
const files = (report.testResults ?? []).map((result) => {
  const tests = result.assertionResults ?? []
  const where = locate(result.name)
  return {
    ...where,
    ms: times[where.path]?.ms ?? Math.max(0, (result.endTime ?? 0) - (result.startTime ?? 0)),
    tests: tests.length,
    failed: result.status === 'failed',
  }
})

const top = [...files].sort((a, b) => b.ms - a.ms).slice(0, slowest)
console.log(`\n${label}: the ${top.length} slowest test files (seconds, tests, file)`)
for (const f of top) console.log(`${seconds(f.ms).padStart(8)} ${String(f.tests).padStart(5)}  ${f.path}${f.failed ? '  FAILED' : ''}`)

const projects = new Map()
for (const f of files) {
  const p = projects.get(f.project) ?? { ms: 0, files: 0, tests: 0 }
  projects.set(f.project, { ms: p.ms + f.ms, files: p.files + 1, tests: p.tests + f.tests })
}
console.log(`\n${label}: time per project (seconds summed over its files, which run side by side; files; tests)`)
for (const [name, p] of [...projects].sort((a, b) => b[1].ms - a[1].ms)) {
  console.log(`${seconds(p.ms).padStart(8)} ${String(p.files).padStart(5)} ${String(p.tests).padStart(6)}  ${name}`)
}
const total = files.reduce((sum, f) => ({ ms: sum.ms + f.ms, tests: sum.tests + f.tests }), { ms: 0, tests: 0 })
console.log(`${seconds(total.ms).padStart(8)} ${String(files.length).padStart(5)} ${String(total.tests).padStart(6)}  all`)
console.log(`${label}: ${countLine([report], [])}`)

// The failures by name, with the head of each message: CI shows only the end of its output, so the names must be here.
const failures = (report.testResults ?? []).flatMap((result) => [
  ...(result.assertionResults ?? [])
    .filter((test) => test.status === 'failed')
    .map((test) => ({ path: locate(result.name).path, name: test.fullName ?? test.title, message: (test.failureMessages ?? []).join('\n') })),
  // A file that failed outside its tests (an import error, a hook) has a message but no failed test.
  ...(result.status === 'failed' && !(result.assertionResults ?? []).some((test) => test.status === 'failed')
    ? [{ path: locate(result.name).path, name: '(the file itself)', message: result.message ?? '' }]
    : []),
])
const shown = 20
if (failures.length) console.log(`\n${label}: ${failures.length} failed (the first ${Math.min(shown, failures.length)}, each with the head of its message)`)
for (const f of failures.slice(0, shown)) {
  console.log(`  ${f.path} > ${f.name}`)
  const head = f.message.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '').split('\n').filter((line) => line.trim()).slice(0, 6)
  for (const line of head) console.log(`      ${line.length > 300 ? `${line.slice(0, 300)}...` : line}`)
}

const durations = option('--durations', undefined)
if (durations) {
  const byPath = Object.fromEntries([...files].sort((a, b) => a.path.localeCompare(b.path)).map((f) => [f.path, Math.round(f.ms / 100) / 10]))
  writeFileSync(durations, JSON.stringify(byPath, null, 2) + '\n')
  console.log(`wrote the ${files.length} files' seconds to ${durations}`)
}
