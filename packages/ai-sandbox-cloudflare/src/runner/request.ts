/**
 * The run request of `colocated` mode: the one JSON document the Coordinator
 * hands the runner in the container (on its stdin, through the run journal's
 * launch) and `runInContainerHarness` reads. It carries the run's identity and
 * messages, the chat() tools as descriptors (JSON only: no code crosses), and
 * where and with which per-run bearer the runner asks the Coordinator to
 * execute one. Source: spec 000 "Edge / serverless execution" (the co-located
 * host-tool seam). Shared by both sides, so neither can drift from the other.
 */
import type { ModelMessage } from '@tanstack/ai'
import type { ToolDescriptor } from '@tanstack/ai-sandbox'
import { z } from 'zod'

/** The version of the request layout; a runner refuses any other. */
export const CONTAINER_RUN_REQUEST_VERSION = 1

/** What the Coordinator tells the runner in the container about one run. */
export interface ContainerRunRequest {
  /** {@link CONTAINER_RUN_REQUEST_VERSION}. */
  readonly version: typeof CONTAINER_RUN_REQUEST_VERSION
  readonly runId: string
  readonly threadId: string
  /** The run's messages, as the trigger sent them. */
  readonly messages: ModelMessage[]
  /** The chat() tools of the run, described (`toolDescriptors`); their code stays in the Coordinator. */
  readonly tools: ToolDescriptor[]
  /** Where the runner POSTs a tool execution (`httpRemoteToolExecutor`): the Worker's `{basePath}/:runId/tools` route. */
  readonly toolsUrl: string
  /** The run's own bearer for that route (not the app's): the Coordinator compares it in constant time. */
  readonly toolsToken: string
}

const descriptorSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  inputSchema: z.object({ type: z.literal('object') }).passthrough(),
})

/** The request's schema (what the runner accepts). */
export const containerRunRequestSchema = z
  .object({
    version: z.literal(CONTAINER_RUN_REQUEST_VERSION, { message: `expected version ${CONTAINER_RUN_REQUEST_VERSION}: the Coordinator and the runner in the container come from different versions of @tanstack/ai-sandbox-cloudflare; build the container image with the Worker's version` }),
    runId: z.string().min(1),
    threadId: z.string().min(1),
    messages: z.array(z.object({ role: z.string() }).passthrough()).min(1, 'expected at least one message'),
    tools: z.array(descriptorSchema),
    toolsUrl: z.url('expected the absolute URL of the tools route'),
    toolsToken: z.string().min(16, 'expected the per-run bearer (at least 16 characters)'),
  })
  .strict()
