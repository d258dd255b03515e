/**
 * `createCloudflareSandboxAgent` in `colocated` mode: the harness and its
 * tool bridge run in the container (`runInContainerHarness` in a bundled
 * runner module), the Coordinator keeps the log and executes the chat() tool
 * the runner sends back (the suite is helpers/cloudflare-agent-suite.ts).
 */
import { cloudflareAgentSuite } from './helpers/cloudflare-agent-suite.js'

cloudflareAgentSuite('colocated')
