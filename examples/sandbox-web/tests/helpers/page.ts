/**
 * What the browser suites read off the page and the run log: the transcript
 * a person sees (text paragraphs and tool cards, in order), the run's status
 * badge, starting the sample task, and a chunk-by-chunk summary of a run's
 * log for comparing two runs.
 */
import type { Browser, Page } from 'playwright-core'
import type { AppServer, LogEvent } from './app.js'

/** The longest a sample run may take here, ms. */
export const RUN_MS = 90_000

/** The tool calls of the sample task, in order. */
export const SAMPLE_TOOL_CALLS = ['toolu_web_1_look', 'toolu_web_2_edit', 'toolu_web_3_test', 'toolu_web_4_run']

/** What a person sees of a run: the text paragraphs and the tool cards, in order. */
export interface SeenTranscript {
  texts: string[]
  messageIds: string[]
  tools: { id: string; input: string; done: boolean }[]
}

/** Read the transcript off the page. */
export async function seen(page: Page): Promise<SeenTranscript> {
  return page.evaluate(() => ({
    texts: [...document.querySelectorAll('[data-testid=text]')].map((node) => (node as HTMLElement).innerText),
    messageIds: [...document.querySelectorAll('[data-testid=text]')].map((node) => node.getAttribute('data-message-id') ?? ''),
    tools: [...document.querySelectorAll('[data-testid=tool-card]')].map((node) => ({
      id: node.getAttribute('data-tool-call-id') ?? '',
      input: (node.querySelector('.tool-input') as HTMLElement | null)?.innerText ?? '',
      done: node.getAttribute('data-done') === 'true',
    })),
  }))
}

/** Wait until the run's badge shows `status` (a phase: `streaming`, `reconnecting`, `completed`, …). */
export const waitForStatus = (page: Page, status: string, timeout = RUN_MS) => page.waitForSelector(`[data-testid=run-status][data-status=${status}]`, { timeout })

/** A new browser context (no cache) on the thread's page, opened as the server's start line says: with `?token=`. */
export async function openThread(browser: Browser, server: Pick<AppServer, 'url' | 'token'>, threadId: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  await page.goto(`${server.url}/?thread=${threadId}&token=${server.token}`)
  await page.waitForSelector('[data-testid=run-status]')
  return page
}

/** Start the sample task (once the page has put it in the box) and return the run id. */
export async function startTask(page: Page): Promise<string> {
  await page.waitForFunction(() => (document.querySelector('[data-testid=prompt]') as HTMLTextAreaElement | null)?.value.includes('multiply'))
  await page.click('[data-testid=start]')
  await page.waitForSelector('[data-testid=run-id]')
  return (await page.textContent('[data-testid=run-id]'))!
}

/** The log's text and tool calls, for comparing two runs chunk by chunk. */
export function logSummary(events: LogEvent[]) {
  const starts = events.filter((e) => e.chunk.type === 'TOOL_CALL_START').map((e) => e.chunk.toolCallId as string)
  const text = events.filter((e) => e.chunk.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.chunk.delta as string).join('')
  const ids = events.map((e) => e.id)
  return { starts, text, idsUnique: new Set(ids).size === ids.length }
}
