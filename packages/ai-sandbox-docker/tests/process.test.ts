// Engine specifics of exec and spawn: killing a whole process tree (checked
// inside the container with ps), the TERM-to-KILL escalation, the exec output
// limit (`maxExecOutputBytes`, here 1 MiB, so an 8 MiB command crosses it;
// config.test.ts checks the 64 MiB default the option replaces), streaming
// 16 MiB through spawn with that 1 MiB exec limit (spawn has no such limit:
// 16 times it, and 16 times the output high-water mark), the job
// wrapper's setsid fallback, jobs cut off by a removed container, the
// per-job marker (TANSTACK_SANDBOX_JOB) that lets kill, timeout and abort reach
// a child that left the group and whose parent already exited, and a killed
// job's exit when the killer is held up after each signal it sends.
import { randomInt } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SandboxError, SandboxLimitError, SandboxOperationError } from '@tanstack/ai-sandbox'
import { GROUP_KILLER, JOB_SCAN_AWK } from '@tanstack/ai-sandbox/internal'
import { JOB_WRAPPER } from '../src/job.js'
import { startExec } from '../src/exec-stream.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { collect, rejectionOf, useDockerSandboxes } from './helpers/sandboxes.js'

/** The exec output limit of the limit and streaming cases (the default, 64 MiB, is config.test.ts's). */
const EXEC_LIMIT = 1024 * 1024
/** What the streaming case reads through spawn: 16 times {@link EXEC_LIMIT} and 16 times the output high-water mark. */
const SPAWN_BYTES = 16 * 1024 * 1024

/** `pid pgid stat args` of every process in the container, per ps (BusyBox and procps). */
const PS = 'ps -o pid,pgid,stat,args'

/** Count the live processes in the container running `sleep <arg>` (BusyBox and procps ps). */
const countSleeps = (arg: string) => `${PS} | awk '$3 !~ /^Z/ && $4 == "sleep" && $5 == "${arg}"' | wc -l`

describeWithDocker('docker process', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const sandboxes = useDockerSandboxes('process')

  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    describe(image, () => {
      it('kill() leaves no process of the job, as ps inside the container shows', async () => {
        const handle = await sandboxes.create({ image, killGraceMs: 300 })
        const marker = `tsbx-kill-${Date.now()}`
        // A child, a grandchild, and one that ignores SIGTERM so only the escalation to SIGKILL stops it.
        // (`; : marker` keeps each shell alive, so the marker stays visible in ps.)
        const job = await handle.process.spawn(`sh -c 'sleep 300; : ${marker}' & sh -c 'sh -c "sleep 301; : ${marker}"; :' & sh -c 'trap "" TERM; while :; do sleep 1; done; : ${marker}' & echo started; wait`)
        const stdout = collect(job.stdout)
        void collect(job.stderr)
        await expect.poll(async () => (await handle.process.exec(PS)).stdout.split('\n').filter((line) => line.includes(marker)).length).toBeGreaterThanOrEqual(3)
        const before = (await handle.process.exec(PS)).stdout
        expect(before.split('\n').filter((line) => line.includes(marker)).every((line) => line.trim().split(/\s+/)[1] === String(job.pid)), `every process of the job is in group ${job.pid}:\n${before}`).toBe(true)
        await job.kill()
        const after = (await handle.process.exec(PS)).stdout
        expect(after.split('\n').filter((line) => line.includes(marker) && !/\sZ/.test(line)), `nothing of the job is left:\n${after}`).toEqual([])
        const exit = await job.wait()
        expect(exit.exitCode).toBe(143)
        expect(exit.signal).toBe('SIGTERM')
        expect(await stdout).toBe('started\n')
        await job.kill() // again: resolves
      })

      it('exec of a command that prints 8 MiB past a 1 MiB maxExecOutputBytes stops it with a typed error and kills it', async () => {
        const handle = await sandboxes.create({ image, maxExecOutputBytes: EXEC_LIMIT })
        const error = await rejectionOf(handle.process.exec('yes tsbx-flood-0123456789 | head -c 8388608; echo done'))
        expect(SandboxError.isInstance(error)).toBe(true)
        expect(SandboxLimitError.isInstance(error)).toBe(true)
        expect(error.reason).toBe('exec-output-too-large')
        expect(error.limitBytes).toBe(EXEC_LIMIT)
        expect(error.message).toMatch(new RegExp(`more than ${EXEC_LIMIT} bytes`))
        expect(error.message).toMatch(/process\.spawn|fs\.readBytes|maxExecOutputBytes/)
        expect((await handle.process.exec(PS)).stdout).not.toMatch(/yes tsbx-flood/)
      })

      it('spawn streams 16 MiB of output completely, 16 times the sandbox\'s exec output limit', async () => {
        const handle = await sandboxes.create({ image, maxExecOutputBytes: EXEC_LIMIT })
        const job = await handle.process.spawn(`yes 0123456789abcdef | head -c ${SPAWN_BYTES}`)
        let length = 0
        let wrong = 0
        const reading = (async () => {
          for await (const chunk of job.stdout) {
            length += chunk.length
            if (!/^[0-9a-f\n]*$/.test(chunk)) wrong++
          }
        })()
        void collect(job.stderr)
        expect((await job.wait()).exitCode).toBe(0)
        await reading
        expect(length).toBe(SPAWN_BYTES)
        expect(wrong).toBe(0)
      })
    })
  }

  it('a job started by a process that is not a group leader makes itself one with setsid', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    // The inner sh is a child of the exec's shell, so it shares that shell's group until the wrapper's setsid.
    const script = `sh -c "$W" "$W" /workspace /workspace 'read -r _ _ _ _ g _ < /proc/$$/stat; echo "$$ $g"' 2>&1; echo "outer $$"`
    const result = await handle.process.exec(script, { env: { W: JOB_WRAPPER } })
    const [header, ids, outer] = result.stdout.split('\n')
    const [pid, group] = ids!.split(' ')
    expect(header).toBe(`\u0001tanstack-sandbox-job pgid=${pid}`)
    expect(group, 'the job leads its own group').toBe(pid)
    expect(outer).not.toBe(`outer ${pid}`)
  })

  it('a spawned job whose container is removed ends with exit 137; later calls say the sandbox is gone', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    const job = await handle.process.spawn('echo up; sleep 300')
    void collect(job.stderr)
    const stdout = job.stdout[Symbol.asyncIterator]()
    // Remove the container only once the job is seen running; removing it sooner (CI under load) kills
    // the shell before its echo, which is a different case from the one this test is about.
    expect((await stdout.next()).value).toBe('up\n')
    await sandboxes.docker.getContainer(handle.id).remove({ force: true })
    expect((await job.wait()).exitCode).toBe(137)
    expect((await stdout.next()).done, 'nothing more after the container went').toBe(true)
    await job.kill() // nothing left to kill: resolves
    const error = await rejectionOf(handle.process.exec('true'))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('not-found')
    expect(error.message).toMatch(/no longer exists/)
  })

  it('an abort signal kills a spawned job and wait() resolves', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, killGraceMs: 200 })
    const controller = new AbortController()
    const job = await handle.process.spawn('echo go; sleep 300', { signal: controller.signal })
    void collect(job.stderr)
    const stdout = job.stdout[Symbol.asyncIterator]()
    expect((await stdout.next()).value).toBe('go\n')
    controller.abort()
    expect((await job.wait()).exitCode).toBe(143)
    expect((await handle.process.exec(`${PS} | grep -c 'sleep 30[0]' || true`)).stdout.trim()).toBe('0')
  })

  it('wait() resolves once kill() finished even when an escaped process still holds stdout', async () => {
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE, killGraceMs: 200 })
    // Double fork + setsid + dropping the job marker (the documented limit): the escaped sleep is
    // neither in the group, nor a descendant, nor marked when kill() scans.
    const job = await handle.process.spawn('( setsid env -u TANSTACK_SANDBOX_JOB sleep 855 & ) ; echo before; sleep 856')
    const stdout = collect(job.stdout)
    const stderr = collect(job.stderr)
    await expect.poll(async () => (await handle.process.exec(`${PS} | awk '$4 == "sleep" && $5 == "855"' | wc -l`)).stdout.trim()).toBe('1')
    await job.kill()
    const pending = Symbol('still pending')
    const outcome = await Promise.race([job.wait(), new Promise((resolve) => setTimeout(() => resolve(pending), 10_000))])
    expect(outcome, 'wait() resolved after kill()').toMatchObject({ exitCode: 143, signal: 'SIGTERM' })
    expect(await stdout).toBe('before\n')
    expect(await stderr).toBe('')
    expect((await handle.process.exec(countSleeps('855'))).stdout.trim(), 'the unmarked sleep really escaped').toBe('1')
    // The escaped sleep dies with the container when the sandbox is destroyed after the test.
  })

  it('every job carries its own TANSTACK_SANDBOX_JOB, which a caller cannot override', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    const show = 'printf %s "$TANSTACK_SANDBOX_JOB"'
    const [a, b] = await Promise.all([handle.process.exec(show), handle.process.exec(show, { env: { TANSTACK_SANDBOX_JOB: 'fake' } })])
    expect(a.stdout).toMatch(/^[0-9a-f-]{36}$/)
    expect(b.stdout).toMatch(/^[0-9a-f-]{36}$/)
    expect(a.stdout).not.toBe(b.stdout)
  })

  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    it(`${image}: kill() after the shell exited still stops the setsid child it left (parent gone, not in the group)`, async () => {
      const handle = await sandboxes.create({ image, killGraceMs: 200 })
      const arg = `300.${randomInt(1e9)}`
      const job = await handle.process.spawn(`( cd / && setsid sleep ${arg} </dev/null >/dev/null 2>&1 & ) ; exit 0`)
      await expect.poll(async () => (await handle.process.exec(countSleeps(arg))).stdout.trim()).toBe('1')
      expect((await job.wait()).exitCode).toBe(0)
      await job.kill()
      expect((await handle.process.exec(countSleeps(arg))).stdout.trim(), 'the child left by an exited shell').toBe('0')
    })
  }

  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    it(`${image}: kill() outpaces a loop that ignores TERM and respawns setsid children (review finding)`, async () => {
      const handle = await sandboxes.create({ image, killGraceMs: 200 })
      const arg = `77.${randomInt(1e9)}`
      const job = await handle.process.spawn(`( setsid sh -c 'trap "" TERM HUP; while :; do setsid sh -c "trap \\"\\" TERM; sleep ${arg}" & sleep 0.05; done' & ) ; sleep 301`)
      await expect.poll(async () => Number((await handle.process.exec(countSleeps(arg))).stdout.trim()), { timeout: 10_000 }).toBeGreaterThanOrEqual(3)
      await job.kill()
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect((await handle.process.exec(countSleeps(arg))).stdout.trim(), 'respawned sleeps left after kill()').toBe('0')
    })
  }

  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    it(`${image}: a killed job reports the signal even when the killer is held up after each signal it sends`, async () => {
      const handle = await sandboxes.create({ image })
      // A shell that would end with status 0 on its own once its child is gone.
      const job = await handle.process.spawn('sleep 300 & echo "$TANSTACK_SANDBOX_JOB"; wait')
      void collect(job.stderr)
      const stdout = job.stdout[Symbol.asyncIterator]()
      const marker = `TANSTACK_SANDBOX_JOB=${String((await stdout.next()).value).trim()}`
      const log = `/tmp/kill-log.${randomInt(1e9)}`
      // Overrides the `kill` builtin the killer uses: logs each call, and after a signal to a single
      // process holds the killer until the job's shell has ended (at most 2 s), as a preempted killer would be.
      const shim = [
        `kill() { command kill "$@"; s=$?; echo "$*" >> ${log}`,
        '  case $2 in -*) ;; *) n=0; while [ $n -lt 40 ] && read -r _ _ st _ 2>/dev/null < /proc/$g/stat && [ "$st" != Z ]; do sleep 0.05; n=$((n + 1)); done ;; esac',
        '  return $s; }',
      ].join('\n')
      const killer = await startExec(
        sandboxes.docker.getContainer(handle.id),
        { cmd: ['/bin/sh', '-c', `${shim}\n${GROUP_KILLER}`, 'tanstack-sandbox-kill', String(job.pid), 'TERM', '10', JOB_SCAN_AWK, marker] },
        { stdout: () => undefined, stderr: () => undefined },
      )
      expect(await killer.exit, 'the killer left nothing of the job').toBe(0)
      expect((await job.wait()).exitCode, 'the shell was killed by SIGTERM (128+15), not left to end on its own with 0').toBe(143)
      // The exit shows the fault when the scan lists the child first; the first call pins the order whatever the layout.
      const calls = (await handle.process.exec(`cat ${log}`)).stdout.split('\n')
      expect(calls[0], 'the first signal goes to the whole group, so no member dies before the shell is signalled').toBe(`-TERM -${job.pid}`)
      await job.kill()
    })
  }

  it('exec waits for a command that closes its output before it exits', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    const result = await handle.process.exec('echo early; exec >&- 2>&-; sleep 1; exit 4')
    expect(result).toEqual({ exitCode: 4, stdout: 'early\n', stderr: '' })
  })

  it('kill() refuses an unknown signal with a typed error', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    const job = await handle.process.spawn('true')
    await job.wait()
    const error = await rejectionOf(job.kill('SIGHUP' as never))
    expect(error.field).toBe('kill.signal')
  })
})
