import { createHash, generateKeyPairSync, sign } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { all, call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { DashboardClient } from './dashboard-client.js'

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** The test's own P-256 key, in the file GitHub's public keys document would be. */
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
const keyId = 'test-key-1'

describe('leaked tokens', () => {
  let h: Harness
  let writer: string

  beforeEach(async () => {
    const dir = (await import('node:fs')).mkdtempSync(
      path.join((await import('node:os')).tmpdir(), 'tessera-leaks-'),
    )
    const keys = path.join(dir, 'github-keys.json')
    writeFileSync(
      keys,
      JSON.stringify({
        public_keys: [
          {
            key_identifier: keyId,
            key: publicKey.export({ type: 'spki', format: 'pem' }),
            is_current: true,
          },
        ],
      }),
    )
    h = await harness({ ...adminEnv, LEAK_REPORT_KEYS: keys })
    writer = (await h.token('alice', [...all, 'styles:read'])).token
  })
  afterEach(() => h.close())

  const github = (body: string, signature?: string, id = keyId) =>
    h.app.inject({
      method: 'POST',
      url: '/leaks/v1/github',
      payload: body,
      headers: {
        'content-type': 'application/json',
        'github-public-key-identifier': id,
        'github-public-key-signature':
          signature ?? sign('sha256', Buffer.from(body), privateKey).toString('base64'),
      },
    })
  const retrieve = async (token: string) =>
    (await call(h.app, 'GET', '/tokens/v2', token)).body.code

  it("takes GitHub's signed reports: revokes live sk and pk, flags a restricted pk, labels each", async () => {
    const sk = await h.token('alice', ['styles:read', 'tokens:read'])
    const pk = await h.token('alice', ['styles:read'])
    const restricted = await h.token('alice', ['styles:read'], { allowedUrls: ['example.com'] })
    const deleted = await h.token('alice', ['styles:read'])
    await call(h.app, 'DELETE', `/tokens/v2/alice/${deleted.id}`, writer)
    const entries = [
      {
        token: sk.token,
        type: 'tessera_secret',
        url: 'https://github.com/x/y/blob/main/a',
        source: 'content',
      },
      { token: pk.token, type: 'tessera_public', url: 'https://github.com/x/y', source: 'commit' },
      {
        token: restricted.token,
        type: 'tessera_public',
        url: 'https://github.com/x/z',
        source: 'content',
      },
      {
        token: deleted.token,
        type: 'tessera_public',
        url: 'https://github.com/x/d',
        source: 'content',
      },
      {
        token: 'ghp_notours0123456789',
        type: 'other_issuer',
        url: 'https://github.com/x/o',
        source: 'content',
      },
      { token: 42, type: 'broken' },
    ]
    const body = JSON.stringify(entries)
    const res = await github(body)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual([
      { token_hash: sha256(sk.token), token_type: 'tessera_secret', label: 'true_positive' },
      { token_hash: sha256(pk.token), token_type: 'tessera_public', label: 'true_positive' },
      {
        token_hash: sha256(restricted.token),
        token_type: 'tessera_public',
        label: 'true_positive',
      },
      { token_hash: sha256(deleted.token), token_type: 'tessera_public', label: 'false_positive' },
      {
        token_hash: sha256('ghp_notours0123456789'),
        token_type: 'other_issuer',
        label: 'false_positive',
      },
      { token_hash: sha256('42'), token_type: 'broken', label: 'false_positive' },
    ])
    expect(await retrieve(sk.token)).toBe('TokenRevoked')
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
    expect(await retrieve(restricted.token)).toBe('TokenValid')
    const events = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.leaked')).body
    expect(
      events.map((e: { target: { id: string }; details: unknown }) => [e.target.id, e.details]),
    ).toEqual([
      [
        restricted.id,
        { action: 'flagged', via: 'github', url: 'https://github.com/x/z', source: 'content' },
      ],
      [
        pk.id,
        { action: 'revoked', via: 'github', url: 'https://github.com/x/y', source: 'commit' },
      ],
      [
        sk.id,
        {
          action: 'revoked',
          via: 'github',
          url: 'https://github.com/x/y/blob/main/a',
          source: 'content',
        },
      ],
    ])

    // Events of the stream and webhooks too: written to the outbox with the audit.
    const outbox = await h.ctx.db
      .selectFrom('event_outbox')
      .select('action')
      .where('action', '=', 'token.leaked')
      .execute()
    expect(outbox).toHaveLength(3)

    // The same body again: the same answer, nothing done twice.
    const replay = await github(body)
    expect(replay.statusCode).toBe(200)
    expect(replay.json()).toEqual(res.json())
    expect(
      (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.leaked')).body,
    ).toHaveLength(3)
  })

  it('refuses a bad signature and an unknown key id with 401, and revokes nothing', async () => {
    const sk = await h.token('alice', ['styles:read', 'tokens:read'])
    const body = JSON.stringify([{ token: sk.token, type: 't', url: 'u', source: 's' }])
    const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey
    const forged = sign('sha256', Buffer.from(body), other).toString('base64')
    for (const res of [
      await github(body, forged),
      await github(body, undefined, 'unknown'),
      await github(body, 'AAAA'),
    ]) {
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ message: 'Unauthorized' })
    }
    // A signature over another body does not cover this one.
    const signedElse = sign('sha256', Buffer.from('[]'), privateKey).toString('base64')
    expect((await github(body, signedElse)).statusCode).toBe(401)
    expect(await retrieve(sk.token)).toBe('TokenValid')
  })

  it('handles 1,000 tokens in one report', async () => {
    const live = await h.token('alice', ['styles:read', 'tokens:read'])
    const entries = Array.from({ length: 1000 }, (_, i) => ({
      token: i === 500 ? live.token : `sk.${'x'.repeat(40)}${i}.sig`,
      type: 'tessera_secret',
      url: `https://github.com/x/${i}`,
      source: 'content',
    }))
    const started = performance.now()
    const res = await github(JSON.stringify(entries))
    const ms = performance.now() - started
    expect(res.statusCode).toBe(200)
    const labels = res.json().map((f: { label: string }) => f.label)
    expect(labels.filter((l: string) => l === 'true_positive')).toHaveLength(1)
    expect(labels[500]).toBe('true_positive')
    expect(ms).toBeLessThan(10_000)
    const tooMany = JSON.stringify(Array.from({ length: 1001 }, () => ({ token: 'x' })))
    expect((await github(tooMany)).statusCode).toBe(422)
  })

  it("takes an operator's scanners through the admin API, and anyone's report with 202", async () => {
    const sk = await h.token('alice', ['styles:read', 'tokens:read'])
    const pk = await h.token('alice', ['styles:read'], { allowedUrls: ['example.com'] })
    const res = await admin(h.app, 'POST', '/leaks', {
      tokens: [sk.token, 'nothing'],
      url: 'https://paste.example/1',
      source: 'our-scanner',
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual([
      { token_hash: sha256(sk.token), label: 'true_positive', action: 'revoked' },
      { token_hash: sha256('nothing'), label: 'false_positive', action: 'none' },
    ])
    expect(await retrieve(sk.token)).toBe('TokenRevoked')

    const anyone = (credentials: unknown) =>
      h.app.inject({
        method: 'POST',
        url: '/leaks/v1/revoke',
        payload: JSON.stringify({ credentials }),
        headers: { 'content-type': 'application/json' },
      })
    for (const credentials of [[pk.token], ['not a token'], []]) {
      const r = await anyone(credentials)
      expect([r.statusCode, r.body]).toEqual([202, ''])
    }
    // A restricted pk is flagged, not revoked.
    expect(await retrieve(pk.token)).toBe('TokenValid')
    const leaked = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.leaked')).body
    expect(
      leaked.map((e: { details: { action: string; via: string } }) => [
        e.details.via,
        e.details.action,
      ]),
    ).toEqual([
      ['public', 'flagged'],
      ['admin', 'revoked'],
    ])
  })

  it('shows the account and the token a banner for a leaked token it keeps', async () => {
    const pk = await h.token('alice', ['styles:read'], {
      note: 'website',
      allowedUrls: ['example.com'],
    })
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    const password = 'correct horse battery staple'
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    expect((await b.get('/account')).body).not.toContain('reported leaked')
    await admin(h.app, 'POST', '/leaks', { tokens: [pk.token] })
    const page = await b.get('/account')
    expect(page.body).toContain(
      `<strong>1 token was reported leaked</strong>: found where others can see it. Roll it and give your applications the new strings: <a href="/account/tokens/${pk.id}">website</a>.`,
    )
    const token = await b.get(`/account/tokens/${pk.id}`)
    expect(token.body).toContain('<strong>This token was reported leaked</strong>')
    // Rolled: the new token carries no flag, and the old one ends.
    await b.post(`/account/tokens/${pk.id}/roll`, { when: 'now' })
    expect((await b.get('/account')).body).not.toContain('reported leaked')
  })

  it('matches every Tessera token with the regular expressions the docs publish', async () => {
    const docs = (await import('node:fs')).readFileSync(
      path.join(import.meta.dirname, '../../docs/api.md'),
      'utf8',
    )
    const [permanent, temporary] = [...docs.matchAll(/^(?:pk and sk|tk):\s+(\S+)$/gm)].map(
      (m) => new RegExp(m[1] as string),
    )
    const sk = await h.token('alice', ['styles:read', 'tokens:write'])
    const pk = await h.token('alice', ['styles:read'])
    const tk = (
      await call(h.app, 'POST', '/tokens/v2/alice', writer, {
        scopes: ['styles:read'],
        expires: new Date(h.clock.now + 60_000).toISOString(),
      })
    ).body.token
    for (const token of [sk.token, pk.token]) {
      expect(permanent?.exec(`key = "${token}"`)?.[0]).toBe(token)
    }
    expect(temporary?.exec(`TOKEN=${tk}\n`)?.[0]).toBe(tk)
    expect(permanent?.test('sk.abc.def')).toBe(false)
  })

  it('rolls a leaked default token: the old string ends, the account keeps a default', async () => {
    const res = await admin(h.app, 'POST', '/leaks', { tokens: [h.alice.defaultToken.token] })
    expect(res.body[0]).toMatchObject({ label: 'true_positive', action: 'revoked' })
    expect(await retrieve(h.alice.defaultToken.token as string)).toBe('TokenRevoked')
    const defaults = (await call(h.app, 'GET', '/tokens/v2/alice?default=true', writer)).body
    expect(defaults).toHaveLength(1)
    expect(defaults[0].id).not.toBe(h.alice.defaultToken.id)
  })

  /** Anyone's report, in the shape of GitHub's credential revocation API. */
  const anonymous = (app: Harness['app'], body: unknown) =>
    app.inject({
      method: 'POST',
      url: '/leaks/v1/revoke',
      payload: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    })
  const found = { url: 'https://maps.example/store-locator', source: 'page source' }

  it('never revokes a pk on an anonymous report, the default token first, whatever LEAKED_TOKENS says: flags it with the evidence', async () => {
    for (const policy of ['auto', 'revoke', 'flag']) {
      const p = await harness({ ...adminEnv, LEAKED_TOKENS: policy })
      try {
        const defaultPk = p.alice.defaultToken as typeof p.alice.defaultToken & { token: string }
        const site = await p.token('alice', ['styles:read'], { note: 'site' })
        const code = async (token: string) =>
          (await call(p.app, 'GET', '/tokens/v2', token)).body.code
        // The attacker reports the strings every site embeds, again and again.
        for (let i = 0; i < 3; i++) {
          const res = await anonymous(p.app, {
            credentials: [defaultPk.token, site.token],
            ...found,
          })
          expect([res.statusCode, res.body], policy).toEqual([202, ''])
        }
        expect(await code(defaultPk.token), policy).toBe('TokenValid')
        expect(await code(site.token), policy).toBe('TokenValid')
        const reader = (await p.token('alice', ['tokens:read'])).token
        const defaults = (await call(p.app, 'GET', '/tokens/v2/alice?default=true', reader)).body
        expect(
          defaults.map((t: { id: string }) => t.id),
          policy,
        ).toEqual([defaultPk.id])
        // Flagged, each report recorded with where it was found; nothing rolled or deleted.
        expect((await p.ctx.leaks.kept(p.alice)).get(defaultPk.id), policy).toEqual({
          at: new Date(T0).toISOString(),
          via: 'public',
          ...found,
        })
        const details = { action: 'flagged', via: 'public', ...found }
        const events = (await admin(p.app, 'GET', '/accounts/alice/audit')).body as {
          action: string
          target: { id: string }
          details: unknown
        }[]
        const leaked = events.filter((e) => e.action === 'token.leaked')
        expect(
          leaked.map((e) => [e.target.id, e.details]),
          policy,
        ).toEqual(
          [1, 2, 3].flatMap(() => [
            [site.id, details],
            [defaultPk.id, details],
          ]),
        )
        expect(
          events.filter((e) => ['token.rolled', 'token.deleted'].includes(e.action)),
          policy,
        ).toEqual([])
        // The same evidence in the event stream and webhooks (the outbox).
        const outbox = await p.ctx.db
          .selectFrom('event_outbox')
          .select('body')
          .where('action', '=', 'token.leaked')
          .execute()
        expect(
          outbox.map((o) => {
            const e = JSON.parse(o.body)
            return [e.account, e.target, e.details]
          }),
          policy,
        ).toEqual(
          [1, 2, 3].flatMap(() => [
            ['alice', { type: 'token', id: defaultPk.id }, details],
            ['alice', { type: 'token', id: site.id }, details],
          ]),
        )
      } finally {
        await p.close()
      }
    }
  })

  it('still revokes an sk on an anonymous report, and GitHub still revokes a pk', async () => {
    const sk = await h.token('alice', ['styles:read', 'tokens:read'])
    const pk = await h.token('alice', ['styles:read'])
    const res = await anonymous(h.app, { credentials: [sk.token], ...found })
    expect([res.statusCode, res.body]).toEqual([202, ''])
    expect(await retrieve(sk.token)).toBe('TokenRevoked')
    const signed = await github(JSON.stringify([{ token: pk.token, type: 't', ...found }]))
    expect(signed.statusCode).toBe(200)
    expect(await retrieve(pk.token)).toBe('TokenRevoked')
    const leaked = (await admin(h.app, 'GET', '/accounts/alice/audit?action=token.leaked')).body
    expect(
      leaked.map((e: { target: { id: string }; details: unknown }) => [e.target.id, e.details]),
    ).toEqual([
      [pk.id, { action: 'revoked', via: 'github', ...found }],
      [sk.id, { action: 'revoked', via: 'public', ...found }],
    ])
  })

  it('tells the holder on the tokens page where an anonymously reported pk was found', async () => {
    const defaultPk = h.alice.defaultToken
    const b = new DashboardClient(h.app)
    const link = await h.ctx.holders.invite('alice', cliActor)
    const password = 'correct horse battery staple'
    await b.post(`/account/setup/${link}`, { password, confirm: password })
    const url = 'https://maps.example/?q=<script>alert(1)</script>'
    const res = await anonymous(h.app, { credentials: [defaultPk.token], url, source: 'crawler' })
    expect(res.statusCode).toBe(202)
    const reported = `reported anonymously <time datetime="${new Date(T0).toISOString()}">2026-11-22 <span class="clock">12:00 UTC</span></time>, found at <code class="leak-url">https://maps.example/?q=&lt;script&gt;alert(1)&lt;/script&gt;</code> (crawler)`
    const page = (await b.get('/account')).body
    expect(page).toContain('<strong>1 token was reported leaked</strong>')
    expect(page).toContain(
      `<li><a href="/account/tokens/${defaultPk.id}">Default public token</a>: ${reported}</li>`,
    )
    expect(page).not.toContain('<script>alert(1)')
    const token = (await b.get(`/account/tokens/${defaultPk.id}`)).body
    expect(token).toContain(`<p>It was ${reported}.</p>`)
    expect(token).toContain(
      'A public token is made to be seen in web pages, so this may be where you put it: restrict it to your sites with Allowed URLs, or roll it if it should not be there. An anonymous report never revokes a public token.',
    )
    expect(await retrieve(defaultPk.token as string)).toBe('TokenValid')
  })
})
