/**
 * `pnpm --filter @example/sandbox-cloudflare live`: the live lane, never part
 * of `pnpm test`. Deploys this example to your Cloudflare account with
 * `npx wrangler@4.164.0 deploy` (wrangler is not a dependency of the
 * repository: it needs Node 22.12 or later), uploading the two secrets with
 * the deploy from a file of its own that is removed right after, and prints
 * the workers.dev address to open with the token. Needs CLOUDFLARE_API_TOKEN
 * (plus CLOUDFLARE_ACCOUNT_ID when the token reaches several accounts),
 * ANTHROPIC_API_KEY, and Docker with buildx (wrangler builds the Dockerfile).
 */
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The wrangler release this example deploys with (`npm view wrangler versions`; its engines field asks for Node 22.12). */
const WRANGLER = 'wrangler@4.164.0'
const EXAMPLE_DIR = fileURLToPath(new URL('..', import.meta.url))

/** What this machine or shell lacks for a deploy, one line each; empty when nothing is. */
function missingParts(): string[] {
  const missing: string[] = []
  for (const name of ['CLOUDFLARE_API_TOKEN', 'ANTHROPIC_API_KEY']) {
    if (!process.env[name]) missing.push(`${name} is not set (${name === 'ANTHROPIC_API_KEY' ? "the agent's key, uploaded as a Worker secret" : 'a Cloudflare API token that may edit Workers and Containers'})`)
  }
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
  if (major < 22 || (major === 22 && minor < 12)) missing.push(`${WRANGLER} needs Node 22.12 or later (this is Node ${process.versions.node})`)
  try {
    execFileSync('docker', ['buildx', 'version'], { stdio: 'ignore', timeout: 30_000 })
  } catch {
    missing.push('docker with buildx is not available (wrangler builds ./Dockerfile and pushes it to Cloudflare)')
  }
  return missing
}

/** Run wrangler in the example folder, its output shown as it comes and returned. */
function wrangler(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['--yes', WRANGLER, ...args], { cwd: EXAMPLE_DIR, stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    child.stdout.on('data', (data: Buffer) => {
      output += data.toString()
      process.stdout.write(data)
    })
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve(output) : reject(new Error(`wrangler ${args[0]} exited with ${code}`))))
  })
}

async function main(): Promise<void> {
  const missing = missingParts()
  if (missing.length > 0) {
    console.error(`Cannot deploy:\n${missing.map((line) => `- ${line}`).join('\n')}`)
    process.exitCode = 1
    return
  }
  // RUN_TOKEN set: keep that token (open pages stay signed in); unset: a new one, which replaces the old on redeploy.
  const token = process.env.RUN_TOKEN || randomBytes(32).toString('base64url')
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-cloudflare-deploy-'))
  const secrets = join(dir, 'secrets.json')
  let output: string
  try {
    // JSON, not dotenv: wrangler expands $VAR in a dotenv file, never in JSON.
    writeFileSync(secrets, JSON.stringify({ RUN_TOKEN: token, ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY }), { mode: 0o600 })
    output = await wrangler(['deploy', '--config', 'wrangler.jsonc', '--secrets-file', secrets])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const url = /https:\/\/[^\s]+\.workers\.dev/.exec(output)?.[0]
  if (!url) {
    console.error('wrangler deployed but printed no workers.dev address; find it in the Cloudflare dashboard and open it with ?token=<RUN_TOKEN>.')
    process.exitCode = 1
    return
  }
  console.log(`\nopen ${url}/?token=${token}`)
  console.log('The first run waits for Cloudflare to start a container from the new image, which can take a minute or two.')
  console.log(`To remove it: npx ${WRANGLER} delete --config wrangler.jsonc, and answer yes when it offers to delete the container application too.`)
}

await main()
