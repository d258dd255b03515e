/**
 * The provider-managed network (`tanstack-sandbox`): one user-defined bridge
 * with inter-container communication off, so sandboxes cannot reach each other
 * but still reach the host. Owns creating it on first use, idempotently and
 * safely under concurrent creators. Never removed by the provider.
 * Design notes: docs/design/docker.md
 */
import type Docker from 'dockerode'
import { SandboxError } from '@tanstack/ai-sandbox'
import { engineError, operationError, statusOf } from './errors.js'
import { LABEL } from './labels.js'

/** The bridge driver option that turns inter-container communication off (iptables DROP between its ports). */
export const ICC_OPTION = 'com.docker.network.bridge.enable_icc'

/** What the engine lists about one network. */
interface NetworkSummary {
  Id: string
  Name: string
  Created?: string
  Driver?: string
  Options?: Record<string, string>
}

/**
 * Make sure the managed network `name` exists with inter-container
 * communication off, and return its id.
 * @throws SandboxOperationError `create-failed` when the engine refuses, or when
 *   a network of that name exists but lets containers talk to each other.
 */
export async function ensureSandboxNetwork(docker: Docker, name: string, endpoint: string): Promise<string> {
  try {
    let found = await networksNamed(docker, name)
    if (found.length === 0) {
      try {
        await docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          Options: { [ICC_OPTION]: 'false' },
          Labels: { [LABEL.managedNetwork]: '1' },
        })
      } catch (error) {
        // 409: another process created it first; what counts is the list below.
        if (statusOf(error) !== 409) throw error
      }
      found = await networksNamed(docker, name)
    }
    const [winner, ...extra] = found.sort(oldestFirst)
    if (!winner) throw operationError('create-failed', `The network "${name}" vanished while it was being created on ${endpoint}; retry the create.`)
    if (winner.Driver !== 'bridge' || winner.Options?.[ICC_OPTION] !== 'false') {
      throw operationError(
        'create-failed',
        `The network "${name}" on ${endpoint} exists but is not a bridge with inter-container communication disabled (${ICC_OPTION}=false), so sandboxes on it could reach each other. Remove it (docker network rm ${name}) and the provider re-creates it, or pass dockerSandbox({ network }) to choose a network deliberately.`,
      )
    }
    for (const duplicate of extra) await removeUnused(docker, duplicate.Id)
    return winner.Id
  } catch (error) {
    if (SandboxError.isInstance(error)) throw error
    throw engineError('create-failed', `creating the network "${name}"`, error, { endpoint })
  }
}

/** True for the engine's "network not found" (removed between our check and the container create). */
export function isMissingNetwork(error: unknown): boolean {
  const message = String((error as { json?: { message?: string } } | null)?.json?.message ?? (error as Error | null)?.message ?? '')
  return statusOf(error) === 404 && /network/i.test(message)
}

/** Networks named exactly `name` (the engine's name filter matches substrings). */
async function networksNamed(docker: Docker, name: string): Promise<NetworkSummary[]> {
  const list = (await docker.listNetworks({ filters: { name: [name] } })) as NetworkSummary[]
  return list.filter((network) => network.Name === name)
}

/** Oldest first; the id breaks a tie, so every caller picks the same one. */
function oldestFirst(a: NetworkSummary, b: NetworkSummary): number {
  const byTime = Date.parse(a.Created ?? '') - Date.parse(b.Created ?? '')
  if (byTime !== 0 && !Number.isNaN(byTime)) return byTime
  return a.Id < b.Id ? -1 : a.Id > b.Id ? 1 : 0
}

/** Remove a duplicate nobody uses; one in use (403/409) or gone (404) stays as it is. */
async function removeUnused(docker: Docker, id: string): Promise<void> {
  try {
    await docker.getNetwork(id).remove()
  } catch (error) {
    const status = statusOf(error)
    if (status !== 403 && status !== 404 && status !== 409) throw error
  }
}
