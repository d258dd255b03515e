/**
 * A provider wrapper that writes down every command its handles spawn, and
 * can claim that stdin is not writable (so an adapter takes its prompt-file
 * redirect). No Node-only import, so a Worker bundled for workerd uses it too.
 */
import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox'

/**
 * Wrap `inner` so its handles record every spawned command.
 * @param inner - The provider to wrap.
 * @param stdin - `writableStdin` to claim on the provider and its handles; omitted: the handles' own flags are kept.
 * @returns The wrapped provider and the list of spawned commands (in spawn order).
 */
export function recording(inner: SandboxProvider, stdin?: boolean): { provider: SandboxProvider; spawned: string[] } {
  const spawned: string[] = []
  const flags = (capabilities: SandboxHandle['capabilities']) => (stdin === undefined ? capabilities : { ...capabilities, writableStdin: stdin })
  const wrap = (handle: SandboxHandle | null): SandboxHandle | null =>
    handle && {
      ...handle,
      capabilities: flags(handle.capabilities),
      process: {
        ...handle.process,
        spawn: (command, options) => {
          spawned.push(command)
          return handle.process.spawn(command, options)
        },
      },
    }
  return {
    spawned,
    provider: {
      ...inner,
      capabilities: () => flags(inner.capabilities()),
      create: async (input) => wrap(await inner.create(input))!,
      resume: async (input) => wrap(await inner.resume(input)),
    },
  }
}
