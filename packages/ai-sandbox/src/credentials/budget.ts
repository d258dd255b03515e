/**
 * The budget check the proxy runs before it forwards a request: the run's
 * totals against `budget.maxTokens` and `budget.maxCostUsd`, and, under a
 * cost budget, a price for the model the request names. Pure; the proxy
 * turns a refusal into the wire's error response.
 * Invariant: a cost budget never prices a model by a guess; no price, no call.
 */
import { ModelProxyError } from './errors.js'
import type { ModelProxySettings } from './model-proxy-options.js'
import type { BudgetExceeded, ModelUsageTotals } from './usage-meter.js'

/** Why {@link checkBudget} refused a request: the error, and for a reached limit what `usage().budgetExceeded` reports. */
export interface BudgetRefusal {
  error: ModelProxyError
  exceeded?: BudgetExceeded
}

/**
 * Whether a request may be forwarded, given what the run has used so far.
 *
 * A limit is reached when the figure is at or past it, so the request that
 * crosses a limit is answered (its usage is only known afterwards) and the
 * next one is refused.
 *
 * @param budget - The proxy's budget settings.
 * @param totals - The run's usage so far.
 * @param requestModel - The request body's `model`, when it has one.
 * @returns `undefined` to forward; otherwise a refusal with reason `budget-exceeded` (a limit reached) or
 *   `unpriced-model` (a cost budget is set and the request's model, or a model already answered, has no price).
 */
export function checkBudget(budget: ModelProxySettings['budget'], totals: ModelUsageTotals, requestModel: string | undefined): BudgetRefusal | undefined {
  const { maxTokens, maxCostUsd, prices } = budget
  if (maxTokens !== undefined && totals.totalTokens >= maxTokens) {
    const message = `Token budget exceeded: this run has used ${totals.totalTokens} tokens of its ${maxTokens}-token budget (budget.maxTokens), so the model proxy refused this request and sent nothing to the model.`
    return { error: new ModelProxyError('budget-exceeded', message), exceeded: { figure: 'tokens', used: totals.totalTokens, limit: maxTokens, message } }
  }
  if (maxCostUsd === undefined) return undefined
  if (requestModel !== undefined && prices[requestModel] === undefined) return unpriced([requestModel], prices)
  if (totals.costUsd === undefined) return unpriced(Object.keys(totals.byModel).filter((name) => totals.byModel[name]?.costUsd === undefined), prices)
  if (totals.costUsd >= maxCostUsd) {
    const message = `Cost budget exceeded: this run has spent $${totals.costUsd.toFixed(6)} of its $${maxCostUsd} budget (budget.maxCostUsd), so the model proxy refused this request and sent nothing to the model.`
    return { error: new ModelProxyError('budget-exceeded', message), exceeded: { figure: 'costUsd', used: totals.costUsd, limit: maxCostUsd, message } }
  }
  return undefined
}

function unpriced(models: string[], prices: ModelProxySettings['budget']['prices']): BudgetRefusal {
  const names = models.map((name) => JSON.stringify(name.slice(0, 200))).join(', ')
  const known = Object.keys(prices).join(', ') || 'none'
  return {
    error: new ModelProxyError(
      'unpriced-model',
      `No price for model ${names}: a cost budget (budget.maxCostUsd) is set and the model proxy does not guess prices, so it refused this request and sent nothing to the model. Add the model to budget.prices (priced: ${known}).`,
    ),
  }
}
