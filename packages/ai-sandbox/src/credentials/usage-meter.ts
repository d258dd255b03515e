/**
 * The run's usage account: token counts per model, added up from the
 * readings of each response as they arrive, and the cost they come to under
 * a price table; and the shape `usage()` reports it in. It knows nothing of
 * HTTP, and of budgets only the shape of a refusal.
 * Invariant: a response's figures are counted once, however many readings
 * repeat them (each reading is the response's total so far, not an increment).
 */
import type { ModelPrice } from './model-proxy-options.js'
import type { TokenCounts, UsageReading } from './wire-usage.js'

/** The usage of one model over the run. */
export interface ModelUsage extends TokenCounts {
  /** Responses that reported usage for this model. */
  requests: number
  /** What the counts cost under the price table, in US dollars; absent when the model has no price. */
  costUsd?: number
}

/** The refusal that stopped the run's model calls, as `ModelUsageTotals.budgetExceeded` reports it. */
export interface BudgetExceeded {
  /** The limit that was reached: `tokens` (`budget.maxTokens`) or `costUsd` (`budget.maxCostUsd`). */
  figure: 'tokens' | 'costUsd'
  /** The run's figure when the request was refused (tokens, or US dollars). */
  used: number
  /** The limit (tokens, or US dollars). */
  limit: number
  /** The message the agent received. */
  message: string
}

/** The run's usage as the model API reported it. Token counts are whole tokens, over every model. */
export interface ModelUsageTotals extends TokenCounts {
  /** `inputTokens + outputTokens + cacheReadTokens + cacheWriteTokens`: what `budget.maxTokens` limits. */
  totalTokens: number
  /** Responses that reported usage. */
  requests: number
  /**
   * Spend in US dollars under `budget.prices`; absent without a price table,
   * or when a model seen has no price (a partial sum would understate it).
   */
  costUsd?: number
  /** The same figures by model name, as the response names it (or the request, when the response does not). */
  byModel: Record<string, ModelUsage>
  /** Set at the first request refused for the budget; nothing was forwarded from then on. */
  budgetExceeded?: BudgetExceeded
}

/** The account {@link createUsageMeter} returns. */
export interface UsageMeter {
  /**
   * Start counting one response.
   * @param requestModel - The request body's `model`, used when the response names none and for its price.
   * @returns A function to call with each reading of that response, in order.
   */
  response: (requestModel: string | undefined) => (reading: UsageReading) => void
  /** A copy of the totals so far (without `budgetExceeded`, which the proxy adds). */
  totals: () => ModelUsageTotals
}

const ZERO: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }
const KINDS = Object.keys(ZERO) as (keyof TokenCounts)[]

/**
 * An empty usage account.
 * @param prices - Prices by model name; a model is priced by its own name, else by the name the request used.
 */
export function createUsageMeter(prices: Readonly<Record<string, ModelPrice>>): UsageMeter {
  const models = new Map<string, { counts: TokenCounts; requests: number; price: ModelPrice | undefined }>()
  const priced = Object.keys(prices).length > 0

  function response(requestModel: string | undefined): (reading: UsageReading) => void {
    let model: string | undefined
    let seen: TokenCounts | undefined
    return (reading) => {
      model ??= reading.model ?? requestModel ?? 'unknown'
      const entry = models.get(model) ?? { counts: { ...ZERO }, requests: 0, price: undefined }
      models.set(model, entry)
      entry.price ??= prices[model] ?? (requestModel === undefined ? undefined : prices[requestModel])
      const before = seen ?? ZERO
      const now = { ...before, ...reading.counts }
      for (const kind of KINDS) entry.counts[kind] += now[kind] - before[kind]
      if (seen === undefined) entry.requests += 1
      seen = now
    }
  }

  function totals(): ModelUsageTotals {
    const sum: ModelUsageTotals = { ...ZERO, totalTokens: 0, requests: 0, byModel: {}, ...(priced ? { costUsd: 0 } : {}) }
    for (const [name, { counts, requests, price }] of models) {
      const costUsd = price === undefined ? undefined : costOf(counts, price)
      sum.byModel[name] = { ...counts, requests, ...(costUsd === undefined ? {} : { costUsd }) }
      for (const kind of KINDS) sum[kind] += counts[kind]
      sum.requests += requests
      if (costUsd === undefined) delete sum.costUsd
      else if (sum.costUsd !== undefined) sum.costUsd += costUsd
    }
    sum.totalTokens = KINDS.reduce((total, kind) => total + sum[kind], 0)
    return sum
  }

  return { response, totals }
}

/**
 * What `counts` cost at `price`, in US dollars: each kind of token times its
 * price per million, cache reads and writes at the input price unless priced apart.
 */
function costOf(counts: TokenCounts, price: ModelPrice): number {
  const perToken = (perMTok: number) => perMTok / 1_000_000
  return (
    counts.inputTokens * perToken(price.inputPerMTok) +
    counts.outputTokens * perToken(price.outputPerMTok) +
    counts.cacheReadTokens * perToken(price.cacheReadPerMTok ?? price.inputPerMTok) +
    counts.cacheWriteTokens * perToken(price.cacheWritePerMTok ?? price.inputPerMTok)
  )
}
