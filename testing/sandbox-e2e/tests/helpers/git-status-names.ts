/**
 * One git status scenario for every provider: a repository whose changed
 * paths hold spaces, quotes, non-ASCII (é, 日本), a newline and a tab, plus a
 * staged rename between two such names. Plain porcelain output quotes and
 * escapes those names (`"caf\303\251.txt"`); `git.status()` must return them
 * as they are on disk.
 */
import { shellJoin, type GitStatusEntry, type SandboxHandle } from '@tanstack/ai-sandbox'

/** Names whose porcelain spelling differs from the name itself. */
export const NAMES = {
  space: 'with space.txt',
  quotes: `quote"d 'single'.txt`,
  accent: 'café é.txt',
  cjk: '日本語.txt',
  newline: 'new\nline.txt',
  tab: 'tab\there.txt',
  backslash: 'back\\slash.txt',
  modified: 'tracked é "x".txt',
  renamedFrom: 'old name é.txt',
  renamedTo: 'renamed "日本"\tx.txt',
} as const

/** The entries `git.status()` must return for {@link makeOddlyNamedChanges}, sorted by path. */
export const EXPECTED_ENTRIES: GitStatusEntry[] = [
  { code: ' M', path: NAMES.modified },
  { code: 'R ', path: NAMES.renamedTo },
  ...[NAMES.space, NAMES.quotes, NAMES.accent, NAMES.cjk, NAMES.newline, NAMES.tab, NAMES.backslash].map((path) => ({ code: '??', path })),
].sort(byPath)

export function byPath(a: GitStatusEntry, b: GitStatusEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0
}

/**
 * In `dir` of the sandbox: a repository on `main` with two committed files,
 * one of them renamed (`git mv`, staged) and the other modified, and an
 * untracked file for each other name.
 */
export async function makeOddlyNamedChanges(handle: SandboxHandle, dir: string): Promise<void> {
  const sh = async (command: string) => {
    const result = await handle.process.exec(command)
    if (result.exitCode !== 0) throw new Error(`${command} failed (${result.exitCode}): ${result.stderr}`)
  }
  await sh(`mkdir -p ${shellJoin([dir])} && cd ${shellJoin([dir])} && git init -q && git symbolic-ref HEAD refs/heads/main`)
  const inDir = (name: string) => `${dir}/${name}`
  await sh(`printf 'one\\n' > ${shellJoin([inDir(NAMES.modified)])} && printf 'two\\n' > ${shellJoin([inDir(NAMES.renamedFrom)])}`)
  await handle.git.add([NAMES.modified, NAMES.renamedFrom], { dir })
  await handle.git.commit('two oddly named files', { dir })
  await sh(`cd ${shellJoin([dir])} && git mv -- ${shellJoin([NAMES.renamedFrom, NAMES.renamedTo])} && printf 'more\\n' >> ${shellJoin([NAMES.modified])}`)
  for (const name of [NAMES.space, NAMES.quotes, NAMES.accent, NAMES.cjk, NAMES.newline, NAMES.tab, NAMES.backslash]) await sh(`printf x > ${shellJoin([inDir(name)])}`)
}
