/**
 * The chat() tool both agent Workers of the Cloudflare e2e suites serve: it
 * runs in the Coordinator (workerd), so its answer names the runtime it ran
 * in. An order id starting with SLOW never answers by itself (the cancel
 * cases stop the run while it waits).
 */
import { toolDefinition } from '@tanstack/ai'

export const lookupOrderTool = toolDefinition({
  name: 'lookup_order',
  description: 'Look up an order by id.',
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
}).server(async (args) => {
  const { orderId } = args as { orderId: string }
  if (orderId.startsWith('SLOW')) await new Promise((resolve) => setTimeout(resolve, 10 * 60_000))
  return { orderId, status: 'shipped', runtime: (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? 'unknown' }
})
