import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { classifyAddress } from '../../src/webhooks/address.js'
import { backoffMs } from '../../src/webhooks/retry.js'
import { Sender } from '../../src/webhooks/sender.js'
import { newSecret, signatureHeader, verifySignature } from '../../src/webhooks/signature.js'
import { parseEndpointUrl, type Resolver, resolveTarget } from '../../src/webhooks/target.js'

const t0 = 1_700_000_000_000

describe('webhook signatures', () => {
  const body = '{"id":"e1"}'

  it('are t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>"> keyed with the whole secret', () => {
    expect(signatureHeader('whsec_test', body, t0 + 999)).toBe(
      't=1700000000,v1=6a85cb117c993612a34c72b4cfb5a16baed25a80d26e298ce0e6671320fd07c8',
    )
  })

  it('verify with the same secret and body, within the tolerance', () => {
    const header = signatureHeader('whsec_test', body, t0)
    expect(verifySignature('whsec_test', body, header, t0 + 299_000)).toBe(true)
    expect(verifySignature('whsec_test', body, header, t0 - 299_000)).toBe(true)
  })

  it.each([
    ['another body', 'whsec_test', '{"id":"e2"}', 0],
    ['another secret', 'whsec_other', body, 0],
    ['a replay after 5 minutes', 'whsec_test', body, 301_000],
  ])('refuse %s', (_, secret, text, later) => {
    const header = signatureHeader('whsec_test', body, t0)
    expect(verifySignature(secret, text, header, t0 + later)).toBe(false)
  })

  it('accept any of several v1 values and refuse malformed headers', () => {
    const good = signatureHeader('whsec_test', body, t0).split(',v1=')[1]
    const bad = '0'.repeat(64)
    expect(verifySignature('whsec_test', body, `t=1700000000,v1=${bad},v1=${good}`, t0)).toBe(true)
    for (const header of ['', 't=1700000000', `v1=${good}`, `t=abc,v1=${good}`]) {
      expect(verifySignature('whsec_test', body, header, t0)).toBe(false)
    }
  })

  it('use secrets of 192 random bits', () => {
    const a = newSecret()
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/)
    expect(newSecret()).not.toBe(a)
  })
})

describe('address classification', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['93.184.215.14', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['fd00::1', 'private'],
    ['fc00::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b:1::1', 'private'],
    ['2002:0a00:0001::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['fec0::1', 'reserved'],
    ['100::1', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind)
  })

  it('is undefined for anything but an IP address', () => {
    for (const text of ['localhost', '1.2.3', '::g', ''])
      expect(classifyAddress(text)).toBe(undefined)
  })
})

describe('endpoint URLs', () => {
  /** The refusal, its reason the details that the admin API and a delivery's error give. */
  const refusedAs = (reason: string | RegExp) =>
    expect.objectContaining({
      kind: 'badWebhookUrl',
      details:
        typeof reason === 'string'
          ? expect.stringContaining(reason)
          : expect.stringMatching(reason),
    })

  it.each([
    ['http://example.com/hook', false, 'url must be an https:// URL'],
    ['ftp://example.com/hook', true, 'url must be an https:// or http:// URL'],
    ['example.com/hook', false, 'url is not an absolute URL'],
    ['https://user:pw@example.com/', false, 'url must not carry a user name or password'],
    [`https://example.com/${'a'.repeat(2048)}`, false, 'url is longer than 2048'],
    // 1,020 characters as given, 6,020 percent-encoded.
    [`https://example.com/${'é'.repeat(1000)}`, false, 'url is longer than 2048 once normalised'],
  ])('refuse %s', (url, allowPrivate, reason) => {
    expect(() => parseEndpointUrl(url, allowPrivate)).toThrow(refusedAs(reason))
  })

  it('take https (and http with private addresses allowed), without the fragment', () => {
    expect(parseEndpointUrl('https://Example.com/a?b=1#c', false).href).toBe(
      'https://example.com/a?b=1',
    )
    expect(parseEndpointUrl('http://127.0.0.1:8080/', true).href).toBe('http://127.0.0.1:8080/')
  })

  const dns: Record<string, string[]> = {
    'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'mixed.example': ['93.184.215.14', '10.0.0.7'],
    'rebound.example': ['169.254.169.254'],
  }
  const resolver: Resolver = async (host) => {
    const list = dns[host]
    if (list === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  const resolve = (url: string, allowPrivate = false) =>
    resolveTarget(new URL(url), allowPrivate, resolver)

  it('resolve to every address when all are public', async () => {
    expect((await resolve('https://public.example/')).map((a) => a.address)).toEqual(
      dns['public.example'],
    )
  })

  it.each([
    ['https://mixed.example/', "url's host mixed.example resolves to a private address (10.0.0.7)"],
    ['https://127.0.0.1/', "url's host 127.0.0.1 is a loopback address"],
    ['https://[::1]/', "url's host ::1 is a loopback address"],
    ['https://[::ffff:7f00:1]/', "url's host ::ffff:7f00:1 is a loopback address"],
    ['https://2130706433/', "url's host 127.0.0.1 is a loopback address"],
    ['https://nowhere.example/', "url's host nowhere.example does not resolve (ENOTFOUND)"],
  ])('refuse %s', async (url, reason) => {
    await expect(resolve(url)).rejects.toThrow(refusedAs(reason))
  })

  it('let private addresses through with WEBHOOK_ALLOW_PRIVATE', async () => {
    expect(await resolve('https://mixed.example/', true)).toHaveLength(2)
  })

  it('resolve localhost, through the system resolver, to a refused loopback address', async () => {
    await expect(resolveTarget(new URL('https://localhost/'), false)).rejects.toThrow(
      refusedAs(/^url's host localhost resolves to a loopback address/),
    )
  })
})

describe('the sender', () => {
  it('checks the address again at delivery and never connects to a refused one', async () => {
    let connections = 0
    const server = createServer((_, res) => res.end()).on('connection', () => connections++)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    try {
      const sender = new Sender({
        allowPrivate: false,
        now: () => t0,
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      })
      const sent = await sender.send(
        { url: `https://rebound.example:${port}/`, secret: 'whsec_x' },
        'e1',
        '{}',
      )
      expect(sent).toMatchObject({ delivered: false, aborted: false })
      expect(sent.attempt).toMatchObject({
        status: null,
        error: "refused: url's host rebound.example resolves to a loopback address (127.0.0.1)",
      })
      expect(connections).toBe(0)
    } finally {
      server.close()
    }
  })

  it('connects to the address it checked, not to what the name resolves to later', async () => {
    const seen: { host?: string; body: string; headers: Record<string, unknown> }[] = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => {
        body += c
      })
      req.on('end', () => {
        seen.push({ host: req.headers.host, body, headers: req.headers })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    try {
      let lookups = 0
      const sender = new Sender({
        allowPrivate: true,
        now: () => t0,
        resolve: async () => {
          lookups++
          return [{ address: '127.0.0.1', family: 4 }]
        },
      })
      const sent = await sender.send(
        { url: `http://hooks.invalid:${port}/in`, secret: 'whsec_x' },
        'e1',
        '{"id":"e1"}',
      )
      expect(sent.delivered).toBe(true)
      expect(sent.attempt).toEqual({
        at: new Date(t0).toISOString(),
        status: 204,
        durationMs: expect.any(Number),
      })
      expect(lookups).toBe(1)
      expect(seen).toHaveLength(1)
      expect(seen[0]).toMatchObject({ host: `hooks.invalid:${port}`, body: '{"id":"e1"}' })
      expect(seen[0]?.headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': 'Tessera-Webhooks/1',
        'tessera-event-id': 'e1',
        'tessera-signature': signatureHeader('whsec_x', '{"id":"e1"}', t0),
      })
    } finally {
      server.close()
    }
  })

  it('gives up an attempt after the timeout', async () => {
    const server = createServer(() => {})
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as AddressInfo
    try {
      const sender = new Sender({ allowPrivate: true, now: () => t0, timeoutMs: 200 })
      const sent = await sender.send({ url: `http://127.0.0.1:${port}/`, secret: 's' }, 'e', '{}')
      expect(sent.attempt).toMatchObject({ status: null, error: 'timed out after 0.2 s' })
      expect(sent.attempt.durationMs).toBeGreaterThanOrEqual(190)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})

describe('retry backoff', () => {
  it('doubles from 1 s up to 1 hour, with full jitter', () => {
    const top = () => 0.999999
    expect([1, 2, 3, 4, 12, 13, 40].map((n) => Math.round(backoffMs(n, top) / 1000))).toEqual([
      1, 2, 4, 8, 2048, 3600, 3600,
    ])
    expect(backoffMs(5, () => 0)).toBe(0)
    for (let i = 0; i < 100; i++) expect(backoffMs(3)).toBeLessThan(4000)
  })
})
