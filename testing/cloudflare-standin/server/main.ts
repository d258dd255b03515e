/**
 * Entry of the control server inside the stand-in image (bundled to
 * /srv/standin/server.js, run by Node 18 as PID 1): listens on port 3000
 * (`PORT` overrides), answers the route table, and logs one JSON line per
 * answered request to stdout (`docker logs` shows what the SDK sent; the
 * route-coverage test reads it). PID 1 must exit on SIGTERM, or a sleeping
 * sandbox never stops: it exits 143. Tests make it fail on purpose through a
 * fault file (see {@link takeFault}).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { StandinError, sendError } from './http.js'
import { dispatch, processes, sessions } from './routes.js'

const port = Number(process.env.PORT ?? 3000)

/** Where a test asks for failures: `<status> <count>` (e.g. `500 2`) answers the next `count` requests with that status. */
const FAULT_FILE = '/tmp/cloudflare-standin-fault'

/** The status the current request must fail with, when the fault file asks for one (its count goes down by one). */
function takeFault(): number | undefined {
  let text: string
  try {
    text = readFileSync(FAULT_FILE, 'utf8')
  } catch {
    return undefined
  }
  const [status, count] = text.trim().split(/\s+/).map(Number)
  if (!status || !count || count <= 1) rmSync(FAULT_FILE, { force: true })
  else writeFileSync(FAULT_FILE, `${status} ${count - 1}`)
  return status || undefined
}

const server = createServer((req, res) => {
  const fault = takeFault()
  if (fault !== undefined) {
    sendError(res, new StandinError('INTERNAL_ERROR', `stand-in fault: answering HTTP ${fault} as ${FAULT_FILE} asked`, fault))
    res.on('close', () => process.stdout.write(`${JSON.stringify({ standin: 'fault', status: fault })}\n`))
    return
  }
  const route = dispatch(req, res)
  res.on('close', () => process.stdout.write(`${JSON.stringify({ standin: 'request', route, status: res.statusCode })}\n`))
})
server.keepAliveTimeout = 60_000
server.listen(port, '0.0.0.0', () => process.stdout.write(`${JSON.stringify({ standin: 'listening', port })}\n`))

process.on('SIGTERM', () => {
  for (const record of processes.list()) record.dispose()
  sessions.closeAll()
  process.exit(143)
})
