/**
 * Public entry of `@tanstack/ai-sandbox-docker`: the factory, its config
 * types, the capability flags, the label names, the host address before a
 * sandbox exists (`dockerHostAccess`) and the janitor. Internals
 * (the job wrapper, the fs script, the demultiplexer) are
 * deliberately not exported.
 */
export { dockerSandbox } from './provider.js'
export { DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_READ_BYTES, DEFAULT_WORKSPACE_DIR } from './config.js'
export { DEFAULT_RESOURCES, DEFAULT_USER, DOCKER_ENGINE_DEFAULT_CAPABILITIES, LINUX_CAPABILITIES, SANDBOX_NETWORK } from './config.js'
export type { DockerSandboxConfig, DockerSandboxMount, DockerSandboxResources, LinuxCapability } from './config.js'
export { DOCKER_CAPABILITIES } from './capabilities.js'
export { LABEL as DOCKER_SANDBOX_LABELS } from './labels.js'
export { SNAPSHOT_REPOSITORY } from './snapshot.js'
export { OUTPUT_HIGH_WATER_MARK } from './text-stream.js'
export { dockerHostAccess } from './host-access.js'
export type { DockerHostAccessOptions } from './host-access.js'
export { pruneDockerSandboxes } from './prune.js'
export type { PruneDockerSandboxesOptions, PruneDockerSandboxesResult } from './prune.js'
