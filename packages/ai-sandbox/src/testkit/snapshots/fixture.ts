/**
 * The tree the snapshot kit captures and restores: nested and empty folders,
 * binary, empty and large files, unicode, spaces and a newline in names,
 * modes 0644/0600/0444 (0755/0700/0555 for folders), a secret in several
 * encodings, and every default exclusion at the root and deeper. Also an
 * independent reader of a sandbox's tree (find, stat, sha256sum in one exec:
 * never the capture code under test) and the tree a restore must produce.
 */
import { createHash } from 'node:crypto'
import type { SandboxHandle } from '../../contracts/handle.js'
import { shellQuote } from '../../shell/quote.js'

/** The secret the fixture holds; every kit capture passes it in `secrets`. */
export const SNAPSHOT_FIXTURE_SECRET = 'kit-secret-0f9e8d7c6b5a'

/**
 * One entry of the fixture. A file whose `holdsSecret` is set is stored with
 * the secret's forms zeroed: same size, other bytes, checked on its own.
 */
export type FixtureEntry =
  | { readonly path: string; readonly type: 'file'; readonly mode: number; readonly bytes: Buffer; readonly holdsSecret?: boolean }
  | { readonly path: string; readonly type: 'directory'; readonly mode: number }

/** The fixture's file that holds the secret raw, in base64, and inside the base64 of `user:<secret>`. */
export const SECRET_FIXTURE_PATH = 'config/secret.env.txt'

/** Bytes 0..255, four times: every byte value, NUL included. */
const BINARY = Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256))
/** 300 KiB a byte pattern cannot compress away, so the archive spans many reads. */
const LARGE = Buffer.from(Array.from({ length: 300 * 1024 }, (_, i) => (i * 7919 + (i >> 8)) % 251))
const SECRET_TEXT = `token=${SNAPSHOT_FIXTURE_SECRET}\nbasic=${Buffer.from(`user:${SNAPSHOT_FIXTURE_SECRET}`).toString('base64')}\nb64=${Buffer.from(SNAPSHOT_FIXTURE_SECRET).toString('base64')}\nend\n`

const file = (path: string, content: string | Buffer, mode = 0o644, holdsSecret = false): FixtureEntry => ({ path, type: 'file', mode, bytes: Buffer.isBuffer(content) ? content : Buffer.from(content), ...(holdsSecret ? { holdsSecret } : {}) })
const directory = (path: string, mode = 0o755): FixtureEntry => ({ path, type: 'directory', mode })

/** The entries the default policy keeps, with their stored bytes. */
export const KEPT_FIXTURE: readonly FixtureEntry[] = [
  file('src/app.ts', 'export const answer = 42\n'),
  file('src/private.txt', 'only the owner reads this\n', 0o600),
  file('src/readonly.txt', 'nobody writes this\n', 0o444),
  file('src/group.txt', 'group may write\n', 0o664),
  file('src/nested/deep/er/binary.dat', BINARY),
  file('src/nested/deep/er/large.bin', LARGE),
  file('src/.tanstack-projection.json', '{"not":"the root marker"}\n'),
  file('src/.claude/skills/tool/SKILL.md', 'not a direct .claude/skills path\n'),
  file('zero.txt', ''),
  file('dup-one.txt', 'same bytes\n'),
  file('dup-two.txt', 'same bytes\n'),
  file('ünïcödé 名前.txt', 'unicode name\n'),
  file('with space/a file.txt', 'spaces in names\n'),
  file('new\nline.txt', 'a newline in the name\n'),
  file('docs/CLAUDE.md', 'not at the root\n'),
  file('docs/GEMINI.md', 'not at the root\n'),
  file('.claude/settings.json', '{}\n'),
  file(SECRET_FIXTURE_PATH, SECRET_TEXT, 0o600, true),
  directory('empty'),
  directory('empty-private', 0o700),
  directory('empty-readonly', 0o555),
  directory('src/nested/empty-inner'),
  // Each holds only excluded entries, so it is stored as an empty folder.
  directory('only-excluded'),
  directory('.claude/skills'),
  directory('.codex/skills'),
  directory('.grok/skills'),
]

/** Entries the default policy drops. */
export const EXCLUDED_FIXTURE: readonly FixtureEntry[] = [
  file('.git/HEAD', 'ref: refs/heads/main\n'),
  file('src/.git', 'gitdir: ../.git/modules/src\n'),
  file('node_modules/pkg/index.js', 'module.exports = 1\n'),
  file('src/nested/node_modules/dep/index.js', 'module.exports = 2\n'),
  file('.env', `KEY=${SNAPSHOT_FIXTURE_SECRET}\n`),
  file('src/.env.local', 'LOCAL=1\n'),
  file('.envrc/hook.sh.txt', 'not executable\n'),
  file('only-excluded/.env.production', 'PROD=1\n'),
  file('CLAUDE.md', '# projected\n'),
  file('GEMINI.md', '# projected\n'),
  file('.tanstack-projection.json', '{"claude-code":"x"}\n'),
  file('.claude/skills/review/SKILL.md', '# projected skill\n'),
  file('.codex/skills/lint', 'a projected skill copied as a file\n'),
  file('.grok/skills/plan/notes.md', '# projected\n'),
]

/**
 * One shell script writing the fixture with few processes: file bytes
 * through the `printf` builtin (`%b` with `\\0ooo` escapes, so any byte and
 * any name), one `mkdir -p`, one `chmod` per mode.
 */
function fixtureScript(entries: readonly FixtureEntry[]): string {
  const q = (path: string) => (path.includes('\n') ? `"$(printf '%s\\n%s' ${path.split('\n').map(shellQuote).join(' ')})"` : shellQuote(path))
  const folders = new Set<string>()
  for (const entry of entries) {
    const folder = entry.type === 'directory' ? entry.path : entry.path.slice(0, Math.max(0, entry.path.lastIndexOf('/')))
    if (folder !== '') folders.add(folder)
  }
  const lines = [`mkdir -p ${[...folders].map(q).join(' ')}`]
  for (const entry of entries) {
    if (entry.type === 'file' && entry.bytes.length <= 4096) lines.push(`printf '%b' '${[...entry.bytes].map((byte) => `\\0${byte.toString(8)}`).join('')}' > ${q(entry.path)}`)
  }
  const byMode = new Map<string, string[]>()
  // Files first, then folders deepest first, so a read-only folder is made read-only last.
  const ordered = [...entries.filter((e) => e.type === 'file'), ...entries.filter((e) => e.type === 'directory').sort((a, b) => b.path.length - a.path.length)]
  for (const entry of ordered) byMode.set(`${entry.type} ${entry.mode.toString(8)}`, [...(byMode.get(`${entry.type} ${entry.mode.toString(8)}`) ?? []), q(entry.path)])
  for (const [key, paths] of byMode) lines.push(`chmod ${key.split(' ')[1]} ${paths.join(' ')}`)
  return `set -e\n${lines.join('\n')}`
}

/**
 * Write the whole fixture (kept and excluded entries) into a sandbox's
 * workspace: one exec, plus `fs.write` for the large file.
 */
export async function writeSnapshotFixture(handle: SandboxHandle): Promise<void> {
  const all = [...KEPT_FIXTURE, ...EXCLUDED_FIXTURE]
  for (const entry of all) if (entry.type === 'file' && entry.bytes.length > 4096) await handle.fs.write(entry.path, entry.bytes)
  const result = await handle.process.exec(fixtureScript(all))
  if (result.exitCode !== 0) throw new Error(`writing the snapshot fixture failed (${result.exitCode}): ${result.stderr}`)
}

/** One entry as the independent reader sees it: `file <mode> <size> <sha256>`, `directory <mode>`, `symlink`, `other`. */
export type TreeLine = string

/**
 * Read a sandbox's workspace tree without the capture code: one exec running
 * `find`, the shell's own tests and `printf`, one `stat` per entry and one
 * `sha256sum` per file. Records are NUL-separated, so any name reads back.
 * Folders are listed with their mode, so implied folders show too.
 *
 * @param handle - The sandbox.
 * @param prune - Entry names to leave out with everything under them.
 * @returns Path to line, for `toEqual`.
 */
export async function readSandboxTree(handle: SandboxHandle, prune: readonly string[] = []): Promise<Record<string, TreeLine>> {
  const pruneExpr = prune.length > 0 ? `\\( ${prune.map((name) => `-name ${shellQuote(name)}`).join(' -o ')} \\) -prune -o ` : ''
  const loop = [
    'for p do',
    'if [ -L "$p" ]; then t="symlink"',
    'elif [ -d "$p" ]; then t="directory $(stat -c %a "$p")"',
    'elif [ -f "$p" ]; then h=$(sha256sum < "$p"); t="file $(stat -c "%a %s" "$p") ${h%% *}"',
    'else t="other"; fi',
    "printf '%s\\0%s\\0' \"$t\" \"$p\"",
    'done',
  ].join('\n')
  const result = await handle.process.exec(`find . -mindepth 1 ${pruneExpr}-exec sh -c ${shellQuote(loop)} sh {} +`, { env: { LC_ALL: 'C' } })
  if (result.exitCode !== 0) throw new Error(`reading the tree failed (${result.exitCode}): ${result.stderr}`)
  const fields = result.stdout.split('\0')
  const tree: Record<string, TreeLine> = {}
  for (let i = 0; i + 1 < fields.length; i += 2) tree[fields[i + 1]!.replace(/^\.\//, '')] = fields[i]!
  return tree
}

/**
 * The tree a restore of the default-policy capture of the fixture must
 * produce in an empty workspace: every kept entry with its bytes and mode,
 * and the folders that hold them (mode 0755). The secret-holding file's hash
 * is `*` (its zeroed bytes are checked on their own): pass the actual tree
 * through {@link maskSecretFile} before comparing.
 */
export function expectedFixtureTree(): Record<string, TreeLine> {
  const tree: Record<string, TreeLine> = {}
  for (const entry of KEPT_FIXTURE) {
    const parts = entry.path.split('/')
    for (let i = 1; i < parts.length; i++) tree[parts.slice(0, i).join('/')] ??= 'directory 755'
  }
  for (const entry of KEPT_FIXTURE) {
    if (entry.type === 'directory') tree[entry.path] = `directory ${entry.mode.toString(8)}`
    else {
      tree[entry.path] = `file ${entry.mode.toString(8)} ${entry.bytes.length} ${entry.holdsSecret ? '*' : createHash('sha256').update(entry.bytes).digest('hex')}`
    }
  }
  return tree
}

/** `tree` with the secret-holding file's hash replaced by `*`, as {@link expectedFixtureTree} has it. */
export function maskSecretFile(tree: Record<string, TreeLine>): Record<string, TreeLine> {
  const line = tree[SECRET_FIXTURE_PATH]
  return line === undefined ? tree : { ...tree, [SECRET_FIXTURE_PATH]: line.replace(/[0-9a-f]{64}$/, '*') }
}
