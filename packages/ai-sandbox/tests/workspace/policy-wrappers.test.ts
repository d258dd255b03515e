/**
 * Commands that run another command, judged as the command they run, through
 * the public policy API: package runners (`npx`, `npm exec`, `pnpm exec`/
 * `dlx`, `yarn exec`/`dlx`, `bunx`), wrappers and their option arguments,
 * nested wrappers, `sh -c`/`bash -c` with nested quoting, and bash's brace
 * ranges. Every spelling that reveals a denied command is denied; none of
 * them widens an allow rule.
 */
import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy, evaluateCommand, type SandboxPolicy } from '../../src/index.js'

const guard = defineSandboxPolicy({ commands: { deny: ['git push *'], ask: ['npm publish *'] } })
const expectAll = (policy: SandboxPolicy, verdict: string, lines: readonly string[]) => {
  for (const line of lines) expect(evaluateCommand(policy, line), JSON.stringify(line)).toBe(verdict)
}

describe('package runners are judged as the command they run', () => {
  it('npx and npm exec, with their options', () => {
    expectAll(guard, 'deny', [
      'npx git push',
      'npx --yes git push origin',
      'npx -y -p some-pkg -p other git push',
      'npx --package=some-pkg -- git push',
      'npx --registry http://127.0.0.1:4873 git push',
      'npm exec git push',
      'npm exec -- git push',
      'npm exec --package=some-pkg -- git push',
      'npm --prefix /repo exec git push',
      'npm exec -w web git push',
      'npm x git push',
      '/usr/local/bin/npx git push',
    ])
  })

  it('pnpm exec, pnpm dlx, pnpx and pnpm running a program by name', () => {
    expectAll(guard, 'deny', [
      'pnpm exec git push',
      'pnpm exec -- git push',
      'pnpm -r exec git push',
      'pnpm --recursive --parallel exec git push',
      'pnpm --filter web exec git push',
      'pnpm --filter=web exec git push',
      'pnpm -F web -C /repo exec git push',
      'pnpm --dir /repo -w exec git push',
      'pnpm dlx git push',
      'pnpm dlx --package=some-pkg git push',
      'pnpm --package some-pkg dlx git push',
      'pnpx git push',
      'pnpm git push', // not a pnpm command nor a script: pnpm runs it like `pnpm exec`
      'pnpm exec env GIT_TRACE=1 git push',
    ])
  })

  it('yarn exec, dlx, workspace and foreach, and bunx / bun x / bun run', () => {
    expectAll(guard, 'deny', [
      'yarn exec git push',
      'yarn --cwd /repo exec git push',
      'yarn dlx git push',
      'yarn dlx -p some-pkg git push',
      'yarn dlx --package some-pkg --quiet git push',
      'yarn workspace web exec git push',
      'yarn workspaces foreach -A --include web exec git push',
      'yarnpkg dlx git push',
      'yarn git push',
      'bunx git push',
      'bunx --bun -p some-pkg git push',
      'bun x git push',
      'bun --cwd /repo x git push',
      'bun run git push',
      'corepack pnpm exec git push',
      'corepack yarn@4.1.0 dlx git push',
    ])
  })

  it('sees into their shell modes: npx -c, npm exec --call, pnpm -c exec, pnpm dlx -c, bun exec, yarn exec with a script', () => {
    expectAll(guard, 'deny', [
      "npx -c 'git push'",
      "npx --call='echo x && git push'",
      "npm exec -c 'git push'",
      "npm x --call 'true; git push'",
      "pnpm -c exec 'git push origin'",
      "pnpm --shell-mode exec 'echo a && git push'",
      "pnpm --filter web -c exec 'git push'",
      "pnpm dlx -c 'git push'",
      "pnpm --package=some-pkg -c dlx 'some-bin | git push'",
      "bun exec 'git push'",
      "bun exec 'echo a && git push'",
      "yarn exec 'git push origin'",
    ])
  })

  it('leaves their own commands and their arguments alone', () => {
    expectAll(defineSandboxPolicy({ commands: { deny: ['git push *', 'rm -rf *'] } }), 'allow', [
      'pnpm install',
      'pnpm rm -rf left-pad', // pnpm's own `rm` (remove)
      'bun rm -rf left-pad',
      'npm test',
      'npm exec --package git-push -- some-tool',
      'npx prettier --write "git push"',
      'pnpm exec echo git push',
      'yarn add git-push',
      'yarn exec echo git push',
      'corepack enable',
    ])
  })

  it('asks for an asked command under a runner, and judges a script it runs by the script', () => {
    expectAll(guard, 'ask', ['pnpm exec npm publish', 'npx npm publish --tag next', 'sudo yarn dlx npm publish'])
    const scripts = { release: 'git push --tags' }
    expect(evaluateCommand(guard, 'pnpm release', { scripts })).toBe('deny')
    expect(evaluateCommand(defineSandboxPolicy({ commands: { deny: ['tsup*'] } }), 'pnpm exec tsup --watch')).toBe('deny')
  })
})

describe('wrappers, their option arguments and nesting', () => {
  it('reads each wrapper\'s options, including those that take a value', () => {
    expectAll(guard, 'deny', [
      'env X=1 git push',
      'env -i git push',
      'env -i PATH=/usr/bin git push',
      'env -u X git push',
      'env -uX -u Y git push',
      'env --unset=X --chdir=/repo git push',
      'command git push',
      'command -p git push',
      'nice git push',
      'nice -n 5 git push',
      'nice -n5 git push',
      'nice --adjustment=5 git push',
      'nice -5 git push',
      'nohup git push',
      'timeout 10 git push',
      'timeout -s KILL 10 git push',
      'timeout -sKILL 10s git push',
      'timeout --signal KILL --kill-after=2 10 git push',
      'timeout -k 2 -s TERM 1m git push',
      'timeout --preserve-status --foreground 10 git push',
    ])
  })

  it('peels nested wrappers, in any order', () => {
    expectAll(guard, 'deny', [
      'env A=1 nice -n 5 timeout 10 git push',
      'nice -n 5 nohup timeout -k 2 10 env -u X git push',
      'nohup nice -n 19 env -i A=1 command git push',
      'timeout -s KILL 10 env -i npx git push',
      'sudo -u deploy env A=1 pnpm exec nice git push',
      'A=1 nohup timeout 5 pnpm --filter web exec env -u X git push',
      'xargs -0 timeout 10 npx --yes git push',
    ])
  })

  it('judges sh -c and bash -c scripts, with nested quoting, as lines of their own', () => {
    expectAll(guard, 'deny', [
      "sh -c 'git push'",
      'bash -c "git push origin main"',
      `bash -c "sh -c 'git push'"`,
      `sh -c 'bash -c "git push"'`,
      `bash -c "sh -c \\"git push\\""`,
      `sh -c 'sh -c "sh -c \\"git push\\""'`,
      `sh -c 'echo "a; b"; git push'`,
      `sh -c 'git '"push"`,
      "sh -c $'git push'",
      `bash -c 'env A=1 nice -n 5 timeout 10 git push'`,
      "timeout 10 sh -c 'npx git push'",
      "env -i sh -c 'pnpm exec git push'",
      "pnpm exec sh -c 'git push'",
      "npx -c 'sh -c \"git push\"'",
    ])
    expectAll(guard, 'allow', [`sh -c 'echo "git push"'`, `bash -c "echo 'git push'"`])
  })
})

describe('no runner or wrapper widens an allow rule', () => {
  const prettier = defineSandboxPolicy({ default: 'deny', commands: { allow: ['npx prettier *'] } })

  it('allows only the simple command as written', () => {
    expect(evaluateCommand(prettier, 'npx prettier --write src')).toBe('allow')
    expect(evaluateCommand(prettier, "npx prettier 'x; git push'"), 'a quoted ; is an argument').toBe('allow')
    expectAll(prettier, 'deny', [
      'npx prettier x; git push',
      'npx prettier x && git push',
      'npx prettier x || git push',
      'npx prettier x | sh',
      'npx prettier x & git push',
      'npx prettier x\ngit push',
      'npx prettier $(git push)',
      'npx prettier "`git push`"',
      'npx prettier x > ~/.bashrc',
      "npx -c 'prettier x; git push'",
      "npx --call 'prettier x'",
      'npx --package=evil prettier x',
      'env A=1 npx prettier x',
      'timeout 10 npx prettier x',
      'npx prettier *.ts',
      'npx prettier {a,b}',
    ])
  })

  it('never allows a shell mode by a rule, even one that names the runner', () => {
    const runners = defineSandboxPolicy({ default: 'deny', commands: { allow: ['npx *', 'npm *', 'pnpm *', 'yarn *', 'bun *', 'ls *', 'prettier *'] } })
    expect(evaluateCommand(runners, 'pnpm exec prettier x')).toBe('allow')
    expectAll(runners, 'deny', [
      "npx -c 'ls'",
      "npm exec --call='ls'",
      "pnpm -c exec 'ls'",
      "pnpm --shell-mode exec 'ls'",
      "pnpm dlx -c 'ls'",
      "bun exec 'ls'",
      "yarn exec 'ls; rm -rf ~'",
      'yarn exec ls', // berry runs the first word as a script
    ])
    const asked = defineSandboxPolicy({ default: 'ask', commands: { allow: ['npx *'] } })
    expect(evaluateCommand(asked, "npx -c 'ls'"), 'the default, not allow').toBe('ask')
  })

  it('keeps wrappers out of allow rules for what they wrap', () => {
    const onlyGitStatus = defineSandboxPolicy({ default: 'deny', commands: { allow: ['git status *', 'nice *'] } })
    expect(evaluateCommand(onlyGitStatus, 'git status')).toBe('allow')
    expectAll(onlyGitStatus, 'deny', ['env git status', 'timeout 5 git status', 'npx git status', 'nice -n 5 git status; git push', "nice sh -c 'git status'"])
  })
})

describe('brace ranges as bash expands them', () => {
  const releases = defineSandboxPolicy({ commands: { deny: ['git push origin *v02*', 'rm -rf *b003*'] } })

  it('keeps the zero padding of a range', () => {
    expectAll(releases, 'deny', ['git push origin v{01..03}', 'rm -rf /srv/b{1..010}', 'rm -rf /srv/b{001..3}', 'git push origin v{05..1}', 'git push origin v{00..4..2}', 'git push origin v{1..02}'])
    expectAll(releases, 'allow', ['git push origin v{1..3}', "git push origin 'v{01..03}'"])
  })

  it('pads negative ends as bash does, the sign counting towards the width', () => {
    const negative = defineSandboxPolicy({ commands: { deny: ['seq -01 000 001', 'seq -5 -4 -3 -2 -1 00 01'] } })
    expect(evaluateCommand(negative, 'seq {-01..1}')).toBe('deny')
    expect(evaluateCommand(negative, 'seq {-5..01}')).toBe('deny')
  })
})
