/**
 * The SDK's `Sandbox` Durable Object class, re-exported for the app's Worker
 * (`export { Sandbox } from '@tanstack/ai-sandbox-cloudflare'`, with
 * `class_name: 'Sandbox'` in wrangler). Typed here as a plain class so this
 * package's published types do not pull in `@cloudflare/sandbox`'s, which
 * need the Workers runtime's global types (a Node project compiling ours with
 * `skipLibCheck: false` would fail on them). For the full type, import it
 * from `@cloudflare/sandbox`.
 */
import { Sandbox as SdkSandbox } from '@cloudflare/sandbox'

/**
 * The `@cloudflare/sandbox` Durable Object class (the same value). Re-export it
 * from the Worker module under the name its wrangler `class_name` gives.
 * @example
 * ```ts
 * export { Sandbox } from '@tanstack/ai-sandbox-cloudflare'
 * ```
 */
export const Sandbox: abstract new (...args: never[]) => object = SdkSandbox
