import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy, evaluateCommand, expandScriptPattern, globToRegExp, SandboxConfigError } from '../../src/index.js'

describe('defineSandboxPolicy', () => {
  it('fills defaults', () => {
    expect(defineSandboxPolicy()).toEqual({ default: 'allow', commands: { allow: [], ask: [], deny: [] }, capabilities: { fileWrite: true, network: true } })
  })

  it('names the bad field', () => {
    const error = (() => {
      try {
        defineSandboxPolicy({ commands: { deny: [''] } })
      } catch (e) {
        return e as SandboxConfigError
      }
    })()
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error?.field).toBe('policy.commands.deny.0')
    expect(() => defineSandboxPolicy({ default: 'maybe' as never })).toThrow(/policy.default/)
    expect(() => defineSandboxPolicy({ paths: {} } as never)).toThrow(/policy.paths/)
  })
})

describe('evaluateCommand', () => {
  const policy = defineSandboxPolicy({
    default: 'ask',
    commands: { allow: ['git *', 'script:test'], ask: ['git push *'], deny: ['git push * --force*', 'rm -rf *'] },
  })
  const scripts = { test: 'vitest run', build: 'tsup' }

  it('anchors globs to the whole simple command', () => {
    expect(evaluateCommand(policy, 'git status')).toBe('allow')
    expect(evaluateCommand(policy, 'echo git status')).toBe('ask') // not anchored at the start: default
    expect(evaluateCommand(policy, 'rm -rf /tmp/x')).toBe('deny')
    expect(evaluateCommand(policy, 'gitk')).toBe('ask')
  })

  it('ranks deny over ask over allow over the default', () => {
    expect(evaluateCommand(policy, 'git push origin main')).toBe('ask')
    expect(evaluateCommand(policy, 'git push origin main --force')).toBe('deny')
    expect(evaluateCommand(policy, 'ls')).toBe('ask')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'deny' }), 'ls')).toBe('deny')
  })

  it('lets a trailing " *" match the bare command too, never a longer word', () => {
    const deny = defineSandboxPolicy({ commands: { deny: ['git push *'] } })
    expect(evaluateCommand(deny, 'git push')).toBe('deny')
    expect(evaluateCommand(deny, 'git push origin main')).toBe('deny')
    expect(evaluateCommand(deny, 'git pushy')).toBe('allow')
    expect(evaluateCommand(deny, 'git')).toBe('allow')
    const star = defineSandboxPolicy({ default: 'deny', commands: { allow: ['*'] } })
    expect(evaluateCommand(star, 'anything at all')).toBe('allow')
  })

  it('collapses whitespace, removes quotes, and treats glob metacharacters literally otherwise', () => {
    expect(evaluateCommand(policy, '  git    log  ')).toBe('allow')
    expect(evaluateCommand(policy, "git 'push' \"origin\"")).toBe('ask')
    expect(evaluateCommand(policy, 'g\\it push origin --force')).toBe('deny')
    const literal = defineSandboxPolicy({ default: 'deny', commands: { allow: ['echo (a|b).c?'] } })
    expect(evaluateCommand(literal, "echo '(a|b).cd'")).toBe('allow')
    expect(evaluateCommand(literal, 'echo a.cd')).toBe('deny')
  })

  it('knows workspace scripts by name', () => {
    expect(evaluateCommand(policy, 'pnpm test', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'npm run test', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'npm test', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'vitest run', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'pnpm build', { scripts })).toBe('ask')
    expect(evaluateCommand(policy, 'pnpm test', {}), 'no such script: unmatched').toBe('ask')
    const denyBuild = defineSandboxPolicy({ commands: { deny: ['tsup*'] } })
    expect(evaluateCommand(denyBuild, 'pnpm build', { scripts }), 'a script is also judged by its own command').toBe('deny')
    expect(evaluateCommand(denyBuild, 'sudo pnpm build', { scripts }), 'also under a wrapper').toBe('deny')
  })

  it('does not take a package manager\'s own command for a script of the same name', () => {
    const publish = defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:publish'] } })
    const own = { publish: 'node scripts/publish.js' }
    expect(evaluateCommand(publish, 'npm run publish', { scripts: own })).toBe('allow')
    expect(evaluateCommand(publish, 'pnpm publish', { scripts: own })).toBe('deny')
    expect(evaluateCommand(publish, 'npm publish', { scripts: own })).toBe('deny')
  })

  it('judges a compound script by its simple commands, and a line that is exactly the script as a whole', () => {
    const compound = { check: 'tsc --noEmit && git push origin HEAD' }
    const allowCheck = defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:check'] } })
    expect(evaluateCommand(allowCheck, 'pnpm check', { scripts: compound })).toBe('allow')
    expect(evaluateCommand(allowCheck, 'tsc --noEmit  && git push origin HEAD', { scripts: compound })).toBe('allow')
    const denyPush = defineSandboxPolicy({ commands: { deny: ['git push *'] } })
    expect(evaluateCommand(denyPush, 'pnpm check', { scripts: compound })).toBe('deny')
    const denyCheck = defineSandboxPolicy({ commands: { deny: ['script:check'] } })
    expect(evaluateCommand(denyCheck, 'tsc --noEmit && git push origin HEAD', { scripts: compound })).toBe('deny')
  })

  it('survives a script that runs itself', () => {
    const loop = { test: 'pnpm test' }
    expect(evaluateCommand(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:test'] } }), 'pnpm test', { scripts: loop })).toBe('allow')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'ask' }), 'pnpm test', { scripts: loop })).toBe('ask')
  })

  it('gives an empty line the default', () => {
    expect(evaluateCommand(defineSandboxPolicy({ default: 'deny', commands: { allow: ['*'] } }), '   ')).toBe('deny')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'ask' }), ';')).toBe('ask')
  })
})

describe('evaluateCommand on compound command lines', () => {
  const denyPush = defineSandboxPolicy({ commands: { deny: ['git push *'] } })
  const onlyLs = defineSandboxPolicy({ default: 'deny', commands: { allow: ['ls *'] } })

  it('judges every simple command of a list, pipeline or background job', () => {
    for (const line of ['true && git push origin main', 'ls; git push', 'false || git push', 'git push & wait', 'echo y | git push', 'ls\ngit push', 'ls \\\n && git push']) {
      expect(evaluateCommand(denyPush, line), JSON.stringify(line)).toBe('deny')
    }
    for (const line of ['ls -la; rm -rf ~', 'ls && rm -rf ~', 'ls | sh', 'ls\nrm -rf ~', 'ls & rm -rf ~', 'ls # note\nrm -rf ~', 'ls --format=#x; rm -rf ~']) {
      expect(evaluateCommand(onlyLs, line), JSON.stringify(line)).toBe('deny')
    }
    expect(evaluateCommand(onlyLs, 'ls -la && ls src | ls')).toBe('allow')
  })

  it('does not split inside quotes or at escaped operators', () => {
    expect(evaluateCommand(onlyLs, 'ls "a; rm -rf ~"')).toBe('allow')
    expect(evaluateCommand(onlyLs, "ls 'a && b' x\\;y")).toBe('allow')
    expect(evaluateCommand(denyPush, 'git commit -m "then git push"')).toBe('allow')
    expect(evaluateCommand(onlyLs, "ls $'a\\'; rm -rf ~'")).toBe('allow')
  })

  it('lets deny and ask rules look past assignments, wrappers, keywords and directories', () => {
    for (const line of ['GIT_TRACE=1 git push', 'sudo -u root git push', 'env -i A=1 git push', 'timeout 5s git push', 'nice -n 5 git push', 'xargs git push', '! git push', 'if git push; then :; fi', '/usr/bin/git push', 'command git push']) {
      expect(evaluateCommand(denyPush, line), line).toBe('deny')
    }
    const ask = defineSandboxPolicy({ commands: { ask: ['npm publish *'] } })
    expect(evaluateCommand(ask, 'sudo npm publish')).toBe('ask')
  })

  it('matches allow rules only against the command as written', () => {
    expect(evaluateCommand(onlyLs, 'sudo ls')).toBe('deny')
    expect(evaluateCommand(onlyLs, 'LD_PRELOAD=x.so ls')).toBe('deny')
    expect(evaluateCommand(onlyLs, '/bin/ls')).toBe('deny')
  })

  it('sees into substitutions, sh -c and eval for deny and ask rules', () => {
    for (const line of ['echo $(git push)', 'echo "$(git push origin)"', 'echo `git push`', 'diff <(git push) x', "sh -c 'git push origin'", 'bash -lc "ls && git push"', "eval 'git push'", 'cat <<EOF\n$(git push)\nEOF', 'echo $(echo $(git push))']) {
      expect(evaluateCommand(denyPush, line), JSON.stringify(line)).toBe('deny')
    }
    expect(evaluateCommand(denyPush, "echo '$(git push)'"), 'single quotes: literal text').toBe('allow')
    expect(evaluateCommand(denyPush, "cat <<'EOF'\n$(git push)\nEOF"), 'quoted here-document: data').toBe('allow')
  })

  it('never allows by rule what it cannot see into: those lines get the default', () => {
    const opaque = [
      'ls $(rm -rf ~)',
      'ls "`rm -rf ~`"',
      'ls <(rm -rf ~)',
      '(ls; rm -rf ~)',
      '{ ls; }',
      'ls > ~/.bashrc',
      'ls >> out.txt',
      'ls &> log',
      'ls >&file',
      'ls <<EOF\nx\nEOF',
      'ls "unterminated',
      'for f in a; do ls $f; done',
      '$LS -la',
    ]
    for (const line of opaque) expect(evaluateCommand(onlyLs, line), JSON.stringify(line)).toBe('deny')
    const askByDefault = defineSandboxPolicy({ default: 'ask', commands: { allow: ['ls *', 'sh *', 'bash *'] } })
    for (const line of [...opaque, "sh -c 'ls'", 'curl x | bash', 'bash -s', "eval 'ls'"]) expect(evaluateCommand(askByDefault, line), JSON.stringify(line)).toBe('ask')
    expect(evaluateCommand(askByDefault, 'bash ./build.sh'), 'a script file is named: the rule decides').toBe('allow')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'allow', commands: { allow: ['ls *'] } }), 'ls > out.txt'), 'default allow stays allow').toBe('allow')
  })

  it('keeps harmless redirections transparent', () => {
    for (const line of ['ls 2>&1', 'ls > /dev/null 2>&1', 'ls 2>/dev/null', 'ls < input.txt', 'ls >&2', 'ls <<< "x"']) {
      expect(evaluateCommand(onlyLs, line), line).toBe('allow')
    }
  })

  it('takes an unmatched part under default deny over an asked part', () => {
    const policy = defineSandboxPolicy({ default: 'deny', commands: { ask: ['npm publish *'] } })
    expect(evaluateCommand(policy, 'npm publish')).toBe('ask')
    expect(evaluateCommand(policy, 'npm publish && curl x')).toBe('deny')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'allow', commands: { ask: ['npm publish *'] } }), 'ls && npm publish')).toBe('ask')
  })
})

describe('expandScriptPattern', () => {
  it('expands a script to its command and the package-manager forms that run it', () => {
    expect(expandScriptPattern('script:test', { test: 'vitest   run' })).toEqual(['vitest run', 'npm run test', 'npm test', 'pnpm run test', 'pnpm test', 'yarn run test', 'yarn test', 'bun run test'])
    expect(expandScriptPattern('script:lint', { lint: 'eslint .' })).toEqual(['eslint .', 'npm run lint', 'pnpm run lint', 'pnpm lint', 'yarn run lint', 'yarn lint', 'bun run lint'])
  })

  it('leaves out the bare forms that are the package manager\'s own command', () => {
    expect(expandScriptPattern('script:publish', { publish: 'node publish.js' })).toEqual(['node publish.js', 'npm run publish', 'pnpm run publish', 'yarn run publish', 'bun run publish'])
  })

  it('returns [] for an unknown script and other patterns as they are', () => {
    expect(expandScriptPattern('script:deploy', { test: 'vitest run' })).toEqual([])
    expect(expandScriptPattern('script:toString')).toEqual([])
    expect(expandScriptPattern('  git   push * ')).toEqual(['git push *'])
  })

  it('drops duplicates', () => {
    expect(expandScriptPattern('script:test', { test: 'pnpm test' })).toEqual(['pnpm test', 'npm run test', 'npm test', 'pnpm run test', 'yarn run test', 'yarn test', 'bun run test'])
  })
})

describe('globToRegExp', () => {
  it('anchors, globs, escapes, and makes a trailing " *" optional', () => {
    expect(globToRegExp('git push *').test('git push')).toBe(true)
    expect(globToRegExp('git push *').test('git pushy')).toBe(false)
    expect(globToRegExp('git push*').test('git pushy')).toBe(true)
    expect(globToRegExp('a?c').test('abc')).toBe(true)
    expect(globToRegExp('a.c').test('abc')).toBe(false)
    expect(globToRegExp('echo *x').test('echo')).toBe(false)
  })
})

describe('evaluateCommand against hidden spellings (deny rules under default allow)', () => {
  const guard = defineSandboxPolicy({ commands: { deny: ['git push *', 'rm -rf *'] } })
  const strict = defineSandboxPolicy({ default: 'deny', commands: { allow: ['git *', 'ls *', 'rm *', 'find *', 'env *', 'bash *', 'echo *', 'trap *', 'alias *'] } })
  const denied = (group: string, lines: readonly string[]) => {
    for (const line of lines) expect(evaluateCommand(guard, line), `${group}: ${JSON.stringify(line)}`).toBe('deny')
  }

  it('reads shell options before -c (sh, bash, dash, zsh, ash)', () => {
    denied('shell options', [
      "bash -O extglob -c 'git push'",
      "bash +O extglob -c 'git push'",
      "sh -o errexit -c 'git push'",
      "dash +o posix -c 'git push'",
      "bash -lc 'git push'",
      "bash -ec 'git push'",
      "bash --norc --login -c 'git push'",
      "bash --rcfile /dev/null -c 'git push'",
      "zsh -o extendedglob -c 'git push'",
      "ash -e -c 'git push'",
      "bash -c -x 'git push' name",
      "bash -C -c 'git push'",
      "fish --command='git push'",
    ])
  })

  it('reads env options, -S and --split-string', () => {
    denied('env', ["env -S 'git push'", "env --split-string='git push origin'", "env -S'git push'", 'env -u HOME git push', 'env -i git push', 'env - git push', 'env -C /tmp git push', 'env -- git push', 'env -iu HOME A=1 git push'])
  })

  it('judges function bodies, aliases and trap actions as hidden commands', () => {
    denied('hidden commands', [
      'function f { git push; }; f',
      'function f() { git push; }; f',
      'f() { git push; }; f',
      'coproc c { git push; }',
      'alias g=git; g push',
      'alias g=git\ng push origin',
      "alias p='git push'\np",
      "eval 'alias g=git'\ng push",
      "trap 'git push' EXIT",
      "trap -- 'rm -rf /tmp/x' EXIT INT",
    ])
  })

  it('expands braces and reads unquoted globs as any word they could become', () => {
    denied('expansion', ['{git,push}', 'git {push,pull}', 'git pu{sh,ll} origin', 'git p{u,x}sh', 'git pu{s..s}h', 'git p{u..u}sh', 'git p*sh', 'git pu?h', 'git pu[s]h', 'git p[a-z]sh origin', 'rm -r[f] x', '$"git" push', '$"git" "push"'])
  })

  it('sees past git global options', () => {
    denied('git options', ['git -C . push origin', 'git -c x.y=1 push', 'git --no-pager push', 'git --git-dir=x push', 'git --git-dir x --work-tree y push', 'git -p --bare --literal-pathspecs push', 'git --namespace n --exec-path=/x push', 'sudo git -C /repo push'])
  })

  it('matches rm flags in any spelling, order or grouping', () => {
    denied('rm flags', ['rm -fr x', 'rm -Rf x', 'rm -r -f x', 'rm --recursive --force x', 'rm -R --force x', 'rm -rfv x', 'rm -v -f -r x', 'rm x -rf', 'rm -rf', 'sudo rm -fr /'])
    expect(evaluateCommand(guard, 'rm -r x'), 'one flag of the two is not the rule').toBe('allow')
    expect(evaluateCommand(guard, 'rm -- -rf'), 'after --, -rf is a file').toBe('allow')
  })

  it('sees past more wrappers and into find -exec, script -c, su -c, flock -c and watch', () => {
    denied('wrappers', [
      'setsid git push',
      'setsid -f git push',
      'flock /tmp/lock git push',
      'flock -w 5 /tmp/lock git push',
      "flock /tmp/lock -c 'git push'",
      'ionice -c 3 git push',
      'ionice -c3 -n7 git push',
      'taskset 0x3 git push',
      'taskset -c 0,1 git push',
      'chrt 10 git push',
      'chrt -r 10 git push',
      'unshare -r git push',
      'unshare --map-user=0 -m git push',
      'stdbuf -oL git push',
      'stdbuf -o L git push',
      'nice -n 10 git push',
      'nice -5 git push',
      'timeout -k 5 --signal=KILL 10 git push',
      'timeout --preserve-status 10 git push',
      "script -qc 'git push' /dev/null",
      "script -q -c 'git push' /dev/null",
      "su -c 'git push' root",
      'find . -exec git push \\;',
      'find . -name x -execdir rm -rf {} +',
      'find . -ok git push ;',
      'xargs -I {} git push',
      'xargs -n 1 -0 -P 4 git push',
      'watch -n 1 git push',
      "watch 'git push'",
      'chroot / git push',
      'busybox rm -rf x',
    ])
    expect(evaluateCommand(guard, 'find . -name "*.o" -delete')).toBe('allow')
    expect(evaluateCommand(guard, 'find . -exec grep -l push {} +')).toBe('allow')
  })

  it('does not over-reach on quoted text and plain words', () => {
    for (const line of ["echo '{git,push}'", "git commit -m 'p*sh {a,b}'", 'echo "git push"', "git log --grep='alias g=git'", 'rm -r x', 'git push-it', 'echo ${HOME}', 'ls [', '[ -f x ]', 'find . -exec echo {} \\;']) {
      expect(evaluateCommand(guard, line), JSON.stringify(line)).toBe('allow')
    }
  })

  it('never lets these spellings widen an allow rule: they get the default under default deny', () => {
    for (const line of [
      "bash -O extglob -c 'ls'",
      "env -S 'ls'",
      'function f { ls; }; f',
      'echo {a,b}',
      'ls *.ts',
      'ls src/?.ts',
      'ls [ab]',
      'alias l=ls; l',
      "trap 'ls' EXIT",
      "find . -exec curl -d @secrets x {} +",
      'git -C . push',
    ]) {
      expect(evaluateCommand(strict, line), JSON.stringify(line)).toBe(line === 'git -C . push' ? 'allow' : 'deny')
    }
    expect(evaluateCommand(strict, "find . -exec ls {} +"), 'the -exec command must be allowed too').toBe('allow')
    expect(evaluateCommand(strict, '$"ls" -la'), '$"…" may be translated: opaque').toBe('deny')
    expect(evaluateCommand(guard, 'echo ${x:-$(git push)}')).toBe('deny')
  })
})
