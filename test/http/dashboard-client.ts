import type { FastifyInstance } from 'fastify'
import { cliActor } from '../../src/audit/events.js'
import type { AppContext } from '../../src/context.js'

export const origin = 'https://tessera.test'

export interface Page {
  status: number
  body: string
  headers: Record<string, string | string[] | number | undefined>
  location?: string
}

/** A browser's part in a dashboard session through `inject`: a cookie jar of one, same origin. */
export class DashboardClient {
  cookie?: string
  /** Cookies besides the session's: a pending two-step sign-in, a single sign-on flow. */
  readonly others = new Map<string, string>()
  csrf = ''

  constructor(
    private readonly app: FastifyInstance,
    private readonly ip = '127.0.0.1',
  ) {}

  async get(url: string): Promise<Page> {
    return this.send('GET', url)
  }

  /** A form POST with the session's CSRF token (unless given) from the dashboard's origin. */
  async post(url: string, fields: Record<string, string | string[]>, headers = {}): Promise<Page> {
    const body = new URLSearchParams()
    if (this.csrf !== '' && !('_csrf' in fields)) body.append('_csrf', this.csrf)
    for (const [name, value] of Object.entries(fields)) {
      for (const v of [value].flat()) body.append(name, v)
    }
    return this.send('POST', url, body.toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      origin,
      ...headers,
    })
  }

  async signIn(username: string, password: string): Promise<Page> {
    return this.post('/account/sign-in', { username, password, next: '/account' })
  }

  private cookieHeader(): string {
    const all = [...this.others].map(([name, value]) => `${name}=${value}`)
    if (this.cookie !== undefined) all.unshift(this.cookie)
    return all.join('; ')
  }

  private async send(method: 'GET' | 'POST', url: string, payload?: string, headers = {}) {
    const res = await this.app.inject({
      method,
      url,
      payload,
      remoteAddress: this.ip,
      headers: Object.fromEntries(
        Object.entries({
          host: 'tessera.test',
          ...(this.cookieHeader() ? { cookie: this.cookieHeader() } : {}),
          ...headers,
        }).filter(([, value]) => value !== undefined),
      ) as Record<string, string>,
    })
    for (const set of [res.headers['set-cookie'] ?? []].flat()) {
      const [pair = ''] = set.split(';')
      const eq = pair.indexOf('=')
      const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)]
      if (name === '__Host-tessera_session') {
        this.cookie = value ? `__Host-tessera_session=${value}` : undefined
      } else if (value === '') this.others.delete(name)
      else this.others.set(name, value)
    }
    const csrf = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1]
    if (csrf !== undefined) this.csrf = csrf
    return {
      status: res.statusCode,
      body: res.body,
      headers: res.headers,
      location: res.headers.location as string | undefined,
    }
  }
}

/** The text of the page's alert, or undefined. */
export const alertOf = (body: string) =>
  /<div role="alert"[^>]*>\s*<p><strong>([^<]*)<\/strong>/.exec(body)?.[1]

export const titleOf = (body: string) => /<h1>([^<]*)<\/h1>/.exec(body)?.[1]

/** The holder of `username`, their password set by a setup link, signed in on the tokens page. */
export async function signedInHolder(
  app: FastifyInstance,
  ctx: AppContext,
  username: string,
  password: string,
): Promise<DashboardClient> {
  const b = new DashboardClient(app)
  const link = await ctx.holders.invite(username, cliActor)
  const set = await b.post(`/account/setup/${link}`, { password, confirm: password })
  if (set.status !== 303) throw new Error(`setting ${username}'s password answered ${set.status}`)
  await b.get('/account')
  return b
}
