import { describe, expect, it } from 'vitest'
import { normalizeAllowedUrls } from '../../../src/tokens/rules.js'
import { AllowedUrls, allowedBy, parseEntry } from '../src/allowed-urls.js'

/**
 * The contract's rule (section 3): an entry is an absolute http/https URL or a bare host name,
 * either with an optional port and path; a host may begin with `*.` to cover its subdomains.
 * Each row: entry, Origin, Referer, allowed.
 */
type Row = [
  entry: string,
  origin: string | undefined,
  referer: string | undefined,
  allowed: boolean,
]
const table: Row[] = [
  // A bare host: either scheme, that host only, the scheme's default port, any path.
  ['example.com', 'https://example.com', undefined, true],
  ['example.com', 'http://example.com', undefined, true],
  ['example.com', 'https://EXAMPLE.com', undefined, true],
  ['Example.COM', 'https://example.com', undefined, true],
  ['example.com', 'https://www.example.com', undefined, false],
  ['example.com', 'https://example.org', undefined, false],
  ['example.com', 'https://notexample.com', undefined, false],
  ['example.com', 'https://example.com.evil.net', undefined, false],
  ['example.com', 'https://example.com:8443', undefined, false],
  ['example.com', undefined, 'https://example.com/any/page?x=1', true],
  ['example.com', undefined, 'https://user:pw@example.com/page', true],
  // A scheme: that scheme only.
  ['https://example.com', 'https://example.com', undefined, true],
  ['https://example.com', 'http://example.com', undefined, false],
  ['http://example.com', 'https://example.com', undefined, false],
  ['HTTPS://example.com', 'https://example.com', undefined, true],
  ['https://example.com', undefined, 'https://example.com:443/page', true],
  // `*.`: every subdomain, at any depth, not the bare domain.
  ['*.example.com', 'https://maps.example.com', undefined, true],
  ['*.example.com', 'https://a.b.example.com', undefined, true],
  ['*.example.com', 'https://example.com', undefined, false],
  ['*.example.com', 'https://badexample.com', undefined, false],
  ['*.example.com', 'https://example.com.evil.net', undefined, false],
  ['https://*.example.com', 'http://maps.example.com', undefined, false],
  ['https://*.example.com', 'https://maps.example.com', undefined, true],
  ['*.example.com:8443', 'https://maps.example.com:8443', undefined, true],
  ['*.example.com:8443', 'https://maps.example.com', undefined, false],
  // A port: that port; none: the default port of the page's scheme.
  ['localhost:3000', 'http://localhost:3000', undefined, true],
  ['localhost:3000', 'http://localhost:3001', undefined, false],
  ['localhost:3000', 'http://localhost', undefined, false],
  ['localhost', 'http://localhost:3000', undefined, false],
  ['localhost', 'http://localhost', undefined, true],
  ['http://localhost:8080', 'http://localhost:8080', undefined, true],
  ['127.0.0.1:8080', 'http://127.0.0.1:8080', undefined, true],
  ['127.0.0.1:8080', 'http://127.0.0.2:8080', undefined, false],
  ['example.com:443', 'https://example.com', undefined, true],
  ['example.com:80', 'https://example.com', undefined, false],
  // A path: a prefix on segment boundaries, read from the Referer.
  ['example.com/maps', undefined, 'https://example.com/maps', true],
  ['example.com/maps', undefined, 'https://example.com/maps/city?x=1#top', true],
  ['example.com/maps', undefined, 'https://example.com/mapsx', false],
  ['example.com/maps', undefined, 'https://example.com/', false],
  ['example.com/maps', undefined, 'https://example.com/Maps', false],
  ['example.com/maps/', undefined, 'https://example.com/maps', true],
  ['example.com/', undefined, 'https://example.com/anything', true],
  ['https://example.com/maps/v2', undefined, 'https://example.com/maps/v2/a', true],
  ['https://example.com/maps/v2', undefined, 'https://example.com/maps/v1/a', false],
  ['example.com/a%20b', undefined, 'https://example.com/a b/c', true],
  ['example.com/maps?x=1#y', undefined, 'https://example.com/maps/1', true],
  ['example.com/maps/../tiles', undefined, 'https://example.com/tiles/1', true],
  // An Origin has no path: a path entry takes it from a same-origin Referer.
  ['example.com/maps', 'https://example.com', undefined, false],
  ['example.com/maps', 'https://example.com', 'https://example.com/maps/a', true],
  ['example.com/maps', 'https://example.com', 'https://other.com/maps/a', false],
  ['example.com/maps', 'https://example.com', 'http://example.com/maps/a', false],
  ['example.com/', 'https://example.com', undefined, true],
  // The Origin decides when there is one; `Origin: null` and non-web schemes count as none.
  ['example.com', 'https://example.com', 'https://evil.net/', true],
  ['example.com', 'https://evil.net', 'https://example.com/', false],
  ['example.com', 'null', 'https://example.com/page', true],
  ['example.com', 'null', undefined, false],
  ['example.com', '', '', false],
  ['example.com', undefined, undefined, false],
  ['example.com', 'file://', undefined, false],
  ['example.com', 'chrome-extension://abcdef', undefined, false],
  ['example.com', 'not a url', undefined, false],
  ['example.com', 'https://example.com, https://evil.net', undefined, false],
  // International names arrive as punycode, as entries are written.
  ['xn--bcher-kva.example', 'https://bücher.example', undefined, true],
]

describe('allowed URLs, the contract rule as a table', () => {
  it('has only entries Tessera itself accepts', () => {
    const entries = [...new Set(table.map((r) => r[0]))]
    expect(normalizeAllowedUrls(entries)).toEqual(entries)
  })

  it.each(table)('%s from Origin %s, Referer %s: %s', (entry, origin, referer, allowed) => {
    const rule = parseEntry(entry)
    expect(rule).toBeDefined()
    expect(allowedBy(rule ? [rule] : [], origin, referer)).toBe(allowed)
    // The remembered decision is the same, the first time and the next.
    const urls = new AllowedUrls([entry])
    expect(urls.allows(origin, referer)).toBe(allowed)
    expect(urls.allows(origin, referer)).toBe(allowed)
  })
})

describe('AllowedUrls', () => {
  it('allows a page that any entry allows', () => {
    const urls = new AllowedUrls(['a.example', 'https://b.example', '*.c.example/maps'])
    expect(urls.allows('https://a.example', undefined)).toBe(true)
    expect(urls.allows('https://b.example', undefined)).toBe(true)
    expect(urls.allows(undefined, 'https://x.c.example/maps/1')).toBe(true)
    expect(urls.allows('http://b.example', undefined)).toBe(false)
    expect(urls.allows(undefined, 'https://x.c.example/other')).toBe(false)
  })

  it('stays right past its memo of pages, whatever an attacker sends', () => {
    const urls = new AllowedUrls(['*.example.com'])
    for (let i = 0; i < 1000; i++) {
      expect(urls.allows(`https://h${i}.example.com`, undefined)).toBe(true)
      expect(urls.allows(`https://h${i}.evil.net`, undefined)).toBe(false)
    }
    expect(urls.allows('https://h1.example.com', undefined)).toBe(true)
  })

  it('matches nothing for an entry that is not an entry form', () => {
    expect(parseEntry('ftp://example.com')).toBeUndefined()
    expect(new AllowedUrls(['ftp://example.com']).allows('https://example.com', undefined)).toBe(
      false,
    )
  })
})
