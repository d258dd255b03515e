/**
 * The opening example of docs/writing-a-provider.md (keep the two identical):
 * create a directory sandbox, use its files and processes, and see which
 * optional methods it does not have. Run: `pnpm --filter @example/custom-provider start`.
 */
import { directorySandbox } from './index.js'

const provider = directorySandbox() // sandboxes under <os.tmpdir()>/directory-sandboxes
const handle = await provider.create({ env: { GREETING: 'hello' } })
try {
  await handle.fs.write('/workspace/notes/today.txt', 'written through handle.fs\n')
  const { stdout, exitCode } = await handle.process.exec('cat notes/today.txt; echo "$GREETING from $(pwd)"')
  console.log(exitCode, stdout)

  const job = await handle.process.spawn('sleep 300 & setsid sleep 300 & wait')
  await job.kill() // TERM, then KILL after 2 s: both sleeps go, also the one that left with setsid
  console.log('killed:', await job.wait())

  console.log('resumed:', (await provider.resume({ id: handle.id }))?.id === handle.id)
  console.log('optional methods:', { snapshot: typeof handle.snapshot, fork: typeof handle.fork, restoreSnapshot: typeof provider.restoreSnapshot })
} finally {
  await handle.destroy() // stops every process of the sandbox, then deletes <root>/<id>
}
console.log('after destroy:', await provider.resume({ id: handle.id }))
