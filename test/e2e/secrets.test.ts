import { execFile } from 'node:child_process'
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { mkdtempSync, readFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect } from 'node:tls'
import { promisify } from 'node:util'
import { generateSync } from 'otplib'
import { afterAll, describe, expect, it } from 'vitest'
import { Receiver } from '../http/webhook-receiver.js'
import { clientId, clientSecret, freePort, startProvider, type TestProvider } from '../oidc.js'
import {
  pathSpellings,
  percentEncoded,
  readable,
  spellingsOfSecret,
  tokenSpellings,
} from '../secrets.js'
import { type ServerProcess, startServer } from './server.js'

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

interface Answer {
  status: number
  text: string
  headers: Record<string, string | string[] | undefined>
  location?: string
}

/** One HTTPS request, its target sent as written (a `#` and escapes included). */
function send(
  server: ServerProcess,
  method: string,
  target: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const { port } = new URL(server.url)
  return fetchTls(server.certFile, `https://127.0.0.1:${port}`, method, target, options)
}

/** One HTTPS request to an origin whose certificate is `caFile`. */
function fetchTls(
  caFile: string,
  origin: string,
  method: string,
  target: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method,
        path: target,
        ca: readFileSync(caFile),
        agent: false,
        headers: options.headers,
      },
      (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text,
            headers: res.headers,
            location: res.headers.location,
          }),
        )
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

const json = async (
  server: ServerProcess,
  method: string,
  target: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; text: string }> => {
  const answer = await send(server, method, target, {
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  })
  const parsed = answer.text === '' ? {} : JSON.parse(answer.text)
  return { status: answer.status, body: parsed, text: answer.text }
}

/** What a stream (Server-Sent Events) sends in its first `ms`. */
function stream(
  server: ServerProcess,
  target: string,
  headers: Record<string, string>,
  ms = 1_500,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    const req = request(
      `${server.url}${target}`,
      { headers, ca: readFileSync(server.certFile), agent: false },
      (res) => {
        res.on('data', (d) => {
          text += d
        })
        setTimeout(() => {
          req.destroy()
          resolve(text)
        }, ms)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** Raw bytes over TLS; resolves with the answer once the server closes the connection. */
function rawTls(server: ServerProcess, bytes: string): Promise<string> {
  const { port } = new URL(server.url)
  return new Promise((resolve) => {
    let answer = ''
    const socket = connect(
      { host: '127.0.0.1', port: Number(port), ca: readFileSync(server.certFile) },
      () => socket.write(bytes),
    )
    socket.on('data', (d) => {
      answer += d
    })
    socket.on('close', () => resolve(answer))
    // The server may reset a connection whose bytes it stopped reading: the answer so far.
    socket.on('error', () => resolve(answer))
  })
}

/** A browser's part over HTTPS: a cookie jar of one origin, the page's CSRF token. */
class Visitor {
  readonly cookies = new Map<string, string>()
  csrf = ''
  /** The password, once the visitor has one: what "Confirm it's you" asks for. */
  password = ''

  constructor(
    private readonly server: ServerProcess,
    private readonly onCookie: (name: string, value: string) => void,
  ) {}

  get(target: string): Promise<Answer> {
    return this.send('GET', target)
  }

  /** A form POST from the dashboard's origin, with the CSRF token of the last page. */
  post(target: string, fields: Record<string, string | string[]> = {}): Promise<Answer> {
    const body = new URLSearchParams()
    if (this.csrf !== '' && !('_csrf' in fields)) body.append('_csrf', this.csrf)
    for (const [name, value] of Object.entries(fields)) {
      for (const v of [value].flat()) body.append(name, v)
    }
    return this.send('POST', target, body.toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      origin: this.server.url,
    })
  }

  /** A POST that answers JSON (passkey options). */
  async postJson(target: string, post = () => this.post(target)) {
    const answer = await post()
    expect(answer.status, `${target}: ${answer.text}`).toBe(200)
    return JSON.parse(answer.text) as Record<string, unknown>
  }

  private async send(method: string, target: string, body?: string, headers = {}) {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    const answer = await send(this.server, method, target, {
      body,
      headers: { ...headers, ...(cookie === '' ? {} : { cookie }) },
    })
    for (const set of [answer.headers['set-cookie'] ?? []].flat()) {
      const [pair = ''] = set.split(';')
      const eq = pair.indexOf('=')
      const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)]
      if (value === '') this.cookies.delete(name)
      else {
        this.cookies.set(name, value)
        this.onCookie(name, value)
      }
    }
    const csrf = /name="_csrf" value="([^"]+)"/.exec(answer.text)?.[1]
    if (csrf !== undefined) this.csrf = csrf
    return answer
  }
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest()
const b64 = (data: Buffer) => data.toString('base64url')
const u16 = (n: number) => Buffer.from([n >> 8, n & 255])
const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}

/** The CBOR an attestation needs: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number) =>
    n < 24
      ? Buffer.from([(major << 5) | n])
      : n < 256
        ? Buffer.from([(major << 5) | 24, n])
        : Buffer.from([(major << 5) | 25, n >> 8, n & 255])
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value])
  if (typeof value === 'string') {
    const bytes = Buffer.from(value)
    return Buffer.concat([head(3, bytes.length), bytes])
  }
  if (value instanceof Map) {
    const items = [...value].flatMap(([k, v]) => [cbor(k), cbor(v)])
    return Buffer.concat([head(5, value.size), ...items])
  }
  throw new Error(`no CBOR for ${String(value)}`)
}

/**
 * A platform authenticator in software (ES256, "none" attestation, user verified): what a
 * browser would answer to the dashboard's passkey options, without a browser.
 */
class Authenticator {
  private readonly keys = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  private readonly id = randomBytes(16)
  private counter = 0
  private userHandle = ''

  constructor(private readonly origin: string) {}

  private clientData(type: string, challenge: string) {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }))
  }

  create(options: Record<string, unknown>): string {
    const { challenge, rp, user } = options as {
      challenge: string
      rp: { id: string }
      user: { id: string }
    }
    this.userHandle = user.id
    const jwk = this.keys.publicKey.export({ format: 'jwk' })
    const key = new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x as string, 'base64url')],
      [-3, Buffer.from(jwk.y as string, 'base64url')],
    ])
    const authData = Buffer.concat([
      sha256(rp.id),
      Buffer.from([0x45]), // user present, user verified, attested credential data
      u32(this.counter),
      Buffer.alloc(16),
      u16(this.id.length),
      this.id,
      cbor(key),
    ])
    const attestation = new Map<string, unknown>([
      ['fmt', 'none'],
      ['attStmt', new Map()],
      ['authData', authData],
    ])
    return JSON.stringify({
      id: b64(this.id),
      rawId: b64(this.id),
      type: 'public-key',
      response: {
        clientDataJSON: b64(this.clientData('webauthn.create', challenge)),
        attestationObject: b64(cbor(attestation)),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    })
  }

  get(options: Record<string, unknown>): string {
    const { challenge, rpId } = options as { challenge: string; rpId: string }
    const authData = Buffer.concat([sha256(rpId), Buffer.from([0x05]), u32(++this.counter)])
    const clientData = this.clientData('webauthn.get', challenge)
    const signature = sign(
      'sha256',
      Buffer.concat([authData, sha256(clientData)]),
      this.keys.privateKey,
    )
    return JSON.stringify({
      id: b64(this.id),
      rawId: b64(this.id),
      type: 'public-key',
      response: {
        clientDataJSON: b64(clientData),
        authenticatorData: b64(authData),
        signature: b64(signature),
        userHandle: this.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    })
  }
}

/** An authenticator app's code for `secret`, `steps` periods of 30 s from now. */
const totpCode = (secret: string, steps = 0) =>
  generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + steps * 30 })

const formType = { 'content-type': 'application/x-www-form-urlencoded' }

describe('a full session at LOG_LEVEL=trace', () => {
  let server: ServerProcess | undefined
  let provider: TestProvider | undefined
  let receiver: Receiver | undefined
  afterAll(async () => {
    await server?.stop()
    await provider?.close()
    await receiver?.close()
  })

  it('writes no token, link secret, password, second factor or session secret anywhere', {
    timeout: 240_000,
  }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-secrets-'))
    const port = await freePort()
    const publicUrl = `https://127.0.0.1:${port}`
    provider = await startProvider(`${publicUrl}/account/sso/callback`, dataDir)
    receiver = await Receiver.start()
    server = await startServer({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'trace',
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      DASHBOARD_SIGNUP: 'open',
      OIDC_ISSUER: provider.issuer,
      OIDC_CLIENT_ID: clientId,
      OIDC_CLIENT_SECRET: clientSecret,
      OIDC_NAME: 'Acme ID',
      OIDC_CA_FILE: provider.certFile,
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_CA_FILE: receiver.caFile,
    })
    const s = server
    const idp = provider
    /** Every secret the run made or was given, by what it is. */
    const secrets: { label: string; value: string }[] = []
    const keep = (value: unknown, label = 'secret') => {
      expect(typeof value, label).toBe('string')
      expect((value as string).length, label).toBeGreaterThan(0)
      secrets.push({ label, value: value as string })
      return value as string
    }
    keep(clientSecret, 'OIDC client secret')
    const visitor = () => new Visitor(s, (name, value) => keep(value, `cookie ${name}`))
    let cliErrors = ''
    const cli = async (...args: string[]) => {
      const { stdout, stderr } = await run(
        process.execPath,
        [path.join(root, 'bin/tessera.js'), ...args],
        { env: s.env, cwd: dataDir },
      )
      cliErrors += stderr
      return JSON.parse(stdout)
    }
    /** A link's path, and its secret kept. */
    const linkPath = (url: unknown, label: string) => {
      const pathname = new URL(url as string).pathname
      keep(pathname.split('/').pop(), label)
      return pathname
    }
    const secretOf = (pathname: string) => pathname.split('/').pop() as string
    /** Opens a link under every spelling the router takes: each a page of the link's route. */
    const openSpelt = async (pathname: string, status: number) => {
      const prefix = pathname.slice(0, pathname.lastIndexOf('/') + 1)
      for (const target of pathSpellings(prefix, secretOf(pathname))) {
        expect((await send(s, 'GET', target)).status, target).toBe(status)
      }
    }

    // The operator: an account (its setup link, its default pk) and tokens from the CLI.
    const account = await cli('account', 'create', 'alice')
    const setupPath = linkPath(account.setupUrl, 'setup link (CLI)')
    const setupSecret = secretOf(setupPath)
    keep(account.defaultToken.token, 'token')
    const sk = keep(
      (
        await cli(
          'token',
          'create',
          'alice',
          '--scopes',
          'tokens:read,tokens:write,scopes:list',
          '--note',
          'test',
        )
      ).token,
      'token',
    )
    keep(
      (await cli('token', 'create', 'alice', '--note', 'cli pk', '--scopes', 'styles:read')).token,
      'token',
    )
    const adminKey = keep(
      (await cli('admin-key', 'create', '--scope', 'admin', '--note', 'scan')).key,
      'admin key',
    )

    // Every token API route, with the token under every spelling the server accepts.
    let requests = 0
    const api = async (method: string, route: string, query: string, body?: unknown) => {
      requests++
      return json(s, method, `${route}${route.includes('?') ? '&' : '?'}${query}`, body)
    }
    for (const query of tokenSpellings(sk)) {
      expect((await api('GET', '/tokens/v2', query)).body.code, query).toBe('TokenValid')
      expect((await api('GET', '/tokens/v2/alice', query)).status, query).toBe(200)
      expect((await api('GET', '/scopes/v1/alice', query)).status, query).toBe(200)
    }
    // The router also reads the query after a `#`.
    requests++
    const hashed = await json(s, 'GET', `/tokens/v2#access_token=${sk}`)
    expect(hashed.body.code).toBe('TokenValid')

    const pk = await api('POST', '/tokens/v2/alice', `access%5Ftoken=${sk}`, {
      note: 'pk',
      scopes: [],
    })
    expect(pk.status).toBe(200)
    keep(pk.body.token, 'token')
    const sk2 = await api('POST', '/tokens/v2/alice', `%61ccess_token=${percentEncoded(sk)}`, {
      note: 'sk',
      scopes: ['tokens:read'],
    })
    keep(sk2.body.token, 'token')
    const expires = new Date(Date.now() + 3_600_000).toISOString()
    const tk = await api('POST', '/tokens/v2/alice', `access_token=${sk}`, {
      expires,
      scopes: ['tokens:read'],
    })
    expect(tk.status).toBe(200)
    const temporary = keep(tk.body.token, 'token')
    expect((await api('GET', '/tokens/v2', `access_token=${temporary}`)).body.code).toBe(
      'TokenValid',
    )
    const listed = await api('GET', '/tokens/v2/alice', `access_token=${temporary}`)
    expect(listed.status).toBe(200)
    const updated = await api(
      'PATCH',
      `/tokens/v2/alice/${sk2.body.id}`,
      `ACCESS%5FTOKEN=x&access%5Ftoken=${sk}`,
      { note: 'renamed' },
    )
    expect(updated.body.note).toBe('renamed')
    expect(updated.body.token).toBe(sk2.body.token)
    const tampered = keep(`${sk.slice(0, -1)}${sk.endsWith('A') ? 'B' : 'A'}`, 'token')
    expect((await api('GET', '/tokens/v2', `access_token=${tampered}`)).body.code).toBe(
      'TokenInvalid',
    )
    expect(
      (await api('DELETE', `/tokens/v2/alice/${pk.body.id}`, `access_token=${sk}`)).status,
    ).toBe(204)
    expect((await api('GET', '/tokens/v2', `access_token=${pk.body.token}`)).body.code).toBe(
      'TokenRevoked',
    )

    // A key added while the server runs: both secrets are secrets.
    await cli('keys', 'rotate')
    const rotated = await api('POST', '/tokens/v2/alice', `access_token=${sk}`, { note: 'new' })
    keep(rotated.body.token, 'token')

    // Requests Node's parser refuses, their request line carrying the token.
    const line = `GET /tokens/v2?access_token=${sk} HTTP/1.1\r\nHost: x\r\n`
    expect(await rawTls(s, `${line}Bad header\r\n\r\n`)).toMatch(/^HTTP\/1.1 400/)
    // A reset may come first (the server stops reading): what is written is what is tested.
    const overflow = await rawTls(s, `${line}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(overflow === '' || overflow.startsWith('HTTP/1.1 431'), overflow).toBe(true)

    // Leak reports: GitHub's (unsigned here: refused), anyone's, the operator's.
    const leaked = keep(
      (await api('POST', '/tokens/v2/alice', `access_token=${sk}`, { scopes: ['tokens:read'] }))
        .body.token,
      'token',
    )
    const github = await json(s, 'POST', '/leaks/v1/github', [{ token: leaked, type: 'x' }])
    expect(github.status).toBe(401)
    const revoke = await json(s, 'POST', '/leaks/v1/revoke', { credentials: [leaked], url: 'x' })
    expect(revoke.status, revoke.text).toBeLessThan(300)
    for (const target of ['/healthz', '/readyz', '/openapi.json', '/docs', '/']) {
      expect((await send(s, 'GET', target)).status, target).toBeLessThan(400)
    }

    // The operator's API: accounts, setup links, tokens, members, portal links, webhooks.
    const bearer = { authorization: `Bearer ${adminKey}` }
    const admin = async (method: string, route: string, body?: unknown) => {
      const answer = await json(s, method, `/admin/v1${route}`, body, bearer)
      expect(answer.status, `${method} ${route}: ${answer.text}`).toBeLessThan(300)
      return answer.body
    }
    const webhook = await admin('POST', '/webhooks', { url: receiver.url() })
    keep(webhook.secret, 'webhook secret')
    const beta = await admin('POST', '/accounts', { username: 'beta', features: ['navigation'] })
    keep((beta.defaultToken as { token: string }).token, 'token')
    linkPath(beta.setupUrl, 'setup link (admin, replaced)')
    const betaSetup = linkPath(
      (await admin('POST', '/accounts/beta/setup-url')).setupUrl,
      'setup link (admin)',
    )
    await admin('GET', '/accounts?limit=5')
    await admin('GET', '/accounts/beta')
    await admin('PATCH', '/accounts/beta', { plan: 'standard' })
    await admin('POST', '/accounts/beta/disable')
    await admin('POST', '/accounts/beta/enable')
    const betaTokens = (await json(s, 'GET', '/admin/v1/accounts/beta/tokens', undefined, bearer))
      .body as unknown as { id: string }[]
    const betaToken = betaTokens[0]?.id as string
    await admin('GET', `/accounts/beta/tokens/${betaToken}/usage`)
    keep((await admin('POST', `/accounts/beta/tokens/${betaToken}/roll`, {})).token, 'token')
    for (const body of [{ token: sk }, { token: 'nothing' }]) {
      await admin('POST', '/introspect', body)
    }
    const form = await send(s, 'POST', '/admin/v1/introspect', {
      body: `token=${encodeURIComponent(sk)}`,
      headers: { ...bearer, ...formType },
    })
    expect(form.status).toBe(200)
    const reported = keep(
      (await api('POST', '/tokens/v2/alice', `access_token=${sk}`, { scopes: ['tokens:read'] }))
        .body.token,
      'token',
    )
    await admin('POST', '/leaks', { tokens: [reported], url: 'https://example.com/x' })

    const invite = async (email: string, role: string) =>
      linkPath(
        (await admin('POST', '/accounts/alice/members', { email, role })).invitationUrl,
        'invitation',
      )
    const danaInvitation = await invite('dana@example.com', 'developer')
    const samInvitation = await invite('sam@example.com', 'viewer')
    expect(samInvitation).toMatch(/^\/account\/invitations\//)
    const portal = linkPath(
      (
        await admin('POST', '/accounts/alice/portal-links', {
          email: 'pat@example.com',
          name: 'Pat',
          role: 'developer',
        })
      ).url,
      'portal link',
    )

    // The account holder: the setup link (as sent, and spelt otherwise), then a token.
    await openSpelt(setupPath, 200)
    const alice = visitor()
    const password = keep('correct horse battery staple', 'password')
    alice.password = password
    const setUp = await alice.post(setupPath, { password, confirm: password })
    expect(setUp.status).toBe(303)
    // The same link, used: 410 (a link never issued is 404), so the spelling reached it.
    expect((await send(s, 'GET', `/account/%73etup/${percentEncoded(setupSecret)}`)).status).toBe(
      410,
    )
    await alice.get('/account/tokens/new')
    const created = await alice.post('/account/tokens/new', { note: 'web', scopes: 'tokens:read' })
    expect(created.status).toBe(200)
    keep(/id="new-token" readonly value="([^"]+)"/.exec(created.text)?.[1], 'token')

    // Every page of a signed-in owner.
    for (const page of [
      '/account',
      '/account/scopes',
      '/account/settings',
      '/account/activity',
      '/account/members',
      '/account/accounts',
      '/account/temporary',
      '/account/sign-in?next=%2Faccount%2Fscopes',
      '/account/assets/nothing.css',
    ]) {
      expect((await alice.get(page)).status, page).toBeLessThan(500)
    }
    const made = await alice.post('/account/temporary', { minutes: '5', scopes: 'tokens:read' })
    keep(/id="new-token" readonly value="([^"]+)"/.exec(made.text)?.[1], 'token')
    const tokenId = sk2.body.id as string
    await alice.get(`/account/tokens/${tokenId}`)
    expect((await alice.post(`/account/tokens/${tokenId}`, { note: 'edited' })).status).toBe(303)
    const rolled = await alice.post(`/account/tokens/${tokenId}/roll`, { when: '1h' })
    keep(/id="new-token" readonly value="([^"]+)"/.exec(rolled.text)?.[1], 'token')
    await alice.get(`/account/tokens/${pk.body.id}/delete`)
    await alice.post(`/account/tokens/${rotated.body.id}/delete`)
    const invited = await alice.post('/account/members/invite', {
      email: 'eve@example.com',
      role: 'viewer',
    })
    linkPath(/id="invitation-link" readonly value="([^"]+)"/.exec(invited.text)?.[1], 'invitation')
    const revokeAt = /action="(\/account\/members\/invitations\/[^/]+\/revoke)"/.exec(invited.text)
    expect((await alice.post(revokeAt?.[1] as string)).status).toBe(303)
    const newPassword = keep('a new and longer passphrase', 'password')
    const changed = await alice.post('/account/settings/password', {
      current: password,
      password: newPassword,
      confirm: newPassword,
    })
    expect(changed.status, changed.text).toBe(303)
    alice.password = newPassword

    // "Confirm it's you" before a sign-in method changes: the password again.
    await confirm(alice)

    // Second factors: an authenticator app, recovery codes, a passkey; then sign-ins with each.
    const totpSecret = keep(await enrolTotp(alice), 'TOTP secret')
    const firstCodes = recoveryCodes(
      await sensitive(alice, '/account/settings/totp', {
        code: totpCode(totpSecret),
      }),
    )
    for (const code of firstCodes) keep(code, 'recovery code')
    const file = await alice.post('/account/settings/recovery-codes.txt', { code: firstCodes })
    expect(file.status).toBe(200)
    const codes = recoveryCodes(await sensitive(alice, '/account/settings/recovery-codes'))
    for (const code of codes) keep(code, 'recovery code')
    const authenticator = new Authenticator(publicUrl)
    await registerPasskey(alice, authenticator)

    const signOut = async (v: Visitor) =>
      expect((await v.post('/account/sign-out')).location).toBe('/account/sign-in')
    await signOut(alice)
    // Password, then the app's code (of the next period: this one was used at enrolment).
    await passwordStep(alice, 'alice', newPassword)
    await finishSignIn(alice, { code: totpCode(totpSecret, 1) })
    await signOut(alice)
    await passwordStep(alice, 'alice', newPassword)
    await finishSignIn(alice, { code: codes[0] as string })
    await signOut(alice)
    await passwordStep(alice, 'alice', newPassword)
    const second = await alice.postJson('/account/passkeys/second/options')
    keep(second.challenge, 'passkey challenge')
    await finishSignIn(alice, { passkey: authenticator.get(second) })
    await signOut(alice)
    // A passkey alone.
    const options = await alice.postJson('/account/passkeys/signin/options')
    keep(options.challenge, 'passkey challenge')
    const byPasskey = await alice.post('/account/passkeys/signin', {
      response: authenticator.get(options),
      next: '/account',
    })
    expect(byPasskey.location).toBe('/account')
    const settings = await alice.get('/account/settings')
    const factorIds = [...settings.text.matchAll(/\/account\/settings\/factors\/([^/]+)\/remove/g)]
    expect(factorIds.length).toBeGreaterThanOrEqual(2)
    await removeFactor(alice, factorIds[0]?.[1] as string)

    // A portal link: its page under every spelling, then its one use.
    await openSpelt(portal, 200)
    const pat = visitor()
    expect((await pat.post(portal)).location).toBe('/account')
    expect((await pat.get('/account')).status).toBe(200)
    expect((await send(s, 'GET', portal)).status).toBe(410)

    // An invitation, accepted with a new login and password.
    await openSpelt(danaInvitation, 200)
    const dana = visitor()
    const danaPassword = keep('dana has a long password', 'password')
    const joined = await dana.post(danaInvitation, {
      login: 'dana',
      password: danaPassword,
      confirm: danaPassword,
    })
    expect(joined.status, joined.text).toBe(303)
    expect((await dana.get('/account')).status).toBe(200)

    // The owner changes and removes members; the operator too.
    await alice.get('/account/members')
    expect((await alice.post('/account/members/dana/role', { role: 'viewer' })).status).toBe(303)
    await admin('GET', '/accounts/alice/members')
    await admin('PATCH', '/accounts/alice/members/dana', { role: 'developer' })
    const people = (await json(s, 'GET', '/admin/v1/accounts/alice/members', undefined, bearer))
      .body as unknown as { login: string; email?: string }[]
    const patLogin = people.find((p) => p.email === 'pat@example.com')?.login as string
    expect((await alice.post(`/account/members/${patLogin}/remove`)).status).toBe(303)
    await admin('DELETE', '/accounts/alice/members/dana')
    expect((await alice.post('/account/members/policy', { require2fa: 'on' })).status).toBe(303)

    // The operator's second setup link, spelt, then used.
    await openSpelt(betaSetup, 200)
    const betaHolder = visitor()
    const betaPassword = keep('beta has a password too', 'password')
    const betaSet = await betaHolder.post(betaSetup, {
      password: betaPassword,
      confirm: betaPassword,
    })
    expect(betaSet.status).toBe(303)
    expect((await betaHolder.get('/account/settings')).status).toBe(200)
    expect((await betaHolder.post('/account/sign-out-everywhere')).status).toBe(303)

    // Open sign-up.
    const zoe = visitor()
    await zoe.get('/account/sign-up')
    const zoePassword = keep('zoe signs up with this', 'password')
    const signedUp = await zoe.post('/account/sign-up', { username: 'zoe', password: zoePassword })
    expect(signedUp.status, signedUp.text).toBe(303)

    // Single sign-on through the provider: the invited sam, by the email of the invitation.
    idp.people.set('sam', { email: 'sam@example.com', email_verified: true, name: 'Sam' })
    const sam = visitor()
    const start = await sam.get('/account/sso?next=%2Faccount%2Fscopes')
    expect(start.status).toBe(303)
    const authorization = new URL(start.location as string)
    keep(authorization.searchParams.get('state'), 'OIDC state')
    keep(authorization.searchParams.get('nonce'), 'OIDC nonce')
    const callback = await throughProvider(
      idp,
      authorization,
      'sam',
      `${publicUrl}/account/sso/callback`,
    )
    keep(callback.searchParams.get('code'), 'OIDC code')
    const back = await sam.get(`${callback.pathname}${callback.search}`)
    expect([back.status, back.location], back.text).toEqual([303, '/account/scopes'])
    expect((await sam.get('/account/scopes')).status).toBe(200)
    // The same callback again: refused, its code and state logged nowhere either.
    expect((await sam.get(`${callback.pathname}${callback.search}`)).status).toBe(400)

    // The operator reads what was recorded: the audit log, the event feed, the deliveries.
    const records: string[] = []
    for (const route of [
      '/audit?limit=100',
      '/accounts/alice/audit?limit=100',
      '/webhooks',
      `/webhooks/${webhook.id}`,
      `/webhooks/${webhook.id}/deliveries`,
    ]) {
      records.push(JSON.stringify(await admin('GET', route)))
    }
    // The event stream from its first event, for as long as it takes to send what is kept.
    records.push(await stream(s, '/admin/v1/events?after=0', bearer))
    expect(records.at(-1)).toContain('event: portal_link.created')
    expect((await admin('GET', `/webhooks/${webhook.id}/secret`)).secret).toBe(webhook.secret)
    await admin('POST', `/webhooks/${webhook.id}/ping`)
    await waitFor(() => receiver?.received.length !== 0)
    await admin('DELETE', `/webhooks/${webhook.id}`)

    const keyFile = JSON.parse(readFileSync(path.join(dataDir, 'signing-keys.json'), 'utf8'))
    expect(keyFile.keys).toHaveLength(2)
    for (const key of keyFile.keys as { secret: string }[]) {
      const bytes = Buffer.from(key.secret, 'base64')
      for (const value of [key.secret, bytes.toString('base64url'), bytes.toString('hex')]) {
        keep(value, 'signing secret')
      }
    }

    await s.stop()
    // Every line the process wrote, and the CLI's errors: no secret, in any spelling.
    const lines = `${s.output()}\n${cliErrors}`.split('\n')
    const leaks = new Map<string, number>()
    let leakedLines = 0
    for (const l of lines) {
      const text = readable(l)
      const found = secrets.filter(({ value }) =>
        spellingsOfSecret(value).some((spelling) => text.includes(spelling)),
      )
      if (found.length > 0) leakedLines++
      for (const { label } of found) leaks.set(label, (leaks.get(label) ?? 0) + 1)
    }
    expect(
      Object.fromEntries(leaks),
      `${leakedLines} of ${lines.length} lines hold a secret`,
    ).toEqual({})
    // What the operator reads and the webhook receives holds no secret either.
    const recorded = readable([...records, ...receiver.received.map((r) => r.body)].join('\n'))
    for (const { label, value } of secrets) {
      if (label === 'webhook secret') continue
      expect(recorded.includes(value), `${label} in the audit log, events or deliveries`).toBe(
        false,
      )
    }
    expect(receiver.received.length).toBeGreaterThan(0)

    // The logs were written, and hold every request, redacted.
    const logged = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    const incoming = logged.filter((l) => l.msg === 'incoming request')
    expect(incoming.length).toBeGreaterThanOrEqual(requests + 5)
    const urls = incoming.map((l) => l.req.url as string)
    expect(urls).toContain(`/tokens/v2?access%5Ftoken=[redacted]`)
    expect(urls).toContain(`/tokens/v2#access_token=[redacted]`)
    for (const prefix of ['setup', 'portal', 'invitations']) {
      expect(urls).toContain(`/account/${prefix}/[redacted]`)
      expect(urls).toContain(`//account//${prefix}//[redacted]`)
    }
    const callbacks = urls.filter((u) => u.startsWith('/account/sso/callback?'))
    expect(callbacks).toHaveLength(2)
    for (const u of callbacks) expect(u).toMatch(/^[^?]+\?code=\[redacted\]&state=\[redacted\]/)
    expect(urls.filter((u) => u.includes('[redacted]')).length).toBeGreaterThanOrEqual(requests)
  })
})

/**
 * "Confirm it's you": the password again, for the next 10 minutes of this session. A server
 * from before the step (commit 228d437) has no such page: nothing to do there.
 */
async function confirm(v: Visitor, next = '/account/settings') {
  const page = await v.get(`/account/settings/confirm?next=${encodeURIComponent(next)}`)
  if (page.status === 404) return
  expect(page.status).toBe(200)
  const proven = await v.post('/account/settings/confirm', { password: v.password, next })
  expect([proven.status, proven.location], proven.text).toEqual([303, next])
}

/**
 * A POST that adds or removes a sign-in method (a factor, recovery codes, a passkey). The
 * dashboard asks for a recent proof first when the last is older than 10 minutes (a 303 to
 * its page, 403 for JSON): given here, then the POST again. Any further step goes here.
 */
async function sensitive(v: Visitor, target: string, fields: Record<string, string> = {}) {
  const answer = await v.post(target, fields)
  const asked =
    answer.location?.startsWith('/account/settings/confirm') === true ||
    (answer.status === 403 && answer.text.includes('"confirm"'))
  if (!asked) return answer
  await confirm(v)
  return v.post(target, fields)
}

/** Starts enrolling an authenticator app: the secret its page shows. */
async function enrolTotp(v: Visitor): Promise<string> {
  const page = await v.get('/account/settings/totp')
  expect(page.status).toBe(200)
  const secret = (/<code class="secret">([^<]+)<\/code>/.exec(page.text)?.[1] ?? '').replace(
    / /g,
    '',
  )
  expect(secret).toMatch(/^[A-Z2-7]{16,}$/)
  return secret
}

/** The recovery codes a page shows. */
function recoveryCodes(page: Answer): string[] {
  expect(page.status, page.text).toBe(200)
  const codes = [...page.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)]
  expect(codes).toHaveLength(10)
  return codes.map((m) => m[1] as string)
}

/** Adds a passkey made by `authenticator`. */
async function registerPasskey(v: Visitor, authenticator: Authenticator) {
  const target = '/account/passkeys/register/options'
  const options = await v.postJson(target, () => sensitive(v, target))
  const added = await sensitive(v, '/account/passkeys/register', {
    name: 'Software key',
    response: authenticator.create(options),
  })
  expect(added.location).toBe('/account/settings?done=passkey')
}

/** Removes one of one's factors. */
async function removeFactor(v: Visitor, id: string) {
  const removed = await sensitive(v, `/account/settings/factors/${id}/remove`)
  expect(removed.location).toBe('/account/settings?done=factor-removed')
}

/** The password, right: on the way to the second step. */
async function passwordStep(v: Visitor, username: string, password: string) {
  await v.get('/account/sign-in')
  const res = await v.post('/account/sign-in', { username, password, next: '/account' })
  expect([res.status, res.location]).toEqual([303, '/account/sign-in/verify'])
  expect((await v.get('/account/sign-in/verify')).status).toBe(200)
}

/** The second step: signed in. */
async function finishSignIn(v: Visitor, fields: Record<string, string>) {
  const res = await v.post('/account/sign-in/verify', fields)
  expect([res.status, res.location], res.text).toEqual([303, '/account'])
  expect((await v.get('/account')).status).toBe(200)
}

/**
 * Through the provider as a browser would go (its cookies, its development login form, any
 * password), to the URL it sends the browser back to.
 */
async function throughProvider(
  idp: TestProvider,
  authorization: URL,
  login: string,
  callback: string,
): Promise<URL> {
  const cookies = new Map<string, string>()
  let url = authorization
  for (let hop = 0; hop < 10; hop++) {
    if (url.href.startsWith(callback)) return url
    const cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/
    const get = await fetchTls(idp.certFile, url.origin, 'GET', `${url.pathname}${url.search}`, {
      headers: cookie === '' ? {} : { cookie },
    })
    let answer = get
    const action = form.exec(get.text)?.[1]
    if (get.location === undefined && action !== undefined) {
      answer = await fetchTls(idp.certFile, url.origin, 'POST', action, {
        body: new URLSearchParams({ prompt: 'login', login, password: 'anything' }).toString(),
        headers: { ...formType, ...(cookie === '' ? {} : { cookie }) },
      })
    }
    for (const set of [
      get.headers['set-cookie'] ?? [],
      answer.headers['set-cookie'] ?? [],
    ].flat()) {
      const [pair = ''] = set.split(';')
      const eq = pair.indexOf('=')
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
    }
    expect(answer.location, `a way on from ${url.href}: ${answer.text.slice(0, 200)}`).toBeDefined()
    url = new URL(answer.location as string, url)
  }
  throw new Error(`no way back from the provider: ${url.href}`)
}

async function waitFor(done: () => boolean, ms = 10_000) {
  const until = Date.now() + ms
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  expect(done()).toBe(true)
}
