// Once per test run: build the client (helpers/build-client.ts) before any
// file starts a server, so that the suites, which run side by side, all
// serve one finished build.
import { buildClient } from './helpers/build-client.js'

export default function setup(): void {
  buildClient()
}
