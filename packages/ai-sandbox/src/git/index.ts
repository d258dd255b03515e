// Git: the SandboxGit implementation shared by every exec-capable provider
// (git run through the handle's `exec`), the auth environment it passes per
// call and the URL redactor. Not exported: the ref-name check and the local
// repository path helper, which workspace definition and exec-git use inside core.
export { createExecBackedGit, gitAuthEnv, redactUrl } from './exec-git.js'
export type { ExecBackedGitOptions } from './exec-git.js'
