// Paths: caller paths to workspace paths, with lexical confinement.
export { toWorkspaceRelative, toSandboxPath } from './workspace-path.js'
