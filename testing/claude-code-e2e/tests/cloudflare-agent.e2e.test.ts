/**
 * `createCloudflareSandboxAgent` in `do-drives` mode: the Coordinator
 * Durable Object runs chat() with the Claude Code harness against the
 * Cloudflare sandbox (the suite is helpers/cloudflare-agent-suite.ts).
 */
import { cloudflareAgentSuite } from './helpers/cloudflare-agent-suite.js'

cloudflareAgentSuite('do-drives')
