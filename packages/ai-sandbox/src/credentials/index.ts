// Credentials: the per-run model proxy that keeps the model API key on the
// host (the agent gets a run token), counts usage from the model's own answers
// and enforces a budget. A floor above bridge/ (it shares the bridge's
// constant-time token check), beside it in purpose: both are host endpoints a
// run's sandbox reaches. Internal for now: exported from src/internal.ts only,
// until the adapters are wired to it (issue 36).
export { createModelProxy } from './model-proxy.js'
export type { ModelProxy } from './model-proxy.js'
export type { ModelBudget, ModelPrice, ModelProxyOptions, ModelUpstream, ModelWire } from './model-proxy-options.js'
export type { BudgetExceeded, ModelUsage, ModelUsageTotals } from './usage-meter.js'
export type { TokenCounts } from './wire-usage.js'
export { ModelProxyError } from './errors.js'
export type { ModelProxyErrorReason } from './errors.js'
