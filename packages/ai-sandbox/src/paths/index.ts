// Paths: caller paths to workspace-relative and sandbox paths, with lexical
// confinement to the workspace root, for providers to build on. Only the two
// mappers are exported; the module does no IO and resolves no symlinks.
export { toWorkspaceRelative, toSandboxPath } from './workspace-path.js'
