// Shell: quoting for command strings run inside sandboxes.
export { shellQuote, shellJoin } from './quote.js'
