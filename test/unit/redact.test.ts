import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseQuery } from '../../src/http/ahead/query.js'
import { learnRoute, learntRoutes, redactText, redactUrl } from '../../src/http/redact.js'
import { pathSpellings, percentEncoded, readable } from '../secrets.js'

// The routes of the dashboard with a secret, as the app declares them (see the route table's
// own walk in test/http/logging.security.test.ts), and one with parameters before its secret.
const secretRoutes = [
  '/account/setup/:secret',
  '/account/portal/:secret',
  '/account/invitations/:secret',
  '/admin/v1/accounts/:username/links/:secret/use',
]
beforeAll(() => {
  for (const route of secretRoutes) expect(learnRoute(route)).toBe(true)
})

const token = 'sk.eyJ1IjoiYWxpY2UiLCJhIjoiYzEyMyJ9.AbCdEfGhIjKlMnOpQrStUv'
const hex = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, '0')
  return `%${upper ? h.toUpperCase() : h}`
}
/** Every character percent-encoded: a spelling of the value the parser decodes to `token`. */
const encodeAll = (text: string, upper = true) => [...text].map((c) => hex(c, upper)).join('')

/** The query of a URL the way the router splits it: after the first `?` or `#`. */
const queryOf = (url: string) => {
  const at = /[?#]/.exec(url)?.index
  return at === undefined ? '' : url.slice(at + 1)
}

describe('redactUrl', () => {
  const spellings = [
    'access_token',
    'access%5Ftoken',
    'access%5ftoken',
    '%61ccess_token',
    '%61ccess%5Ftoken',
    encodeAll('access_token'),
    encodeAll('access_token', false),
    'ACCESS_TOKEN',
    'Access%5FToken',
  ]
  const values = [token, encodeAll(token), encodeAll(token, false), token.replace('.', '%2E')]

  it('hides the token under every spelling of the name the query parser accepts', () => {
    for (const name of spellings) {
      for (const value of values) {
        const url = `/tokens/v2/alice?limit=1&${name}=${value}&sortby=created`
        // The parser's own reading: all but the last two spellings are taken as the token.
        const read = parseQuery(queryOf(url)).access_token
        expect(read).toBe(spellings.indexOf(name) < spellings.length - 2 ? token : undefined)
        expect(redactUrl(url)).toBe(`/tokens/v2/alice?limit=1&${name}=[redacted]&sortby=created`)
      }
    }
  })

  it('hides every value of a repeated name, and a query that begins at #', () => {
    expect(redactUrl(`/tokens/v2?access_token=${token}&access%5Ftoken=${token}`)).toBe(
      '/tokens/v2?access_token=[redacted]&access%5Ftoken=[redacted]',
    )
    expect(redactUrl(`/tokens/v2#access_token=${token}`)).toBe('/tokens/v2#access_token=[redacted]')
    expect(redactUrl(`/tokens/v2#x&access_token=${token}?y`)).toBe(
      '/tokens/v2#x&access_token=[redacted]',
    )
    expect(parseQuery(queryOf(`/tokens/v2#x&access_token=${token}`)).access_token).toBe(token)
  })

  it('leaves everything else as it was', () => {
    for (const url of [
      '/tokens/v2/alice?limit=1&sortby=created',
      '/tokens/v2/alice/cabc?usage=pk&access_token',
      '/account/tokens/cabc',
      '/account/setup/',
      '/account/portal/',
      '/account/invitations',
      '/account/members/invitations/0123456789abcdef/revoke',
      '/account/sign-in?next=%2Faccount%2Fscopes',
      '/admin/v1/accounts/alice/links',
      '/admin/v1/events?after=0001',
      '/healthz',
      '',
    ]) {
      expect(redactUrl(url)).toBe(url)
    }
  })

  it('hides the secret of a setup link, however the path is spelled', () => {
    const secret = 'Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0'
    expect(redactUrl(`/account/setup/${secret}`)).toBe('/account/setup/[redacted]')
    expect(redactUrl(`//account//setup/${secret}/?x=1`)).toBe('//account//setup/[redacted]?x=1')
    expect(redactUrl(`/account/setup/${encodeAll(secret)}`)).toBe('/account/setup/[redacted]')
    for (const path of [
      `/account/%73etup/${secret}`,
      `/%61ccount/setup/${secret}`,
      `/account/setup%2F${secret}`,
      `/account/setup/${secret}%2Fmore`,
    ]) {
      const redacted = redactUrl(path)
      expect(redacted).not.toContain(secret)
      expect(redacted).toMatch(/setup\/\[redacted\]$/)
    }
  })

  it('hides any token the parser would read from any query (property)', () => {
    const tokenChar = fc.constantFrom(
      ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.',
    )
    const spelled = (text: string) =>
      fc
        .array(fc.constantFrom('plain', 'lower', 'upper'), {
          minLength: text.length,
          maxLength: text.length,
        })
        .map((ways) =>
          [...text].map((c, i) => (ways[i] === 'plain' ? c : hex(c, ways[i] === 'upper'))).join(''),
        )
    const other = fc.stringMatching(/^[a-z%0-9_=+]{0,12}$/)
    fc.assert(
      fc.property(
        fc.string({ unit: tokenChar, minLength: 24, maxLength: 40 }),
        spelled('access_token'),
        fc.array(other, { maxLength: 4 }),
        fc.array(other, { maxLength: 4 }),
        fc.constantFrom('?', '#'),
        (secret, name, before, after, delimiter) =>
          [secret, encodeAll(secret)].every((value) => {
            const query = [...before, `${name}=${value}`, ...after].join('&')
            const url = `/tokens/v2${delimiter}${query}`
            const read = parseQuery(query).access_token
            const redacted = redactUrl(url)
            // Whatever the parser takes as the token is gone, in any spelling.
            return (
              (read === undefined || read === '' || !redacted.includes(read)) &&
              !redacted.includes(secret) &&
              !redacted.includes(value)
            )
          }),
      ),
    )
  })
})

describe('the rule built from the route table', () => {
  const secret = 'Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0LXo_'

  it('learns a route by its :secret parameter, and no other', () => {
    for (const route of [
      '/account/tokens/:id',
      '/account/assets/:name',
      '/account/secret',
      '/x/:secretive',
      '/x/:link',
      '/admin/v1/webhooks/:id/secret',
    ]) {
      expect(learnRoute(route), route).toBe(false)
    }
    expect(learntRoutes()).toEqual(expect.arrayContaining([...secretRoutes, '/x/:link']))
    expect(redactUrl(`/x/${secret}`)).toBe(`/x/${secret}`)
  })

  it('hides the secret of every learnt route, under every spelling the router takes', () => {
    for (const prefix of ['/account/setup/', '/account/portal/', '/account/invitations/']) {
      for (const url of pathSpellings(prefix, secret)) {
        const redacted = redactUrl(url)
        expect(readable(redacted), url).not.toContain(secret)
        expect(redacted, url).toMatch(/\/\[redacted\](\?x=1|#x)?$/)
      }
      // What follows the secret goes too: the route may be misspelt, the secret is still one.
      expect(redactUrl(`${prefix}${secret}/more?x=1`)).toBe(`${prefix}[redacted]?x=1`)
      expect(redactUrl(`${prefix.toUpperCase()}${secret}`)).toBe(
        `${prefix.toUpperCase()}[redacted]`,
      )
      expect(redactUrl(`https://tessera.test${prefix}${secret}`)).toBe(
        `https://tessera.test${prefix}[redacted]`,
      )
    }
    // Parameters before the secret are anything but a slash.
    expect(redactUrl(`/admin/v1/accounts/alice/links/${secret}/use`)).toBe(
      '/admin/v1/accounts/alice/links/[redacted]',
    )
    expect(redactUrl(`/admin/v1/accounts/alice/links`)).toBe('/admin/v1/accounts/alice/links')
  })

  it('hides the code and state of the single sign-on callback, and a secret path as a value', () => {
    expect(redactUrl(`/account/sso/callback?code=${secret}&state=${secret}&iss=x`)).toBe(
      '/account/sso/callback?code=[redacted]&state=[redacted]&iss=x',
    )
    expect(redactUrl(`/account/sso/callback?%63ode=${secret}&STATE=${secret}`)).toBe(
      '/account/sso/callback?%63ode=[redacted]&STATE=[redacted]',
    )
    for (const name of ['token', 'id_token', 'client_secret', 'password', 'api_key']) {
      expect(redactUrl(`/x?${name}=${secret}`)).toBe(`/x?${name}=[redacted]`)
    }
    expect(redactUrl(`/account/sign-in?next=%2Faccount%2Fportal%2F${secret}`)).toBe(
      '/account/sign-in?next=[redacted]',
    )
    expect(redactUrl(`/account/sign-in?next=/account//invitations/${secret}&x=1`)).toBe(
      '/account/sign-in?next=[redacted]&x=1',
    )
  })

  it("hides a learnt route's secret however its path is encoded (property)", () => {
    const secretChar = fc.constantFrom(
      ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_',
    )
    fc.assert(
      fc.property(
        fc.constantFrom('/account/setup/', '/account/portal/', '/account/invitations/'),
        fc.string({ unit: secretChar, minLength: 43, maxLength: 43 }),
        fc.array(fc.boolean(), { minLength: 80, maxLength: 80 }),
        fc.integer({ min: 1, max: 3 }),
        (prefix, value, encode, slashes) => {
          const path = `${prefix.replaceAll('/', '/'.repeat(slashes))}${value}`
          const spelt = [...path]
            .map((c, i) => (encode[i % encode.length] && c !== '/' ? percentEncoded(c) : c))
            .join('')
          return !readable(redactUrl(spelt)).includes(value)
        },
      ),
    )
  })
})

describe('redactText', () => {
  it('redacts each request target in free text, as Fastify writes them into messages', () => {
    expect(
      redactText(
        `Reply was already sent, did you forget to "return reply" in "/tokens/v2?access%5Ftoken=${token}" (GET)?`,
      ),
    ).toBe(
      'Reply was already sent, did you forget to "return reply" in "/tokens/v2?access%5Ftoken=[redacted] (GET)?',
    )
    expect(redactText('Route GET:/account/setup/abcdef not found')).toBe(
      'Route GET:/account/setup/[redacted] not found',
    )
    expect(redactText(`Route POST:/account/portal/${'p'.repeat(43)} not found`)).toBe(
      'Route POST:/account/portal/[redacted] not found',
    )
    expect(redactText('incoming request')).toBe('incoming request')
  })
})
