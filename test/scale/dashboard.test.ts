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

beforeAll(async () => {
  ;[first, second] = await Promise.all([startServer(fleet.env), startServer(fleet.env)])
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
  options: { cookie?: string; form?: Record<string, string>; ip?: string } = {},
): Promise<Answer> {
  const body = options.form && new URLSearchParams(options.form).toString()
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method: body === undefined ? 'GET' : 'POST',
        ca: readFileSync(server.certFile),
        agent: false,
        headers: {
          ...(options.cookie ? { cookie: options.cookie } : {}),
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/x-www-form-urlencoded', origin: server.url }),
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
})
