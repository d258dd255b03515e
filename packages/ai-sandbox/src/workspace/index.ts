// Workspace: `defineWorkspace` and what a workspace is made of: sources,
// secrets, bootstrap and setup plans, the command policy, the projection for
// harnesses, skills and their provisioning. Not exported: the setup shell that
// runs a plan and the declaration-conflict checks, which defineWorkspace and
// bootstrap use inside core.
export { defineWorkspace, resolveSecretEnv } from './define-workspace.js'
export type { WorkspaceInput, ResolvedWorkspace, PackageManager } from './define-workspace.js'
export { gitSource, githubRepo, localSource, emptySource } from './sources.js'
export type { WorkspaceSource, GitWorkspaceSource, LocalWorkspaceSource, EmptyWorkspaceSource } from './sources.js'
export { redactSecrets } from '../secrets/secret-values.js'
export { bootstrapWorkspace, withWorkspaceSecrets } from './bootstrap.js'
export { flattenSetupPlan } from './setup-plan.js'
export type { SetupStep, SetupRecorder, SetupInput } from './setup-plan.js'
export { withSecretEnv } from './secret-env.js'
export { WorkspaceBootstrapError, SetupStepFailedError } from './errors.js'
export type { WorkspaceBootstrapErrorReason } from './errors.js'
export { defineSandboxPolicy, evaluateCommand, expandScriptPattern, globToRegExp } from './policy.js'
export type { SandboxPolicy, SandboxPolicyInput, PolicyDecision, CommandRules, PolicyCapabilities, EvaluateCommandOptions } from './policy.js'
export { projectWorkspace, excludeFromGit, PROJECTION_MARKER } from './projection.js'
export type { WorkspaceProjection, HarnessProjection, ProjectionContext } from './projection.js'
export { agentSkillMarkdown, writeSkillFolders } from './skill-folders.js'
export { agentSkill, gitSkill, mcpSkill, fileSkill } from './skills.js'
export type { Skill, AgentSkill, GitSkill, McpSkill, FileSkill } from './skills.js'
export { provisionWorkspace, gitSkillPath, SKILLS_DIR, INSTRUCTION_FILES } from './provision.js'
