// Git: the SandboxGit implementation shared by every exec-capable provider.
export { createExecBackedGit, gitAuthEnv, redactUrl } from './exec-git.js'
export type { ExecBackedGitOptions } from './exec-git.js'
