/**
 * Debian's chromium through playwright-core, as the repository's browser
 * suites drive it (never a browser of Playwright's own: no network here),
 * and the gate of a browser case: run it when chromium is there (or root and
 * apt can install it with scripts/chromium/install.sh), else skip it naming
 * what is missing, or fail under REQUIRE_CHROMIUM=1, as CI sets it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { expect, it } from 'vitest'

const CHROMIUM = '/usr/bin/chromium'
const INSTALL = fileURLToPath(new URL('../../../../scripts/chromium/install.sh', import.meta.url))
/** TESTING.md's flags; playwright-core adds a fresh temporary --user-data-dir per launch itself. */
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** Why no browser case can run here, or `null`. */
function chromiumMissing(): string | null {
  if (existsSync(CHROMIUM) || (process.getuid?.() === 0 && existsSync('/usr/bin/apt-get'))) return null
  return `chromium is not at ${CHROMIUM} and cannot be installed here (scripts/chromium/install.sh needs root and apt)`
}

/** `it(name, body, timeout)` when a browser can run; otherwise a skip naming what is missing, or a failure under REQUIRE_CHROMIUM=1. */
export function itInBrowser(name: string, body: () => Promise<void>, timeout: number): void {
  const missing = chromiumMissing()
  if (missing === null) it(name, body, timeout)
  else if (process.env.REQUIRE_CHROMIUM === '1') it(`${name} (needs chromium, REQUIRE_CHROMIUM=1)`, () => expect.fail(missing))
  else it.skip(`${name}: skipped, ${missing}`, () => undefined)
}

/** Install chromium when it is missing (root and apt), then launch it headless. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) execFileSync(INSTALL, { stdio: 'inherit', timeout: 300_000 })
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 })
}
