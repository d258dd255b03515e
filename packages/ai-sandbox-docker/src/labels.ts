/**
 * The Docker labels that mark what this provider made, so `resume`, `destroy`
 * and `pruneDockerSandboxes` find it again and never touch anything else.
 * Invariant: every container this package creates carries {@link LABEL.sandbox},
 * and every image it commits carries {@link LABEL.snapshot}; caller labels
 * (core adds its own `tanstack.sandbox.*` ones) never overwrite the keys below.
 */

/** Label keys (values are strings, as Docker requires). */
export const LABEL = {
  /** `1` on every sandbox container (and inherited by images committed from one). */
  sandbox: 'tanstack.sandbox',
  /** The compound sandbox key the container serves (`SandboxCreateInput.key`). */
  key: 'tanstack.sandbox.key',
  /** Epoch ms of creation. */
  createdAt: 'tanstack.sandbox.created-at',
  /** The workspace directory inside the container, e.g. `/workspace`. */
  workspace: 'tanstack.sandbox.workspace',
  /** The user processes run as (empty: the image's default). */
  user: 'tanstack.sandbox.user',
  /** The network the container was created on (`tanstack-sandbox`, `bridge`, `none`, ...), so a resume finds its host address. */
  network: 'tanstack.sandbox.network',
  /** `1` on the provider-managed network itself (see `network.ts`). */
  managedNetwork: 'tanstack.sandbox.managed-network',
  /** The image the container was created from (a tag or a snapshot id). */
  image: 'tanstack.sandbox.image',
  /** On snapshot and fork images: the id of the container they were committed from. */
  snapshot: 'tanstack.sandbox.snapshot',
  /** On snapshot images: `snapshot` or `fork`. */
  snapshotKind: 'tanstack.sandbox.snapshot.kind',
  /** On snapshot images: the caller's label passed to `snapshot(label)`. */
  snapshotLabel: 'tanstack.sandbox.snapshot.label',
  /** On snapshot images: epoch ms of the commit. */
  snapshotCreatedAt: 'tanstack.sandbox.snapshot.created-at',
  /** On a container started by `fork()`: the image made for it, removed with it. */
  forkImage: 'tanstack.sandbox.fork-image',
  /** On a container started by `restoreSnapshot` or `fork`: where it came from. */
  origin: 'tanstack.sandbox.origin',
  /**
   * 64 random hex digits drawn when the container is created: the handle's
   * `journalSecret`, which never enters the container (labels are not visible
   * inside it); every host reaching the engine reads the same one. Cleared on
   * the images `snapshot()` and `fork()` commit.
   */
  journalSecret: 'tanstack.sandbox.journal-secret',
} as const

const PROVIDER_KEYS: ReadonlySet<string> = new Set(Object.values(LABEL))

/** True for the keys the provider sets itself (callers' values for them are overridden). */
export function isProviderLabel(key: string): boolean {
  return PROVIDER_KEYS.has(key)
}

/** A Dockerfile `LABEL` instruction for `docker commit --change`, values JSON-quoted. */
export function labelInstruction(labels: Readonly<Record<string, string>>): string {
  return `LABEL ${Object.entries(labels)
    .map(([key, value]) => `${JSON.stringify(key)}=${JSON.stringify(value)}`)
    .join(' ')}`
}
