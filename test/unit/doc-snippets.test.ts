import { readdirSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { signatureHeader } from '../../src/webhooks/signature.js'
import { snippets } from '../snippets.js'

/**
 * The code a reader copies from the README and docs. Every `js` block says what it is on the
 * line before it: `<!-- snippet: run -->` (a whole program, run by test/e2e/newcomer.test.ts
 * against a real server), `<!-- snippet: function NAME -->` (a function to paste, called here)
 * or `<!-- snippet: fragment -->` (lines of a larger program: `app`, `req` are the reader's).
 */

const root = path.resolve(import.meta.dirname, '../..')
const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).map((f) => `docs/${f}`)].filter(
  (f) => f.endsWith('.md'),
)

const all = pages.flatMap(snippets)

describe("the docs' code blocks", () => {
  it('says of every js block whether it runs as it is', () => {
    const unmarked = all.filter(
      (s) => s.mark === undefined || !/^(run|fragment|function \w+)$/.test(s.mark),
    )
    expect(unmarked.map((s) => `${s.page}:${s.line}`)).toEqual([])
    // The README's first program is one a reader runs.
    expect(all.filter((s) => s.mark === 'run').map((s) => s.page)).toContain('README.md')
  })

  it("the webhook receiver's check accepts Tessera's signature and refuses a forged or old one", async () => {
    const block = all.find((s) => s.mark === 'function verifyTessera')
    expect(block?.page).toBe('docs/integrations.md')
    const source = `${block?.code}\nexport { verifyTessera }\n`
    const { verifyTessera } = await import(
      `data:text/javascript;base64,${Buffer.from(source).toString('base64')}`
    )
    const secret = 'whsec_0123456789abcdef'
    const body = '{"type":"token.deleted","data":{"id":"abc"}}'
    // The snippet reads the reader's clock: sign at that clock's now.
    const now = Date.now()
    const header = signatureHeader(secret, body, now)
    expect(verifyTessera(body, header, secret)).toBe(true)
    expect(verifyTessera(`${body} `, header, secret)).toBe(false)
    expect(verifyTessera(body, header, 'whsec_other')).toBe(false)
    const old = signatureHeader(secret, body, now - 301_000)
    expect(verifyTessera(body, old, secret)).toBe(false)
  })
})
