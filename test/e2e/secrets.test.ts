import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect } from 'node:tls'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { percentEncoded, readable, spellingsOfSecret, tokenSpellings } from '../secrets.js'
import { type ServerProcess, startServer } from './server.js'

const root = path.resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

interface Answer {
  status: number
  text: string
  headers: Record<string, string | string[] | undefined>
}

/** One HTTPS request, its target sent as written (a `#` and escapes included). */
function send(
  server: ServerProcess,
  method: string,
  target: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const { port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target,
        ca: readFileSync(server.certFile),
        agent: false,
        headers: options.headers,
      },
      (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }))
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
): Promise<{ status: number; body: Record<string, unknown> }> => {
  const answer = await send(server, method, target, {
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  })
  return { status: answer.status, body: answer.text === '' ? {} : JSON.parse(answer.text) }
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

describe('a full session at LOG_LEVEL=trace', () => {
  let server: ServerProcess | undefined
  afterAll(() => server?.stop())

  it('writes no token string, signing secret or setup link secret anywhere', {
    timeout: 90_000,
  }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-secrets-'))
    server = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: 'trace' })
    const s = server
    const secrets: string[] = []
    const keep = (value: unknown) => {
      expect(typeof value).toBe('string')
      secrets.push(value as string)
      return value as string
    }
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

    // The operator: an account (its setup link, its default pk) and tokens from the CLI.
    const account = await cli('account', 'create', 'alice')
    const setupPath = new URL(account.setupUrl).pathname
    const setupSecret = keep(setupPath.split('/').pop())
    keep(account.defaultToken.token)
    const sk = keep(
      (await cli('token', 'create', 'alice', '--scopes', 'tokens:read,tokens:write,scopes:list'))
        .token,
    )
    keep((await cli('token', 'create', 'alice', '--note', 'cli pk')).token)

    // Every API route, with the token under every spelling the server accepts.
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
    keep(pk.body.token)
    const sk2 = await api('POST', '/tokens/v2/alice', `%61ccess_token=${percentEncoded(sk)}`, {
      note: 'sk',
      scopes: ['tokens:read'],
    })
    keep(sk2.body.token)
    const expires = new Date(Date.now() + 3_600_000).toISOString()
    const tk = await api('POST', '/tokens/v2/alice', `access_token=${sk}`, {
      expires,
      scopes: ['tokens:read'],
    })
    expect(tk.status).toBe(200)
    const temporary = keep(tk.body.token)
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
    const tampered = keep(`${sk.slice(0, -1)}${sk.endsWith('A') ? 'B' : 'A'}`)
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
    keep(rotated.body.token)

    // Requests Node's parser refuses, their request line carrying the token.
    const line = `GET /tokens/v2?access_token=${sk} HTTP/1.1\r\nHost: x\r\n`
    expect(await rawTls(s, `${line}Bad header\r\n\r\n`)).toMatch(/^HTTP\/1.1 400/)
    // A reset may come first (the server stops reading): what is written is what is tested.
    const overflow = await rawTls(s, `${line}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(overflow === '' || overflow.startsWith('HTTP/1.1 431'), overflow).toBe(true)

    // The account holder: the setup link (as sent, and spelt otherwise), then a token.
    const origin = { origin: s.url, 'content-type': 'application/x-www-form-urlencoded' }
    expect((await send(s, 'GET', setupPath)).status).toBe(200)
    const password = keep('correct horse battery staple')
    const setUp = await send(s, 'POST', setupPath, {
      body: new URLSearchParams({ password, confirm: password }).toString(),
      headers: origin,
    })
    expect(setUp.status).toBe(303)
    const cookie = String([setUp.headers['set-cookie']].flat()[0]).split(';')[0] ?? ''
    const spelt = `/account/%73etup/${percentEncoded(setupSecret)}`
    // The same link, used: 410 (a link never issued is 404), so the spelling reached it.
    expect((await send(s, 'GET', spelt)).status).toBe(410)
    const form = await send(s, 'GET', '/account/tokens/new', { headers: { cookie } })
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)?.[1] ?? ''
    const created = await send(s, 'POST', '/account/tokens/new', {
      body: new URLSearchParams({ _csrf: csrf, note: 'web', scopes: 'tokens:read' }).toString(),
      headers: { ...origin, cookie },
    })
    expect(created.status).toBe(200)
    keep(/id="new-token" readonly value="([^"]+)"/.exec(created.text)?.[1])
    keep(cookie.split('=')[1])

    const keyFile = JSON.parse(readFileSync(path.join(dataDir, 'signing-keys.json'), 'utf8'))
    expect(keyFile.keys).toHaveLength(2)
    for (const key of keyFile.keys as { secret: string }[]) {
      const bytes = Buffer.from(key.secret, 'base64')
      secrets.push(key.secret, bytes.toString('base64url'), bytes.toString('hex'))
    }

    await s.stop()
    const written = readable(`${s.output()}\n${cliErrors}`)
    for (const secret of secrets.flatMap(spellingsOfSecret)) {
      expect(written.includes(secret), `a secret was written: ${secret}`).toBe(false)
    }

    // The logs were written, and hold every request, redacted.
    const lines = s
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
    const incoming = lines.filter((l) => l.msg === 'incoming request')
    expect(incoming.length).toBeGreaterThanOrEqual(requests + 5)
    const urls = incoming.map((l) => l.req.url as string)
    expect(urls).toContain(`/tokens/v2?access%5Ftoken=[redacted]`)
    expect(urls).toContain(`/tokens/v2#access_token=[redacted]`)
    expect(urls).toContain('/account/setup/[redacted]')
    expect(urls.filter((u) => u.includes('[redacted]')).length).toBeGreaterThanOrEqual(requests)
  })
})
