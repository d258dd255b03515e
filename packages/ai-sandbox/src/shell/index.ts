// Shell: quoting for command strings run inside sandboxes. The command-line
// reader (`command-line.ts`, `simple-command.ts`) is deliberately internal:
// it serves the policy judge (`evaluateCommand`) and is no general shell parser.
export { shellQuote, shellJoin } from './quote.js'
