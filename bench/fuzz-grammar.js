// The grammar of `npm run fuzz` (bench/fuzz.js): request `index` of a seed, built from valid
// material (usernames, token strings and ids, sessions, cursors, the signing key) by choices
// of a seeded PRNG. Mostly near-valid requests, each broken in one or two places, so that they
// get past the first check and reach the code behind it; a few bytes no client would send.
import { createHmac } from 'node:crypto'

// --- Seeded choices ---------------------------------------------------------------------------

/** A 32-bit seed for request `index` of a run: each request is reproducible on its own. */
export function mix(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/** mulberry32, with the few ways the grammar chooses. */
export function random(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const r = {
    next,
    int: (n) => Math.floor(next() * n),
    between: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    /** Calls one of `[weight, make]`, chosen by weight. */
    one: (alternatives) => {
      let total = 0
      for (const [w] of alternatives) total += w
      let x = next() * total
      for (const [w, make] of alternatives) {
        x -= w
        if (x < 0 && w > 0) return make()
      }
      return alternatives.findLast(([w]) => w > 0)[1]()
    },
  }
  return r
}

// --- Text -------------------------------------------------------------------------------------

const hex = (b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`
const unreserved = /^[A-Za-z0-9\-_.!~*'()]$/

/** encodeURIComponent that never throws: a lone surrogate goes out as U+FFFD. */
export function enc(value) {
  try {
    return encodeURIComponent(value)
  } catch {}
  let out = ''
  for (const b of Buffer.from(String(value))) {
    const c = String.fromCharCode(b)
    out += unreserved.test(c) ? c : hex(b)
  }
  return out
}

/** As typed by a careless client: printable ASCII kept raw ('&', '%', '#', '+' too). */
const rawish = (value) => String(value).replace(/[^\x21-\x7e]/g, (c) => enc(c))
/** Every byte percent-encoded, letters too. */
const overEncoded = (value) => [...Buffer.from(String(value))].map(hex).join('')
/** What Node lets through as a header value: UTF-8 bytes read as Latin-1, no controls. */
const headerSafe = (value) =>
  Buffer.from(String(value))
    .toString('latin1')
    .replace(/[^\t\x20-\x7e\x80-\xff]/g, '')
const b64url = (text) => Buffer.from(text).toString('base64url')

const alphabets = {
  b64: 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_',
  id: 'abcdefghijklmnopqrstuvwxyz0123456789',
  ascii:
    ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~',
  odd: '\u0000\u0001\t\n\r \u007f\u0080\u00a0\u00ff\u0100\u2028\u202e\ud800\udfff\ufeff\uffff😀é日%+&=?#/\\.;:,"\'<>`{}[]|^~$',
}

const latin1 = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i))

const chars = (r, alphabet, n) => {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[r.int(alphabet.length)]
  return s
}

const oddStrings = [
  '',
  ' ',
  '%',
  '%zz',
  '%00',
  '%%',
  '..',
  '.',
  '/',
  '//',
  '\\',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-1',
  '0',
  '1e309',
  'true',
  '[]',
  '{}',
  '<script>alert(1)</script>',
  "' OR '1'='1",
  '"; DROP TABLE tokens; --',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, sent as typed
  '${7*7}',
  '{{7*7}}',
  '\u0000',
  '\ufeff',
  '\ud800',
  'é',
  '日本語',
  '😀',
  '\u202e',
  'a\nb',
  'a\r\nSet-Cookie: x=1',
]

function junkString(r) {
  return r.one([
    [5, () => r.pick(oddStrings)],
    [3, () => chars(r, r.pick(Object.values(alphabets)), r.between(1, 40))],
    [
      1,
      () =>
        r
          .pick(['a', '%', 'é', '\u0000', '/', '.', '😀'])
          .repeat(r.pick([33, 256, 1025, 2049, 5000])),
    ],
  ])
}

/** One to three edits of a valid string: flipped, dropped, inserted characters and the like. */
function mutate(r, value) {
  let out = String(value)
  for (let n = r.between(1, 3); n > 0; n--) {
    const at = r.int(out.length + 1)
    const before = out
    out = r.one([
      [4, () => before.slice(0, at) + chars(r, alphabets.b64, 1) + before.slice(at + 1)],
      [2, () => before.slice(0, at) + before.slice(at + 1)],
      [
        2,
        () =>
          before.slice(0, at) +
          chars(r, r.pick([alphabets.b64, alphabets.odd]), 1) +
          before.slice(at),
      ],
      [1, () => before.slice(0, at)],
      [1, () => before + before.slice(at)],
      [1, () => before.toUpperCase()],
      [1, () => ` ${before} `],
      [1, () => before + junkString(r)],
    ])
  }
  return out === String(value) ? `${out}~` : out
}

// --- Values -----------------------------------------------------------------------------------

const numbers = [
  0,
  -0,
  1,
  -1,
  0.5,
  1.5,
  1e21,
  1e308,
  -1e308,
  5e-324,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  253402300799,
  253402300800,
  8.64e15,
  8.64e15 + 1,
]

/** An own property, even for `__proto__`. */
const put = (object, key, value) =>
  Object.defineProperty(object, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })

function nest(depth, asArray) {
  let v = asArray ? [] : {}
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v }
  return v
}

const fieldNames = ['u', 'a', 'exp', 'iat', 'scopes', 'note', 'id', '__proto__', 'constructor']

function junkValue(r, depth = 0) {
  const deeper = depth < 3 ? 1 : 0
  return r.one([
    [3, () => r.pick(numbers)],
    [3, () => junkString(r)],
    [1, () => r.pick([true, false, null])],
    [deeper, () => Array.from({ length: r.int(5) }, () => junkValue(r, depth + 1))],
    [
      deeper,
      () => {
        const o = {}
        for (let n = r.int(4); n > 0; n--) {
          put(o, r.chance(0.7) ? r.pick(fieldNames) : junkString(r), junkValue(r, depth + 1))
        }
        return o
      },
    ],
    [0.2, () => nest(r.between(50, 3000), r.chance(0.5))],
  ])
}

// --- Accounts, ids, tokens --------------------------------------------------------------------

const someAccount = (r, m) => r.pick(m.accounts)

function username(r, m) {
  const a = someAccount(r, m)
  return r.one([
    [8, () => a.username],
    [1, () => 'nobody'],
    [2, () => mutate(r, a.username)],
    [1, () => junkString(r)],
  ])
}

/**
 * A token id for a path. Only when reading may it name a token the fuzzer authenticates with:
 * an update or delete of those would leave the rest of the run with nothing valid to mutate.
 */
function targetId(r, m, a, reading) {
  return r.one([
    [5, () => r.pick(a.victims).id],
    [2, () => a.defaultId],
    [1, () => r.pick(someAccount(r, m).victims).id],
    [reading ? 2 : 0, () => r.pick([a.skId, a.richId, a.pkId])],
    [2, () => mutate(r, r.pick(a.victims).id)],
    [1, () => `c${chars(r, alphabets.id, 24)}`],
    [1, () => junkString(r)],
  ])
}

function validToken(r, a) {
  return r.one([
    [3, () => a.sk],
    [3, () => a.rich],
    [2, () => a.pk],
    [2, () => a.tk],
    [1, () => a.defaultToken],
    [2, () => r.pick(a.victims).token],
  ])
}

const usages = ['pk', 'sk', 'tk', 'PK', 'Sk', 'xk', '', 'pk ', 'pkk', 'p', '\u0000']

function mutateToken(r, m, token) {
  const [usage = '', payload = '', signature = ''] = token.split('.')
  const other = validToken(r, someAccount(r, m)).split('.')
  return r.one([
    [3, () => mutate(r, token)],
    [2, () => [r.pick(usages), payload, signature].join('.')],
    [1, () => [usage, other[1], signature].join('.')],
    [1, () => [usage, payload, other[2]].join('.')],
    [1, () => [usage, Buffer.from(payload, 'base64url').toString('base64'), signature].join('.')],
    [1, () => [usage, payload, mutate(r, signature)].join('.')],
    [1, () => `${token}.${r.pick(['', signature, junkString(r)])}`],
    [1, () => `${usage}.${payload}`],
    [1, () => token.replaceAll('.', r.pick(['', '..', '%2E', ':', ' ']))],
  ])
}

const sign = (signed, secret) =>
  createHmac('sha256', secret).update(signed).digest().subarray(0, 16).toString('base64url')

function forgeToken(r, m) {
  const usage = r.one([
    [8, () => r.pick(['pk', 'sk', 'tk'])],
    [1, () => r.pick(usages)],
  ])
  const text = payloadText(r, m, usage)
  const encoded = r.one([
    [8, () => b64url(text)],
    [1, () => Buffer.from(text).toString('base64')],
    [1, () => mutate(r, b64url(text))],
  ])
  const signed = `${usage}.${encoded}`
  const signature = r.one([
    [m.secret ? 6 : 0, () => sign(signed, m.secret)],
    [2, () => chars(r, alphabets.b64, 22)],
    [m.secret ? 1 : 0, () => mutate(r, sign(signed, m.secret))],
  ])
  return `${signed}.${signature}`
}

function pickScopes(r, m) {
  const out = []
  for (let n = r.int(5); n > 0; n--) out.push(r.pick(m.scopes))
  return out
}

function payloadText(r, m, usage) {
  const a = someAccount(r, m)
  const t = Math.floor(m.now / 1000)
  const u = () =>
    r.one([
      [6, () => a.username],
      [1, () => username(r, m)],
      [1, () => junkValue(r)],
    ])
  const time = () =>
    r.one([
      [4, () => t + r.between(-120, 3600)],
      [1, () => t - 86400],
      [2, () => r.pick(numbers)],
      [1, () => junkValue(r)],
      [1, () => String(t)],
    ])
  const scopes = () =>
    r.one([
      [4, () => pickScopes(r, m)],
      [1, () => junkValue(r)],
      [1, () => Array.from({ length: r.between(100, 1000) }, () => r.pick(m.scopes))],
    ])
  const object =
    usage === 'tk' || r.chance(0.2)
      ? {
          u: u(),
          exp: time(),
          iat: time(),
          scopes: scopes(),
          client: r.one([
            [5, () => 'api'],
            [1, () => junkValue(r)],
          ]),
        }
      : {
          u: u(),
          a: r.one([
            [5, () => r.pick([a.skId, a.richId, a.pkId, a.defaultId, r.pick(a.victims).id])],
            [1, () => targetId(r, m, a, true)],
            [1, () => junkValue(r)],
          ]),
        }
  if (r.chance(0.15)) delete object[r.pick(Object.keys(object))]
  if (r.chance(0.15)) put(object, r.chance(0.7) ? r.pick(fieldNames) : junkString(r), junkValue(r))
  const raw = () => {
    const s = JSON.stringify(a.username)
    return r.pick([
      `{"u":${s},"exp":1e999,"iat":1}`,
      `{"u":${s},"exp":-1e999,"iat":0}`,
      `{"u":${s},"a":"${a.skId}","u":"nobody"}`,
      `{"__proto__":{"u":${s}},"a":"${a.skId}"}`,
      `{"u":${s},"a":"${a.skId}"`,
      `{"u":${s},"exp":${t + 600},"iat":${t},"scopes":"tokens:read","client":"api"}`,
      `{"u":${s},"exp":${t + 600}.5,"iat":${t}}`,
      `{"u":${s},"exp":"${t + 600}","iat":${t}}`,
      `{"u":${s},"exp":${t + 600},"iat":${t},"scopes":[null,1,{},"tokens:write"]}`,
      `{"u":${s},"exp":${t + 600},"iat":${t},"scopes":{"length":1,"0":"tokens:write"}}`,
      '\ufeff{"u":"x"}',
      '{"u":"\\ud800"}',
      '{"u":"\\u0000"}',
      '{"u":""}',
      '{"u":"x"} junk',
      '{}',
      '[]',
      'null',
      '1',
      '"u"',
      '',
      ' ',
      '{"u":1}',
    ])
  }
  return r.one([
    [12, () => JSON.stringify(object)],
    [1, () => JSON.stringify(junkValue(r)) ?? ''],
    [1, raw],
  ])
}

function tokenString(r, m) {
  const a = someAccount(r, m)
  return r.one([
    [6, () => validToken(r, a)],
    [4, () => mutateToken(r, m, validToken(r, a))],
    [5, () => forgeToken(r, m)],
    [1, () => junkString(r)],
  ])
}

// --- Queries and paths ------------------------------------------------------------------------

const isoShapes = [
  '9999-99-99T99:99:99.999Z',
  '0000-00-00T00:00:00.000Z',
  '2026-02-30T24:60:60.999Z',
  '1970-01-01T00:00:00.000Z',
  '+275760-09-13T00:00:00.000Z',
  '2026-11-23T10:00:00Z',
]

function cursor(r, m, a) {
  return r.one([
    [3, () => r.pick(a.cursors)],
    [2, () => mutate(r, r.pick(a.cursors))],
    [
      3,
      () =>
        b64url(
          JSON.stringify([
            r.chance(0.8) ? a.username : username(r, m),
            r.one([
              [4, () => r.pick(['created', 'modified'])],
              [1, () => junkValue(r)],
            ]),
            r.one([
              [3, () => new Date(m.now - r.int(1e7)).toISOString()],
              [3, () => r.pick(isoShapes)],
              [1, () => junkValue(r)],
            ]),
            r.one([
              [3, () => targetId(r, m, a, true)],
              [1, () => junkValue(r)],
            ]),
          ]),
        ),
    ],
    [1, () => junkString(r)],
    [1, () => r.pick(someAccount(r, m).cursors)],
  ])
}

function listQuery(r, m, a) {
  const q = []
  if (r.chance(0.4)) {
    q.push([
      'limit',
      r.one([
        [3, () => String(r.between(1, 100))],
        [
          2,
          () =>
            r.pick([
              '0',
              '101',
              '-1',
              '1.5',
              '1e2',
              ' 1',
              '',
              'abc',
              '99999999999999999999',
              '0x10',
              '٣',
              '001',
              '0100',
              '1\u0000',
              '+5',
            ]),
        ],
        [1, () => junkString(r)],
      ]),
    ])
  }
  const pickOr = (values) =>
    r.one([
      [4, () => r.pick(values)],
      [1, () => junkString(r)],
    ])
  if (r.chance(0.3)) q.push(['sortby', pickOr(['created', 'modified', 'CREATED', ''])])
  if (r.chance(0.3)) q.push(['usage', pickOr(['pk', 'sk', 'tk', 'PK', ''])])
  if (r.chance(0.3)) q.push(['default', pickOr(['true', 'false', '1', '0', 'TRUE', ''])])
  if (r.chance(0.3)) q.push(['start', cursor(r, m, a)])
  return q
}

const tokenNames = [
  'access%5Ftoken',
  'access%5ftoken',
  'ACCESS_TOKEN',
  'access_token[]',
  'access_token%00',
  '%20access_token',
  'access-token',
  'accessToken',
]

function encName(r, name) {
  if (name !== 'access_token' || r.chance(0.92)) return enc(name)
  return r.pick(tokenNames)
}

function queryString(r, pairs) {
  if (pairs.length === 0) return r.chance(0.02) ? r.pick(['?', '??', '?&', '?=']) : ''
  const parts = pairs.map(([k, v]) =>
    r.one([
      [12, () => `${encName(r, k)}=${enc(v)}`],
      [1, () => `${rawish(k)}=${rawish(v)}`],
      [1, () => `${enc(k)}=${enc(enc(v))}`],
      [1, () => `${enc(k)}=${overEncoded(v)}`],
      [1, () => enc(k)],
    ]),
  )
  const sep = r.one([
    [20, () => '&'],
    [1, () => '&&'],
    [1, () => ';'],
    [1, () => '&=&'],
  ])
  const tail = r.chance(0.03) ? r.pick(['&', '#frag', '&access_token', '=', '?x']) : ''
  return `?${parts.join(sep)}${tail}`
}

function withToken(r, m, pairs, p = 0.85) {
  const q = [...pairs]
  if (r.chance(p)) q.splice(r.int(q.length + 1), 0, ['access_token', tokenString(r, m)])
  if (r.chance(0.08)) q.splice(r.int(q.length + 1), 0, ['access_token', tokenString(r, m)])
  if (r.chance(0.05)) q.push([junkString(r), junkString(r)])
  return q
}

function seg(r, value) {
  return r.one([
    [10, () => enc(value)],
    [1, () => rawish(value)],
    [1, () => enc(enc(value))],
    [1, () => overEncoded(value)],
  ])
}

function pathJunk(r, p) {
  return r.one([
    [30, () => p],
    [1, () => p.replaceAll('/', '//')],
    [1, () => `${p}/`],
    [1, () => `/.${p}`],
    [1, () => p.replace(/\/([^/]*)$/, '/x/../$1')],
    [1, () => p.replace(/\/([^/]*)$/, '/./$1')],
    [1, () => p.toUpperCase()],
    [1, () => p.replace(/\/(?=[^/]*$)/, '%2F')],
    [1, () => `${p};x=1`],
    [1, () => `${p}/${'a'.repeat(r.pick([1000, 8000, 20000]))}`],
    [1, () => `${p}${r.pick(['%', '%zz', '%E0%A4%A', '%C0%AF', '%00', '%FF%FE', '%u0041'])}`],
  ])
}

// --- Bodies -----------------------------------------------------------------------------------

const urls = [
  'https://example.com',
  'example.com',
  '*.example.com',
  'http://localhost:8080/path',
  'https://a.b.c/x?y#z',
  'ftp://example.com',
  'javascript:alert(1)',
  'http://',
  'https://[::1]:443',
  'http://999.999.999.999',
  '*.',
  '*',
  '',
  ' example.com ',
  'https://exa mple.com',
  'http://é.com',
  'https://example.com:99999',
  'https://user:pass@example.com',
  '//example.com',
  'https://*.example.com',
  'example.com:80/a/b',
]

function urlList(r, n) {
  return Array.from({ length: n }, () =>
    r.one([
      [6, () => r.pick(urls)],
      [1, () => `https://${'a'.repeat(r.pick([60, 2040, 2100]))}.com`],
      [1, () => junkString(r)],
    ]),
  )
}

function expires(r, m) {
  const at = (ms) => new Date(ms).toISOString()
  return r.one([
    [4, () => at(m.now + r.between(1, 59) * 60_000)],
    [1, () => at(m.now - 60_000)],
    [1, () => at(m.now + 2 * 3_600_000)],
    [1, () => at(m.now + 30 * 60_000).replace('Z', '')],
    [1, () => at(m.now + 30 * 60_000).replace('Z', '+02:00')],
    [1, () => at(m.now + 30 * 60_000).replace(/\.\d+Z$/, 'Z')],
    [1, () => at(m.now + 30 * 60_000).replace('Z', '123456789Z')],
    [
      2,
      () =>
        r.pick([
          '2026-02-30T00:00:00Z',
          '+275760-09-13T00:00:00.000Z',
          '-271821-04-20T00:00:00.000Z',
          '9999-12-31T23:59:59Z',
          '0000-01-01T00:00:00Z',
          '2026-11-23T10:00:00+25:00',
          '2026-11-23 10:00:00',
          '1700000000',
          'now',
          '',
          'T',
          'Z',
        ]),
    ],
    [2, () => junkValue(r)],
  ])
}

/** A token body for create or update, its fields valid-ish, missing, or of the wrong kind. */
function tokenBody(r, m, kind) {
  const body = {}
  if (r.chance(0.5)) {
    body.note = r.one([
      [4, () => `fuzz ${r.int(1000)}`],
      [1, () => ''],
      [1, () => 'n'.repeat(r.pick([1024, 1025]))],
      [1, () => '<script>alert(1)</script>'],
      [2, () => junkValue(r)],
    ])
  }
  if (r.chance(0.7)) {
    body.scopes = r.one([
      [6, () => pickScopes(r, m)],
      [1, () => []],
      [1, () => Array.from({ length: r.pick([200, 5000]) }, () => r.pick(m.scopes))],
      [1, () => Array.from({ length: r.between(1, 5) }, () => junkString(r))],
      [2, () => junkValue(r)],
    ])
  }
  if (r.chance(0.3)) {
    body.allowedUrls = r.one([
      [5, () => urlList(r, r.between(0, 4))],
      [1, () => null],
      [1, () => urlList(r, r.pick([100, 101, 300]))],
      [0.1, () => Array.from({ length: 20_000 }, (_, i) => `h${i}.example.com`)],
      [2, () => junkValue(r)],
    ])
  }
  if (kind === 'create' && r.chance(0.35)) body.expires = expires(r, m)
  if (r.chance(0.1)) {
    put(
      body,
      r.pick(['__proto__', 'constructor', 'usage', 'default', 'id', 'token', 'client', 'u']),
      junkValue(r),
    )
  }
  return r.one([
    [14, () => JSON.stringify(body)],
    [1, () => JSON.stringify(junkValue(r)) ?? 'undefined'],
    [
      2,
      () =>
        r.pick([
          '',
          'null',
          '[]',
          '"x"',
          '123',
          'true',
          '{',
          '{"note":',
          '{"scopes":["styles:read"],"scopes":"x"}',
          '{"__proto__":{"scopes":["tokens:write"]},"note":"x"}',
          '{"constructor":{"prototype":{"x":1}}}',
          '\ufeff{}',
          '{"scopes":[1e999]}',
          '{"expires":1e999}',
          '{}}',
          'note=x&scopes=styles:read',
          '\u0000',
        ]),
    ],
    [0.5, () => `${'['.repeat(20_000)}${']'.repeat(20_000)}`],
    [0.5, () => `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
    [0.5, () => chars(r, latin1, r.between(1, 300))],
  ])
}

function formBody(r, pairs) {
  return pairs
    .map(([k, v]) =>
      r.one([
        [12, () => `${enc(k)}=${enc(v).replaceAll('%20', '+')}`],
        [1, () => `${k}=${rawish(v)}`],
        [1, () => enc(k)],
      ]),
    )
    .join('&')
}

const contentTypes = [
  'application/json; charset=utf-8',
  'application/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  '',
  ';;;',
  'application/json; charset=utf-16',
  '*/*',
  'application/vnd.api+json',
  `application/json; x=${'a'.repeat(3000)}`,
]

function contentType(r, kind) {
  const natural = kind === 'form' ? 'application/x-www-form-urlencoded' : 'application/json'
  return r.one([
    [10, () => natural],
    [2, () => r.pick(contentTypes)],
    [1, () => headerSafe(junkString(r))],
  ])
}

// --- Requests ---------------------------------------------------------------------------------

const methods = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS']
const junkMethods = [
  'PROPFIND',
  'TRACE',
  'FOO',
  'SEARCH',
  'QUERY',
  'PURGE',
  'MKCOL',
  'LINK',
  'M-SEARCH',
  'get',
  'Post',
  'X'.repeat(100),
]
const isReading = (method) => method === 'GET' || method === 'HEAD' || method === 'OPTIONS'

function apiRoute(r, m, method) {
  const a = someAccount(r, m)
  return r.one([
    [
      10,
      () => ({
        path: r.pick(['/tokens/v2', '/tokens/v2/']),
        method: method ?? 'GET',
        query: withToken(r, m, [], 0.9),
      }),
    ],
    [
      12,
      () => ({
        path: `/tokens/v2/${seg(r, username(r, m))}`,
        method: method ?? 'GET',
        query: withToken(r, m, listQuery(r, m, a)),
      }),
    ],
    [
      14,
      () => ({
        path: `/tokens/v2/${seg(r, username(r, m))}`,
        method: method ?? 'POST',
        query: withToken(r, m, []),
        json: 'create',
      }),
    ],
    [
      8,
      () => {
        const verb = method ?? 'PATCH'
        return {
          path: `/tokens/v2/${seg(r, username(r, m))}/${seg(r, targetId(r, m, a, isReading(verb)))}`,
          method: verb,
          query: withToken(r, m, []),
          json: 'update',
        }
      },
    ],
    [
      6,
      () => {
        const verb = method ?? 'DELETE'
        return {
          path: `/tokens/v2/${seg(r, username(r, m))}/${seg(r, targetId(r, m, a, isReading(verb)))}`,
          method: verb,
          query: withToken(r, m, []),
        }
      },
    ],
    [
      6,
      () => ({
        path: `/scopes/v1/${seg(r, username(r, m))}`,
        method: method ?? 'GET',
        query: withToken(r, m, []),
      }),
    ],
  ])
}

function miscRoute(r, m, method) {
  return r.one([
    [
      3,
      () => ({
        path: r.pick([
          '/openapi.json',
          '/healthz',
          '/readyz',
          '/',
          '/favicon.ico',
          '/robots.txt',
          '/docs',
          '/openapi.yaml',
          '/tokens',
          '/tokens/v1',
          '/scopes',
          '/scopes/v1',
          '/scopes/v1/',
          '/.env',
          '/account/../tokens/v2',
          '/tokens/v2/../../etc/passwd',
        ]),
        method: method ?? 'GET',
        query: withToken(r, m, [], 0.2),
      }),
    ],
    [
      3,
      () => ({
        path: `/${Array.from({ length: r.between(1, 6) }, () => seg(r, junkString(r))).join('/')}`,
        method: method ?? r.pick(methods),
        query: withToken(r, m, [], 0.3),
        json: r.chance(0.3) ? 'create' : undefined,
      }),
    ],
  ])
}

/**
 * The cookie a dashboard request carries. A stable holder's session is only ever sent where
 * nothing can end it; broken cookies are made from the sacrificial holder's (a mutation may
 * leave a cookie valid: " x " is trimmed).
 */
function dashboardSession(r, m, stableAllowed) {
  const stable = m.accounts.filter((a) => !a.sacrificial)
  const spare = m.accounts.find((a) => a.sacrificial)
  const broken = (cookie) => ({ account: r.pick(stable), cookie })
  return r.one([
    [stableAllowed ? 6 : 0, () => ({ account: r.pick(stable), valid: true })],
    [2, () => ({ account: spare, valid: true })],
    [1, () => broken(mutate(r, spare.session.cookie))],
    [2, () => broken(undefined)],
    [
      1,
      () =>
        broken(
          r.pick([
            `__Host-tessera_session=${chars(r, alphabets.b64, 43)}`,
            '__Host-tessera_session=',
            `${spare.session.cookie}; ${spare.session.cookie}`,
            `a=b; __Host-tessera_session=${chars(r, alphabets.b64, 43)}; c`,
            junkString(r),
            ';;;=',
          ]),
        ),
    ],
  ])
}

/** The form's CSRF field: the session's own only where `allowValid`, else a wrong one. */
function csrf(r, m, session, allowValid) {
  const own = session.valid ? session.account.session.csrf : r.pick(m.accounts).session.csrf
  const others = m.accounts.filter((a) => a !== session.account)
  return r.one([
    [allowValid && session.valid ? 8 : 0, () => [['_csrf', own]]],
    [1, () => [['_csrf', mutate(r, own)]]],
    [1, () => []],
    [1, () => [['_csrf', r.pick(others).session.csrf]]],
    [
      1,
      () => [
        ['_csrf', ''],
        ['_csrf', own],
      ],
    ],
    [1, () => [['_csrf', junkString(r)]]],
  ])
}

function tokenForm(r, m) {
  const pairs = []
  if (r.chance(0.8)) {
    pairs.push([
      'note',
      r.one([
        [5, () => `fuzz ${r.int(1000)}`],
        [1, () => 'n'.repeat(r.pick([1024, 1025, 5000]))],
        [2, () => junkString(r)],
      ]),
    ])
  }
  for (let n = r.int(5); n > 0; n--) {
    pairs.push(['scopes', r.chance(0.85) ? r.pick(m.scopes) : junkString(r)])
  }
  if (r.chance(0.5)) {
    const lines = urlList(r, r.pick([0, 1, 2, 3, 100, 101, 150]))
    pairs.push(['allowedUrls', lines.join(r.pick(['\n', '\r\n', '\r']))])
  }
  return pairs
}

function dashboardRoute(r, m, method) {
  const verb = (natural) => method ?? natural
  const page = r.one([
    [3, () => ({ path: '/account', method: verb('GET') })],
    [1, () => ({ path: '/account/', method: verb('GET') })],
    [
      2,
      () => ({ path: '/account/sign-in', method: verb(r.pick(['GET', 'POST'])), signedOut: true }),
    ],
    [
      1,
      () => ({ path: '/account/sign-up', method: verb(r.pick(['GET', 'POST'])), signedOut: true }),
    ],
    [
      1,
      () => ({
        path: `/account/setup/${seg(r, r.chance(0.6) ? r.pick(m.accounts).setupLink : mutate(r, r.pick(m.accounts).setupLink))}`,
        method: verb(r.pick(['GET', 'POST'])),
        signedOut: true,
        setup: true,
      }),
    ],
    [
      3,
      () => ({ path: '/account/tokens/new', method: verb(r.pick(['GET', 'POST'])), form: 'token' }),
    ],
    [
      3,
      () => {
        const v = verb(r.pick(['GET', 'POST']))
        return { path: '/account/tokens/', method: v, id: true, form: 'token' }
      },
    ],
    [
      2,
      () => {
        const v = verb(r.pick(['GET', 'POST']))
        return { path: '/account/tokens/', suffix: '/delete', method: v, id: true }
      },
    ],
    [2, () => ({ path: '/account/temporary', method: verb(r.pick(['GET', 'POST'])), form: 'tk' })],
    [1, () => ({ path: '/account/scopes', method: verb('GET') })],
    [1, () => ({ path: '/account/settings', method: verb('GET') })],
    // Each of these with a session costs a scrypt (some 100 ms of CPU): a few go a long way.
    [0.2, () => ({ path: '/account/settings/password', method: verb('POST'), danger: true })],
    [0.5, () => ({ path: '/account/sign-out', method: verb('POST'), danger: true })],
    [0.5, () => ({ path: '/account/sign-out-everywhere', method: verb('POST'), danger: true })],
    [
      1,
      () => ({
        path: `/account/assets/${seg(r, r.chance(0.6) ? r.pick(['app.css', 'app.js']) : junkString(r))}`,
        method: verb('GET'),
        signedOut: true,
      }),
    ],
    [1, () => ({ path: `/account/${seg(r, junkString(r))}`, method: verb('GET') })],
  ])
  // A successful sign-in, setup or sign-up ends the browser's session: never a stable one.
  const session = dashboardSession(r, m, !(page.signedOut && page.method === 'POST'))
  const a = session.account
  let p = page.path
  if (page.id) p += seg(r, targetId(r, m, a, isReading(page.method)))
  if (page.suffix) p += page.suffix
  const headers = {}
  const cookie = session.valid ? a.session.cookie : session.cookie
  if (cookie !== undefined) headers.cookie = cookie
  const query = []
  if (p.startsWith('/account/sign-in') && r.chance(0.5)) query.push(['next', nextValue(r)])
  if (page.path === '/account' && r.chance(0.4)) {
    query.push([r.pick(['start', 'before']), r.chance(0.5) ? cursor(r, m, a) : junkString(r)])
  }
  if (r.chance(0.1)) query.push([r.pick(['done', 'saved']), r.pick(['deleted', '1', 'password'])])
  let body
  if (page.method === 'POST' || (page.method !== 'GET' && r.chance(0.3))) {
    origin(r, m, headers)
    const pairs = [...csrf(r, m, session, !(page.danger && !a.sacrificial))]
    if (page.form === 'token') pairs.push(...tokenForm(r, m))
    if (page.form === 'tk') {
      for (let n = r.int(4); n > 0; n--) pairs.push(['scopes', r.pick(m.scopes)])
      pairs.push([
        'minutes',
        r.one([
          [4, () => String(r.between(1, 60))],
          [2, () => r.pick(['0', '61', '-5', '1e3', '', ' 30 ', '９', '1.5', '+1', '0x10'])],
          [1, () => junkString(r)],
        ]),
      ])
    }
    if (p.startsWith('/account/sign-in')) pairs.push(...signInForm(r, m, session))
    if (p.startsWith('/account/sign-up')) pairs.push(...signUpForm(r, m))
    if (page.setup) {
      const pw = password(r)
      pairs.push(['password', pw], ['confirm', r.chance(0.7) ? pw : password(r)])
    }
    if (page.path === '/account/settings/password') {
      // Only the sacrificial holder's password is ever right, and then it changes to itself.
      const right = a.sacrificial && r.chance(0.3)
      pairs.push(
        ['current', right ? a.password : password(r)],
        ['password', right ? r.pick([a.password, 'short']) : password(r)],
      )
    }
    body = r.one([
      [12, () => formBody(r, pairs)],
      [1, () => JSON.stringify(Object.fromEntries(pairs))],
      [0.3, () => formBody(r, [...pairs, ['allowedUrls', 'x'.repeat(600_000)]])],
      [1, () => junkString(r)],
    ])
  }
  return { path: p, method: page.method, query, headers, body, form: true }
}

function nextValue(r) {
  return r.pick([
    '/account/tokens/new',
    '/account/settings?x=1',
    '//evil.example',
    'https://evil.example/account',
    '/account/../../x',
    '/account\\@evil.example',
    '/account/%2F%2Fevil.example',
    '/accountx',
    '/account#x',
    ' /account',
    junkString(r),
  ])
}

function password(r) {
  return r.one([
    [3, () => chars(r, alphabets.ascii, r.between(12, 40))],
    [1, () => chars(r, alphabets.ascii, r.between(0, 11))],
    [1, () => 'p'.repeat(r.pick([256, 257, 5000]))],
    [1, () => junkString(r)],
  ])
}

function signInForm(r, m, session) {
  const a = r.pick(m.accounts)
  // The right password ends the browser's session: only the sacrificial account's, or none.
  const right = a.sacrificial || !session.valid
  return [
    ['username', r.chance(0.7) ? a.username : username(r, m)],
    ['password', right && r.chance(0.2) ? a.password : password(r)],
    ['next', nextValue(r)],
  ]
}

function signUpForm(r, m) {
  return [
    [
      'username',
      r.one([
        [3, () => `f${chars(r, alphabets.id, 8)}`],
        [1, () => r.pick(m.accounts).username],
        [2, () => junkString(r)],
      ]),
    ],
    ['password', password(r)],
  ]
}

/** Origin and Referer: the dashboard's own mostly, else missing, foreign or broken. */
function origin(r, m, headers) {
  r.one([
    [
      10,
      () => {
        headers.origin = m.origin
      },
    ],
    [
      2,
      () => {
        headers.referer = `${m.origin}/account/tokens/new`
      },
    ],
    [1, () => {}],
    [
      2,
      () => {
        headers.origin = r.pick([
          'null',
          'https://evil.example',
          'https://127.0.0.1:1',
          m.origin.toUpperCase(),
          `${m.origin}/`,
          `${m.origin}.evil.example`,
          'a',
          '',
          'https://[::1',
          `https://${'a'.repeat(5000)}`,
        ])
      },
    ],
    [
      1,
      () => {
        headers.referer = r.pick(['https://evil.example/', 'junk', '', `${m.origin}@evil.example/`])
      },
    ],
  ])
}

/** Headers any request may carry: odd content types, huge values, hosts, encodings. */
function decorate(r, m, req) {
  const h = req.headers
  if (req.body !== undefined && r.chance(0.92)) {
    h['content-type'] = contentType(r, req.form ? 'form' : 'json')
  }
  if (r.chance(0.04)) origin(r, m, h)
  if (r.chance(0.02)) h['x-fuzz'] = 'a'.repeat(r.pick([4000, 17_000, 70_000]))
  if (r.chance(0.01)) {
    for (let i = r.between(50, 300); i > 0; i--) h[`x-h${i}`] = 'v'
  }
  if (r.chance(0.02)) {
    h.host = r.pick(['evil.example', '', '127.0.0.1', 'localhost:1', 'a'.repeat(300), '[::1]'])
  }
  if (r.chance(0.01)) req.setHost = false
  if (r.chance(0.02)) h['content-encoding'] = r.pick(['gzip', 'br', 'identity', 'deflate', 'junk'])
  if (r.chance(0.02)) h['transfer-encoding'] = 'chunked'
  if (r.chance(0.01)) h.expect = r.pick(['100-continue', 'junk'])
  if (r.chance(0.03)) {
    h['x-forwarded-proto'] = r.pick(['http', 'https', 'junk'])
    h['x-forwarded-for'] = headerSafe(junkString(r))
  }
  if (r.chance(0.02)) h.accept = r.pick(['text/html', '*/*', 'application/json;q=0', ';;;'])
  if (r.chance(0.02)) h['accept-encoding'] = r.pick(['gzip', 'br', 'identity;q=0', '*'])
  if (r.chance(0.01)) h.connection = r.pick(['close', 'keep-alive', 'junk'])
  if (r.chance(0.01)) h.range = r.pick(['bytes=0-1', 'bytes=-1', 'junk'])
  if (r.chance(0.01)) h['if-none-match'] = '*'
  if (r.chance(0.01)) h.authorization = headerSafe(`Bearer ${tokenString(r, m)}`)
  if (r.chance(0.01)) h.cookie = headerSafe(junkString(r))
  if (req.method === 'OPTIONS' && r.chance(0.7)) {
    h['access-control-request-method'] = r.pick([...methods, 'FOO', ''])
    h['access-control-request-headers'] = r.pick([
      'content-type',
      'x-a, x-b',
      'x'.repeat(5000),
      headerSafe(junkString(r)),
    ])
  }
}

function apiBody(r, m, route) {
  const wanted = route.json && (route.method !== 'GET' || r.chance(0.1))
  if (wanted) return tokenBody(r, m, route.json)
  return r.chance(0.03) ? tokenBody(r, m, 'create') : undefined
}

/** Request `index` of run `seed`: {method, path, headers, body} or, for raw bytes, {raw}. */
export function generate(m, seed, index) {
  const r = random(mix(seed, index))
  if (r.chance(0.03)) return { index, raw: rawRequest(r, m) }
  const method = r.one([
    [85, () => undefined],
    [10, () => r.pick(methods)],
    [5, () => r.pick(junkMethods)],
  ])
  const route = r.one([
    [56, () => apiRoute(r, m, method)],
    [16, () => dashboardRoute(r, m, method)],
    [6, () => miscRoute(r, m, method)],
  ])
  const req = {
    index,
    method: route.method,
    path: '',
    headers: route.headers ?? {},
    body: route.form ? route.body : apiBody(r, m, route),
    form: route.form === true,
  }
  req.path = pathJunk(r, route.path) + queryString(r, route.query)
  decorate(r, m, req)
  for (const [k, v] of Object.entries(req.headers)) req.headers[k] = headerSafe(v)
  // Node frames a body of GET, HEAD, DELETE or OPTIONS only when told its length.
  if (req.body !== undefined && req.headers['transfer-encoding'] === undefined) {
    req.headers['content-length'] = String(Buffer.byteLength(req.body))
  }
  return req
}

const rawJunkHeaders = [
  'NoColon',
  ': novalue',
  'X-A: a\rb',
  ' folded: x',
  '\tfolded',
  'X-Ü: é',
  'X-Nul: \u0000',
  'Content-Length: -1',
  'Content-Length: 0x10',
  'Content-Length: 1e3',
  'Content-Length: 0, 0',
  'Transfer-Encoding: gzip, chunked',
  'Transfer-Encoding: chunked, identity',
  'Transfer-Encoding: xchunked',
  'Content-Type: application/json\r\nContent-Type: text/plain',
  `X-Long: ${'a'.repeat(20_000)}`,
  'Host: evil.example',
  'Expect: 100-continue',
  'Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA',
  'Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13',
]

/** Bytes Node's client would refuse to send: broken request lines, headers and framings. */
function rawRequest(r, m) {
  const a = someAccount(r, m)
  const target = r.one([
    [3, () => `/tokens/v2?access_token=${enc(tokenString(r, m))}`],
    [2, () => `/tokens/v2/${a.username}?access_token=${a.sk}`],
    [2, () => `/tokens/v2/${chars(r, alphabets.odd, r.between(1, 10))}?access_token=${a.sk}`],
    [1, () => '*'],
    [1, () => `${m.origin}/tokens/v2?access_token=${a.pk}`],
    [1, () => 'http://evil.example/account'],
    [1, () => ''],
    [1, () => `/account/${chars(r, alphabets.odd, 5)}`],
    [1, () => '/healthz'],
  ])
  const method = r.one([
    [8, () => r.pick(['GET', 'POST', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'])],
    [1, () => r.pick(['CONNECT', 'TRACE', 'PRI', 'G@T', 'GET\t', 'get', '', '\u0000', 'POST /x'])],
  ])
  const version = r.one([
    [8, () => 'HTTP/1.1'],
    [
      1,
      () => r.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'HTTP/9.9', 'http/1.1', '', 'HTTP/1.01']),
    ],
  ])
  const headers = r.chance(0.05) ? [] : [`Host: ${m.host}`]
  for (
    let n = r.one([
      [3, () => 0],
      [2, () => 1],
      [1, () => 2],
    ]);
    n > 0;
    n--
  ) {
    headers.push(r.pick(rawJunkHeaders))
  }
  const json = tokenBody(r, m, 'create')
  const length = Buffer.byteLength(json)
  const framing = r.one([
    [3, () => ({ head: ['Content-Length: 0'], body: '' })],
    [3, () => ({ head: [`Content-Length: ${length}`], body: json })],
    [1, () => ({ head: [`Content-Length: ${r.int(length + 1)}`], body: json })],
    [
      1,
      () => ({
        head: ['Transfer-Encoding: chunked'],
        body: `${length.toString(16)}\r\n${json}\r\n0\r\n\r\n`,
      }),
    ],
    [
      1,
      () => ({
        head: ['Transfer-Encoding: chunked'],
        body: r.pick([
          'zz\r\nabc\r\n0\r\n\r\n',
          '-1\r\n\r\n',
          '1;ext=\u0000\r\na\r\n0\r\n\r\n',
          'ffffffffffffffffffff\r\n',
          '0\r\nTrailer: x\r\n\r\n',
        ]),
      }),
    ],
    [1, () => ({ head: ['Content-Length: 3', 'Transfer-Encoding: chunked'], body: '0\r\n\r\n' })],
    [1, () => ({ head: ['Content-Length: 5', 'Content-Length: 6'], body: 'hello!' })],
  ])
  const lines = [...headers, 'Content-Type: application/json', ...framing.head, 'Connection: close']
  return `${method} ${target} ${version}\r\n${lines.join('\r\n')}\r\n\r\n${framing.body}`
}
