import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createVerifier, type Verifier, type VerifierOptions } from '../src/index.js'
import { active, type FakeTessera, fakeKey, startFakeTessera, tokenOf } from './fake-tessera.js'

let tessera: FakeTessera
let verifier: Verifier
const errors: Error[] = []

const pk = tokenOf('pk', { u: 'acme', a: 'cpk' })
const sk = tokenOf('sk', { u: 'acme', a: 'csk' })
const other = tokenOf('pk', { u: 'globex', a: 'cgx' })
const restricted = tokenOf('pk', { u: 'acme', a: 'curl' })

async function start(options: Partial<VerifierOptions> = {}) {
  verifier = createVerifier({
    url: tessera.url,
    adminKey: fakeKey,
    onError: (err) => errors.push(err),
    ...options,
  })
  await verifier.ready()
}

const until = (what: () => boolean) =>
  vi.waitFor(() => expect(what()).toBe(true), { timeout: 3000 })

beforeEach(async () => {
  errors.length = 0
  tessera = await startFakeTessera()
  tessera.answers.set(
    pk,
    active({ username: 'acme', usage: 'pk', id: 'cpk', scope: 'styles:read fonts:read' }),
  )
  tessera.answers.set(
    sk,
    active({ username: 'acme', usage: 'sk', id: 'csk', scope: 'tokens:read tokens:write' }),
  )
  tessera.answers.set(
    other,
    active({ username: 'globex', usage: 'pk', id: 'cgx', scope: 'styles:read' }),
  )
  tessera.answers.set(
    restricted,
    active({
      username: 'acme',
      usage: 'pk',
      id: 'curl',
      scope: 'styles:read',
      allowedUrls: ['https://app.example.com', '*.maps.example.com'],
    }),
  )
})

afterEach(async () => {
  vi.useRealTimers()
  verifier?.close()
  await tessera.stop()
})

describe('createVerifier', () => {
  it('asks Tessera once per token and then answers from the cache', async () => {
    await start()
    expect(verifier.verifyCached(pk)).toBeUndefined()
    const first = await verifier.verify(pk, { scope: 'styles:read' })
    expect(first).toEqual({
      valid: true,
      account: 'acme',
      usage: 'pk',
      scopes: ['styles:read', 'fonts:read'],
      id: 'cpk',
      clientId: 'api',
      iat: expect.any(Number),
      exp: undefined,
      allowedUrls: undefined,
    })
    expect(verifier.verifyCached(pk, { scope: 'styles:read' })).toBe(first)
    expect(await verifier.verify(pk)).toBe(first)
    expect(tessera.introspections).toEqual([pk])
    expect(Object.isFrozen(first)).toBe(true)
  })

  it('asks once for concurrent verifications of the same token', async () => {
    await start()
    tessera.delayMs = 50
    const answers = await Promise.all(Array.from({ length: 20 }, () => verifier.verify(sk)))
    expect(new Set(answers).size).toBe(1)
    expect(tessera.introspections).toEqual([sk])
  })

  it('refuses a token without a scope the request needs', async () => {
    await start()
    expect(await verifier.verify(pk, { scope: 'tokens:write' })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
    expect(verifier.verifyCached(pk, { scope: ['styles:read', 'fonts:read'] })?.valid).toBe(true)
    expect(verifier.verifyCached(pk, { scope: ['styles:read', 'tokens:read'] })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
    expect(verifier.verifyCached(pk, { scope: [] })?.valid).toBe(true)
  })

  it('holds a restricted token to its URLs, and refuses it without Origin or Referer', async () => {
    await start()
    expect(await verifier.verify(restricted)).toEqual({ valid: false, reason: 'UrlNotAllowed' })
    expect(verifier.verifyCached(restricted, { origin: 'https://app.example.com' })?.valid).toBe(
      true,
    )
    expect(
      verifier.verifyCached(restricted, { referer: 'https://a.maps.example.com/x' })?.valid,
    ).toBe(true)
    expect(verifier.verifyCached(restricted, { origin: 'https://evil.net' })).toEqual({
      valid: false,
      reason: 'UrlNotAllowed',
    })
    // Unrestricted tokens need neither header.
    expect((await verifier.verify(pk))?.valid).toBe(true)
  })

  it('answers the retrieve codes of inactive tokens, and keeps them for negativeTtlMs', async () => {
    await start({ negativeTtlMs: 60_000 })
    const codes = ['TokenMalformed', 'TokenInvalid', 'TokenExpired', 'TokenRevoked'] as const
    for (const [i, code] of codes.entries()) {
      const token = tokenOf('sk', { u: 'acme', a: `c${i}` }, 9)
      tessera.answers.set(token, { active: false, code })
      expect(await verifier.verify(token)).toEqual({ valid: false, reason: code })
      expect(verifier.verifyCached(token)).toEqual({ valid: false, reason: code })
    }
    expect(tessera.introspections).toHaveLength(4)
  })

  it('refuses a string that is no token without asking', async () => {
    await start()
    for (const s of ['', 'abc', 'pk.only-two', 'xx.a.b', 'pk.a.b.c', `pk.${'a'.repeat(5000)}.b`]) {
      expect(await verifier.verify(s)).toEqual({ valid: false, reason: 'TokenMalformed' })
    }
    expect(tessera.introspections).toEqual([])
  })

  it('keeps a tk until its exp, then answers TokenExpired without asking', async () => {
    await start()
    vi.useFakeTimers({ toFake: ['Date'] })
    const exp = Math.floor(Date.now() / 1000) + 120
    const tk = tokenOf('tk', { u: 'acme', exp, iat: exp - 300, scopes: ['styles:read'] })
    tessera.answers.set(tk, active({ username: 'acme', usage: 'tk', scope: 'styles:read', exp }))
    expect((await verifier.verify(tk, { scope: 'styles:read' }))?.valid).toBe(true)
    vi.setSystemTime(exp * 1000 - 1)
    expect(verifier.verifyCached(tk)?.valid).toBe(true)
    vi.setSystemTime(exp * 1000)
    expect(verifier.verifyCached(tk)).toEqual({ valid: false, reason: 'TokenExpired' })
    expect(tessera.introspections).toEqual([tk])
  })

  it('asks again about a pk or sk after maxAgeMs', async () => {
    await start({ maxAgeMs: 60_000 })
    vi.useFakeTimers({ toFake: ['Date'] })
    await verifier.verify(pk)
    vi.setSystemTime(Date.now() + 60_000)
    expect(verifier.verifyCached(pk)).toBeUndefined()
    await verifier.verify(pk)
    expect(tessera.introspections).toEqual([pk, pk])
  })

  it('forgets the oldest answers beyond maxEntries', async () => {
    await start({ maxEntries: 2 })
    await verifier.verify(pk)
    await verifier.verify(sk)
    await verifier.verify(other)
    expect(verifier.stats().entries).toBe(2)
    expect(verifier.verifyCached(pk)).toBeUndefined()
    expect(verifier.verifyCached(other)?.valid).toBe(true)
    // A refusal does not push out an answer to keep when the cache is full.
    const revoked = tokenOf('pk', { u: 'acme', a: 'cgone' })
    expect(await verifier.verify(revoked)).toEqual({ valid: false, reason: 'TokenRevoked' })
    expect(verifier.verifyCached(revoked)).toBeUndefined()
    expect(verifier.verifyCached(sk)?.valid).toBe(true)
  })
})

describe('the event stream', () => {
  it('drops a token on token.deleted and token.updated', async () => {
    await start()
    await verifier.verify(pk)
    await verifier.verify(sk)
    tessera.answers.delete(pk)
    const started = performance.now()
    tessera.emit('token.deleted', {
      action: 'token.deleted',
      target: { type: 'token', id: 'cpk' },
      account: 'acme',
    })
    await until(() => verifier.verifyCached(pk) === undefined)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(await verifier.verify(pk)).toEqual({ valid: false, reason: 'TokenRevoked' })
    expect(verifier.verifyCached(sk)?.valid).toBe(true)

    tessera.answers.set(
      sk,
      active({ username: 'acme', usage: 'sk', id: 'csk', scope: 'tokens:read' }),
    )
    tessera.emit('token.updated', { target: { type: 'token', id: 'csk' }, account: 'acme' })
    await until(() => verifier.verifyCached(sk) === undefined)
    expect(await verifier.verify(sk, { scope: 'tokens:write' })).toEqual({
      valid: false,
      reason: 'MissingScope',
    })
  })

  it('drops every answer of an account on its account events, tk and refusals included', async () => {
    await start()
    const exp = Math.floor(Date.now() / 1000) + 600
    const tk = tokenOf('tk', { u: 'acme', exp, iat: exp - 600, scopes: [] })
    tessera.answers.set(tk, active({ username: 'acme', usage: 'tk', scope: '', exp }))
    const revoked = tokenOf('pk', { u: 'acme', a: 'cgone' })
    for (const t of [pk, sk, tk, revoked, other]) await verifier.verify(t)
    for (const action of [
      'account.disabled',
      'account.enabled',
      'account.changed',
      'account.deleted',
    ]) {
      tessera.emit(action, { target: { type: 'account', id: 'acme' }, account: 'acme' })
      await until(() => verifier.stats().entries === 1)
      expect(verifier.verifyCached(other)?.valid).toBe(true)
      for (const t of [pk, sk, tk, revoked]) await verifier.verify(t)
    }
  })

  it('drops everything on reset, and on an event it cannot read', async () => {
    await start()
    await verifier.verify(pk)
    await verifier.verify(other)
    tessera.emit('reset', {})
    await until(() => verifier.stats().entries === 0)
    await verifier.verify(pk)
    tessera.emit('token.deleted', { target: { type: 'token' } })
    await until(() => verifier.stats().entries === 0)
  })

  it('does not keep an answer whose token changed while it was on its way', async () => {
    await start()
    tessera.delayMs = 30
    tessera.onIntrospect = () =>
      tessera.emit('token.updated', { target: { type: 'token', id: 'cpk' }, account: 'acme' })
    // Answered (it was true when read), not kept: the event may concern it.
    expect((await verifier.verify(pk))?.valid).toBe(true)
    await until(() => verifier.stats().lastEventId === '1')
    expect(verifier.verifyCached(pk)).toBeUndefined()
    tessera.onIntrospect = undefined
    await verifier.verify(pk)
    expect(verifier.verifyCached(pk)?.valid).toBe(true)
  })

  it('resumes after a dropped connection with Last-Event-ID and applies what it missed', async () => {
    await start()
    tessera.emit('signin.succeeded', { account: 'nobody' })
    await until(() => verifier.stats().lastEventId === '1')
    await verifier.verify(pk)
    tessera.dropStreams()
    tessera.emit('token.deleted', { target: { type: 'token', id: 'cpk' }, account: 'acme' })
    await until(() => tessera.streamRequests.length === 2)
    expect(tessera.streamRequests).toEqual(['', '1'])
    await until(() => verifier.verifyCached(pk) === undefined)
    expect(verifier.stats().lastEventId).toBe('2')
  })

  it('starts afresh when it cannot resume: no event id yet, or a reset', async () => {
    await start()
    await verifier.verify(pk)
    tessera.dropStreams()
    await until(() => tessera.streamRequests.length === 2 && verifier.stats().streamLive)
    expect(verifier.stats().entries).toBe(0)

    tessera.emit('signin.succeeded', { account: 'nobody' })
    await until(() => verifier.stats().lastEventId === '1')
    await verifier.verify(pk)
    tessera.retainedFrom = 5
    tessera.dropStreams()
    await until(() => tessera.streamRequests.length === 3 && verifier.stats().streamLive)
    await until(() => verifier.stats().entries === 0)
  })

  it('does not cache before the stream has opened', async () => {
    tessera.streamDelayMs = 300
    verifier = createVerifier({ url: tessera.url, adminKey: fakeKey, onError: () => {} })
    // Changes made before the stream opens would never be heard of: answered, not kept.
    expect((await verifier.verify(pk))?.valid).toBe(true)
    expect(verifier.verifyCached(pk)).toBeUndefined()
    await verifier.ready()
    await verifier.verify(pk)
    expect(verifier.verifyCached(pk)?.valid).toBe(true)
  })
})

describe('when Tessera cannot be reached', () => {
  it('refuses unknown tokens, says why through onError, and fails fast', async () => {
    await start({ failFastMs: 60_000 })
    await tessera.stop()
    expect(await verifier.verify(pk)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    expect(errors.length).toBeGreaterThan(0)
    const asked = tessera.introspections.length
    expect(await verifier.verify(sk)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    expect(tessera.introspections.length).toBe(asked)
  })

  it('refuses every token with a wrong operator key, and says so', async () => {
    verifier = createVerifier({
      url: tessera.url,
      adminKey: 'not-the-key',
      onError: (err) => errors.push(err),
    })
    expect(await verifier.verify(pk)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    expect(errors.map((e) => e.message).join('\n')).toMatch(/401 \(is the operator key right\?\)/)
  })

  it('serves cached answers for staleForMs after the stream was last live, then fails closed', async () => {
    await start({ staleForMs: 5_000, failFastMs: 0, maxRetryMs: 1_000 })
    await verifier.verify(pk)
    await verifier.verify(restricted, { origin: 'https://app.example.com' })
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    await tessera.stop()
    // Waits in real time: fake time stands still until the test moves it.
    while (verifier.stats().streamLive) await new Promise((r) => setImmediate(r))

    await vi.advanceTimersByTimeAsync(4_999)
    expect(verifier.verifyCached(pk)?.valid).toBe(true)
    expect(verifier.verifyCached(restricted, { origin: 'https://app.example.com' })?.valid).toBe(
      true,
    )
    expect(verifier.stats().serving).toBe(true)
    await vi.advanceTimersByTimeAsync(1)
    expect(verifier.stats()).toMatchObject({ serving: false, entries: 0 })
    expect(verifier.verifyCached(pk)).toBeUndefined()
    expect(await verifier.verify(pk)).toEqual({ valid: false, reason: 'TesseraUnavailable' })

    // Back: answers again, and caches again once the stream is open.
    await tessera.restart()
    await vi.waitFor(
      async () => {
        await vi.advanceTimersByTimeAsync(200)
        expect(verifier.stats().serving).toBe(true)
      },
      { timeout: 5_000 },
    )
    expect((await verifier.verify(pk))?.valid).toBe(true)
    expect(verifier.verifyCached(pk)?.valid).toBe(true)
  })

  it('counts a silent stream as down from its last byte', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    await start({ staleForMs: 1_000, heartbeatTimeoutMs: 3_000 })
    await verifier.verify(pk)
    // Nothing arrives for 3 s: down, and already past the 1 s bound from the last byte.
    await vi.advanceTimersByTimeAsync(2_999)
    expect(verifier.verifyCached(pk)?.valid).toBe(true)
    await vi.advanceTimersByTimeAsync(1)
    expect(verifier.verifyCached(pk)).toBeUndefined()
  })

  it('fails closed after close()', async () => {
    await start()
    await verifier.verify(pk)
    verifier.close()
    expect(verifier.verifyCached(pk)).toBeUndefined()
    expect(await verifier.verify(pk)).toEqual({ valid: false, reason: 'TesseraUnavailable' })
    await expect(verifier.ready()).resolves.toBeUndefined()
  })
})
