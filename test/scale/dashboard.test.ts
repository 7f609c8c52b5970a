import { readFileSync } from 'node:fs'
import { request } from 'node:https'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from '../e2e/client.js'
import { type ServerProcess, startServer, tessera } from '../e2e/server.js'
import { fleetEnv } from './env.js'

const fleet = fleetEnv()
let first: ServerProcess
let second: ServerProcess
const password = 'correct horse battery staple'
const operatorSecret = 'op-fleet-0123456789abcdefghijklmnopqrstuvwxyz'

beforeAll(async () => {
  const env = { ...fleet.env, ADMIN_KEYS: `k1:${operatorSecret}` }
  ;[first, second] = await Promise.all([startServer(env), startServer(env)])
})
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()])
  await fleet.drop()
})

interface Answer {
  status: number
  body: string
  headers: Record<string, string | string[] | undefined>
}

/** A form POST or a GET to one instance, as a browser on that instance's origin sends it. */
function page(
  server: ServerProcess,
  path: string,
  options: {
    cookie?: string
    form?: Record<string, string>
    ip?: string
    json?: unknown
    bearer?: string
  } = {},
): Promise<Answer> {
  const body =
    options.json === undefined
      ? options.form && new URLSearchParams(options.form).toString()
      : JSON.stringify(options.json)
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method: body === undefined ? 'GET' : 'POST',
        ca: readFileSync(server.certFile),
        agent: false,
        headers: {
          ...(options.cookie ? { cookie: options.cookie } : {}),
          ...(options.bearer ? { authorization: `Bearer ${options.bearer}` } : {}),
          ...(body === undefined
            ? {}
            : options.json === undefined
              ? { 'content-type': 'application/x-www-form-urlencoded', origin: server.url }
              : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const cookieOf = (a: Answer) => String(a.headers['set-cookie']).split(';')[0] ?? ''
const csrfOf = (a: Answer) => /name="_csrf" value="([^"]+)"/.exec(a.body)?.[1] ?? ''

describe('the dashboard on two instances sharing PostgreSQL and Redis', () => {
  it('keeps a session made on one instance on the other, and sign-out ends it on both', async () => {
    const account = await tessera(first.env, 'account', 'create', 'dash-a')
    const setup = new URL(account.setupUrl).pathname
    const done = await page(first, setup, { form: { password, confirm: password } })
    expect(done.status).toBe(303)
    const cookie = cookieOf(done)

    const elsewhere = await page(second, '/account', { cookie })
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.body).toContain(account.defaultToken.token)

    // A token made in the dashboard of the second is in the first one's API at once.
    const made = await page(second, '/account/tokens/new', {
      cookie,
      form: { _csrf: csrfOf(elsewhere), note: 'from the dashboard', scopes: 'tokens:read' },
    })
    expect(made.status).toBe(200)
    const sk = /id="new-token" readonly value="([^"]+)"/.exec(made.body)?.[1] ?? ''
    const listed = await api(first, 'GET', '/tokens/v2/dash-a', sk)
    expect(listed.status).toBe(200)
    expect(listed.body.map((t: { note: string }) => t.note)).toEqual([
      'Default public token',
      'from the dashboard',
    ])

    const out = await page(first, '/account/sign-out-everywhere', {
      cookie,
      form: { _csrf: csrfOf(elsewhere) },
    })
    expect(out.headers.location).toBe('/account/sign-in')
    expect((await page(second, '/account', { cookie })).headers.location).toBe('/account/sign-in')
  })

  it('counts failed sign-ins for a username across instances (Redis)', async () => {
    await tessera(first.env, 'account', 'create', 'dash-b')
    const wrong = { username: 'dash-b', password: 'not the password at all' }
    for (const server of [first, second, first, second, first]) {
      expect((await page(server, '/account/sign-in', { form: wrong })).status).toBe(401)
    }
    const refused = await page(second, '/account/sign-in', { form: wrong })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(890)
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(900)
  })

  it('checks 5 of 40 concurrent wrong passwords for one username across both instances', async () => {
    await tessera(first.env, 'account', 'create', 'dash-c')
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        page(i % 2 === 0 ? first : second, '/account/sign-in', {
          form: { username: 'dash-c', password: `wrong guess ${i}` },
        }),
      ),
    )
    const statuses = answers.map((a) => a.status)
    expect([
      statuses.filter((s) => s === 401).length,
      statuses.filter((s) => s === 429).length,
    ]).toEqual([5, 35])
  })

  it('signs a removed member out on the other instance at once; a portal link works once across both', async () => {
    const account = await tessera(first.env, 'account', 'create', 'dash-m')
    const owner = await page(first, new URL(account.setupUrl).pathname, {
      form: { password, confirm: password },
    })
    const ownerCookie = cookieOf(owner)
    const invited = await tessera(first.env, 'member', 'add', 'dash-m', 'mo@m.example')
    expect(invited.role).toBe('developer')
    const joined = await page(second, new URL(invited.invitationUrl).pathname, {
      form: { login: 'mo', password, confirm: password },
    })
    expect(joined.status).toBe(303)
    const moCookie = cookieOf(joined)
    expect((await page(first, '/account', { cookie: moCookie })).status).toBe(200)

    const members = await page(first, '/account/members', { cookie: ownerCookie })
    const removed = await page(first, '/account/members/mo/remove', {
      cookie: ownerCookie,
      form: { _csrf: csrfOf(members) },
    })
    expect(removed.headers.location).toBe('/account/members?done=removed')
    const out = await page(second, '/account', { cookie: moCookie })
    expect([out.status, out.headers.location]).toEqual([303, '/account/sign-in'])

    const made = await page(first, '/admin/v1/accounts/dash-m/portal-links', {
      bearer: operatorSecret,
      json: { email: 'pat@m.example', role: 'viewer' },
    })
    expect(made.status).toBe(201)
    const path = new URL(JSON.parse(made.body).url).pathname
    expect((await page(second, path)).status).toBe(200)
    expect((await page(first, path)).status).toBe(200)
    // Both instances at once: one signs in, the other finds it used.
    const both = await Promise.all([
      page(first, path, { form: {} }),
      page(second, path, { form: {} }),
    ])
    expect(both.map((a) => a.status).sort()).toEqual([303, 410])
    const used = both.find((a) => a.status === 303) as Answer
    const tokens = await page(second, '/account', { cookie: cookieOf(used) })
    expect(tokens.status).toBe(200)
    expect(tokens.body).toContain('dash-m <span class="login">(pat)</span>')
    expect((await page(second, path, { form: {} })).status).toBe(410)
  })
})
