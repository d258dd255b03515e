/**
 * The one POSIX shell-quoting helper of the monorepo. Every command string a
 * package builds from values goes through here; nothing else hand-quotes.
 */

/**
 * Quote one argument for a POSIX shell (`sh`, `bash`, BusyBox `ash`) so it
 * reaches the program unchanged. Safe words pass through bare.
 *
 * @example
 * ```ts
 * shellQuote("it's") // => 'it'\''s'
 * ```
 */
export function shellQuote(value: string): string {
  if (value === '') return "''"
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value
  return `'${value.replace(/'/g, `'\\''`)}'`
}

/** Quote and join arguments into one command string. */
export function shellJoin(args: readonly string[]): string {
  return args.map(shellQuote).join(' ')
}
