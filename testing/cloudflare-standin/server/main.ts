/**
 * Entry of the control server inside the stand-in image (bundled to
 * /srv/standin/server.js, run by Node 18 as PID 1): listens on port 3000
 * (`PORT` overrides), answers the route table, and logs one JSON line per
 * answered request to stdout (`docker logs` shows what the SDK sent; the
 * route-coverage test reads it). PID 1 must exit on SIGTERM, or a sleeping
 * sandbox never stops: it exits 143.
 */
import { createServer } from 'node:http'
import { dispatch, processes, sessions } from './routes.js'

const port = Number(process.env.PORT ?? 3000)

const server = createServer((req, res) => {
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
