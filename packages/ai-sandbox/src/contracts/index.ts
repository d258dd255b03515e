// Contracts: the shapes providers implement and everything else consumes.
export * from './errors.js'
export * from './capabilities.js'
export type * from './fs.js'
export type * from './process.js'
export type * from './git.js'
export * from './handle.js'
export type * from './provider.js'
export * from './require-capability.js'
