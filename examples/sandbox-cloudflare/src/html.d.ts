// An imported `.html` file is its text: wrangler's default `Text` module rule
// on deploy, esbuild's `text` loader in the local launcher (src/bundle.ts).
declare module '*.html' {
  const text: string
  export default text
}
