// A vitest reporter that writes how long each test file took, whole: the
// harness setup, the import of the file and everything it loads, its tests
// and its hooks (vitest's module diagnostic). The JSON reporter's start and
// end times cover only the tests, so a file whose time goes to imports or to
// an afterAll that removes containers looked shorter than it was.
// `.ci/run` passes it with `--reporter=./scripts/ci/file-times-reporter.mjs`
// and names the output in TANSTACK_FILE_TIMES; scripts/ci/report.mjs reads it.
// Output: { "<repository-relative path>": { "project": name, "ms": number } }.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, relative } from 'node:path'

export default class FileTimesReporter {
  /** @type {Record<string, { project: string, ms: number }>} */
  times = {}

  /** @param {import('vitest/node').TestModule} testModule */
  onTestModuleEnd(testModule) {
    const d = testModule.diagnostic()
    const ms = d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration
    this.times[relative(process.cwd(), testModule.moduleId)] = { project: testModule.project.name, ms: Math.round(ms) }
  }

  onTestRunEnd() {
    const out = process.env.TANSTACK_FILE_TIMES
    if (!out) return
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, JSON.stringify(this.times, null, 2) + '\n')
  }
}
