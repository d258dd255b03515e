// The order test files start in: longest first, across every project, so the
// few long end-to-end files start at once and the short ones fill the workers
// around them (vitest's own order groups files by project name, which can
// leave the longest file to start last and add its whole length to the run).
// A file's expected time is vitest's own cached figure from an earlier run on
// this machine, else the one CI last measured (scripts/ci/test-durations.json,
// refreshed with `node scripts/ci/report.mjs .tmp/vitest-results.json
// --times .tmp/file-times-node20.json --durations scripts/ci/test-durations.json`), else unknown: unknown files go
// after the known ones, larger first. It changes the order only, never what runs.
import { existsSync, readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const root = fileURLToPath(new URL('.', import.meta.url))
const RECORDED = fileURLToPath(new URL('scripts/ci/test-durations.json', import.meta.url))

/** Seconds per repository-relative test file, as CI last measured them. */
function recorded(): Record<string, number> {
  if (!existsSync(RECORDED)) return {}
  try {
    return JSON.parse(readFileSync(RECORDED, 'utf8')) as Record<string, number>
  } catch {
    return {}
  }
}

/** Vitest's default sequencer with `sort` ordering files longest first (see the module header). */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const measured = recorded()
    const expectedMs = (spec: TestSpecification): number | undefined => {
      const path = relative(root, spec.moduleId)
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)
      return cached?.duration ?? (path in measured ? measured[path]! * 1000 : undefined)
    }
    const size = (spec: TestSpecification): number => this.ctx.cache.getFileStats(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)?.size ?? 0
    return [...files].sort((a, b) => {
      const [ea, eb] = [expectedMs(a), expectedMs(b)]
      if (ea !== undefined && eb !== undefined) return eb - ea
      if (ea !== undefined) return -1
      if (eb !== undefined) return 1
      return size(b) - size(a)
    })
  }
}
