import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { dialect, dialectEnv } from '../dialect.js'
import { api } from './client.js'
import { type ServerProcess, startServer, tessera } from './server.js'

const user = 'crash'
const publicScopes = ['styles:read', 'styles:tiles', 'fonts:read']
const secretScopes = ['styles:list', 'fonts:list', 'datasets:list']
const concurrency = 32

interface TokenObject {
  id: string
  usage: 'pk' | 'sk'
  token?: string
  note: string
  scopes: string[]
  allowedUrls?: string[]
}

/** What a client sets on a token, in a form to compare: scopes and URLs as sorted sets. */
interface Fields {
  note: string
  scopes: string[]
  allowedUrls?: string[]
}

const fieldsOf = (t: { note: string; scopes: string[]; allowedUrls?: string[] | null }) => ({
  note: t.note,
  scopes: [...new Set(t.scopes)].sort(),
  ...(t.allowedUrls?.length ? { allowedUrls: [...new Set(t.allowedUrls)].sort() } : {}),
})
const same = (a: Fields, b: Fields | undefined) => JSON.stringify(a) === JSON.stringify(b)

/** An acknowledged create and what happened to it since. */
interface Tracked {
  id: string
  /** Unknown for an sk whose create was never answered (lists do not show sk strings). */
  token?: string
  usage: 'pk' | 'sk'
  /** As the last acknowledged create or update answered. */
  fields: Fields
  /** An update sent and never answered: the token may hold these instead. */
  unanswered?: Fields
  /** One request per token at a time, so that acknowledgement order is commit order. */
  busy: boolean
  deleted: 'no' | 'yes' | 'maybe'
}

interface Load {
  serial: number
  tokens: Tracked[]
  /** Creates sent and never answered, by their unique note: they may or may not exist. */
  unansweredCreates: Map<string, Fields>
  acked: { creates: number; updates: number; deletes: number }
  /** Answers other than the contract's (and connections lost before the kill). */
  failures: string[]
  /** What the restarted server got wrong, token by token. */
  problems: string[]
}

type Send = (method: string, route: string, body?: unknown) => Promise<Reply | undefined>
interface Reply {
  status: number
  body: TokenObject
}

/**
 * Requests on kept-alive connections (TLS handshakes would take the machine), answering
 * undefined when the connection dies before the whole answer arrived, even mid-body.
 */
function sender(server: ServerProcess, token: string, agent: Agent, lost: (e: Error) => void) {
  const send: Send = (method, route, body) =>
    new Promise((resolve) => {
      let settled = false
      const gone = (err: Error) => {
        if (settled) return
        settled = true
        lost(err)
        resolve(undefined)
      }
      const url = `${server.url}${route}?access_token=${token}`
      const req = request(url, { method, agent }, (res) => {
        let text = ''
        res.on('data', (d) => {
          text += d
        })
        res.on('error', gone)
        res.on('end', () => {
          settled = true
          resolve({ status: res.statusCode ?? 0, body: text && JSON.parse(text) })
        })
      })
      req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${route} timed out`)))
      req.on('error', gone)
      if (body !== undefined) req.setHeader('content-type', 'application/json')
      req.end(body === undefined ? undefined : JSON.stringify(body))
    })
  return send
}

const some = (scopes: string[]) => {
  const picked = scopes.filter(() => Math.random() < 0.5)
  return picked.length > 0 ? picked : scopes.slice(0, 1)
}

async function create(s: Load, send: Send) {
  const n = ++s.serial
  const body = {
    note: `crash ${n}`,
    scopes: some(n % 2 === 0 ? secretScopes : publicScopes),
    ...(n % 3 === 0 ? { allowedUrls: [`https://app${n}.example.com`, '*.example.org'] } : {}),
  }
  s.unansweredCreates.set(body.note, fieldsOf(body))
  const reply = await send('POST', `/tokens/v2/${user}`, body)
  if (reply === undefined) return
  s.unansweredCreates.delete(body.note)
  if (reply.status !== 200) return s.failures.push(`create: ${reply.status}`)
  const { id, token, usage } = reply.body
  s.acked.creates++
  s.tokens.push({ id, token, usage, fields: fieldsOf(reply.body), busy: false, deleted: 'no' })
}

async function update(s: Load, send: Send, t: Tracked) {
  const n = ++s.serial
  const body: { note: string; scopes?: string[]; allowedUrls?: string[] | null } = {
    note: `crash ${n} (update)`,
  }
  if (n % 2 === 0) body.scopes = some(t.usage === 'sk' ? secretScopes : publicScopes)
  if (n % 3 === 0) body.allowedUrls = n % 4 === 0 ? null : [`https://edit${n}.example.net/map`]
  const next = fieldsOf({ ...t.fields, ...body })
  t.busy = true
  const reply = await send('PATCH', `/tokens/v2/${user}/${t.id}`, body)
  if (reply === undefined) {
    t.unanswered = next
    return
  }
  t.busy = false
  if (reply.status !== 200) return s.failures.push(`update: ${reply.status}`)
  s.acked.updates++
  t.fields = fieldsOf(reply.body)
  if (!same(t.fields, next)) s.failures.push(`update of ${t.id} answered other values`)
}

async function remove(s: Load, send: Send, t: Tracked) {
  t.busy = true
  const reply = await send('DELETE', `/tokens/v2/${user}/${t.id}`)
  if (reply === undefined) {
    t.deleted = 'maybe'
    return
  }
  if (reply.status !== 204) return s.failures.push(`delete: ${reply.status}`)
  s.acked.deletes++
  t.deleted = 'yes'
}

/** Half creates, the rest updates and deletes (3:2) of idle acknowledged tokens. */
async function step(s: Load, send: Send) {
  const roll = Math.random()
  let target: Tracked | undefined
  for (let i = 0; roll >= 0.5 && target === undefined && i < 8; i++) {
    const t = s.tokens[Math.floor(Math.random() * s.tokens.length)]
    if (t !== undefined && !t.busy && t.deleted === 'no') target = t
  }
  if (target === undefined) return create(s, send)
  return roll < 0.8 ? update(s, send, target) : remove(s, send, target)
}

async function eachLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>) {
  const out: R[] = []
  let next = 0
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T)
  }
  await Promise.all(Array.from({ length: limit }, worker))
  return out
}

/** Every token of the account, page by page along the `Link` rel="next" headers. */
async function listAll(server: ServerProcess, token: string): Promise<TokenObject[]> {
  const all: TokenObject[] = []
  let route: string | undefined = `/tokens/v2/${user}?limit=100`
  while (route !== undefined) {
    const res = await api(server, 'GET', route, token)
    expect(res.status).toBe(200)
    all.push(...res.body)
    const next = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1]
    route = next === undefined ? undefined : new URL(next).pathname + new URL(next).search
  }
  return all
}

/** Load for one to two seconds, then SIGKILL with requests in flight; figures of the round. */
async function loadAndKill(server: ServerProcess, token: string, s: Load) {
  s.acked = { creates: 0, updates: 0, deletes: 0 }
  let killed = false
  let inFlight = 0
  const agent = new Agent({ keepAlive: true, ca: readFileSync(server.certFile) })
  const send = sender(server, token, agent, (err) => {
    if (killed) inFlight++
    else s.failures.push(`before the kill: ${err.message}`)
  })
  const workers = Array.from({ length: concurrency }, async () => {
    while (!killed) await step(s, send)
  })
  // A different moment of the group commits each time.
  await new Promise((resolve) => setTimeout(resolve, 1000 + Math.random() * 1000))
  killed = true
  await server.kill('SIGKILL')
  await Promise.all(workers)
  agent.destroy()
  return { ...s.acked, inFlight, unansweredCreates: s.unansweredCreates.size }
}

/**
 * Compares what the restarted server holds with what was acknowledged, then takes what it holds
 * of the unanswered requests as the state the next round starts from.
 */
async function verify(server: ServerProcess, token: string, s: Load, own: string[]) {
  const listed = new Map<string, TokenObject>()
  let unexpected = 0
  for (const entry of await listAll(server, token)) {
    if (listed.has(entry.id)) unexpected++
    listed.set(entry.id, entry)
  }
  const agent = new Agent({ keepAlive: true, ca: readFileSync(server.certFile) })
  const retrieved = await eachLimited(s.tokens, 16, async (t) => {
    if (t.token === undefined) return undefined
    const retrieve = sender(server, t.token, agent, (err) => s.failures.push(err.message))
    const reply = await retrieve('GET', '/tokens/v2')
    return reply?.body as unknown as { code: string; token?: { authorization: string } }
  })
  agent.destroy()

  let lost = 0
  let resurrected = 0
  let stale = 0
  s.tokens.forEach((t, i) => {
    const entry = listed.get(t.id)
    listed.delete(t.id)
    // An sk whose create was never answered has no known string: the listing speaks for it.
    const { code, token: payload } = t.token
      ? (retrieved[i] ?? { code: 'no answer' })
      : { code: entry ? 'TokenValid' : 'TokenRevoked', token: { authorization: t.id } }
    const gone = entry === undefined && code === 'TokenRevoked'
    if (t.deleted === 'yes' || (t.deleted === 'maybe' && gone)) {
      if (!gone) s.problems.push(`deleted ${t.id} is back: ${code}, listed ${entry !== undefined}`)
      if (!gone) resurrected++
      t.deleted = 'yes'
      return
    }
    if (entry === undefined || code !== 'TokenValid') {
      s.problems.push(
        `created ${t.id} (${t.usage}) is lost: ${code}, listed ${entry !== undefined}`,
      )
      lost++
      t.deleted = 'yes'
      return
    }
    const fields = fieldsOf(entry)
    const sameToken = t.usage === 'sk' || entry.token === t.token
    if (!sameToken || entry.usage !== t.usage || payload?.authorization !== t.id) {
      s.problems.push(`${t.id} has another token string or usage`)
      stale++
    } else if (!same(fields, t.fields) && !same(fields, t.unanswered)) {
      s.problems.push(`${t.id} holds ${JSON.stringify(fields)}, not ${JSON.stringify(t.fields)}`)
      stale++
    }
    Object.assign(t, { fields, unanswered: undefined, busy: false, deleted: 'no' })
  })
  for (const id of own) {
    if (listed.delete(id)) continue
    s.problems.push(`the account's own ${id} is lost`)
    lost++
  }
  // What is left may only be creates that were never answered: from now on, tokens like others.
  let kept = 0
  for (const entry of listed.values()) {
    if (same(fieldsOf(entry), s.unansweredCreates.get(entry.note))) {
      s.unansweredCreates.delete(entry.note)
      const { id, token, usage } = entry
      s.tokens.push({ id, token, usage, fields: fieldsOf(entry), busy: false, deleted: 'no' })
      kept++
    } else {
      s.problems.push(`never asked for: ${JSON.stringify(entry)}`)
      unexpected++
    }
  }
  s.unansweredCreates.clear()
  return { kept, lost, resurrected, stale, unexpected }
}

const servers: ServerProcess[] = []
const storage = dialectEnv()
// The signing keys (signing-keys.json) and the TLS certificate outlive the process here.
const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-crash-'))
/** An operator key of the admin scope (`id:secret`), to read the usage with. */
const adminKey = { id: 'crash', secret: 'a-secret-of-the-crash-test-only-0123456789' }
const env = {
  ...storage.env,
  DATA_DIR: dataDir,
  RATE_LIMIT_PER_MINUTE: '1000000',
  LOG_LEVEL: 'warn',
  USAGE_FLUSH_SECONDS: '1',
  ADMIN_KEYS: `${adminKey.id}:${adminKey.secret}`,
}
afterAll(async () => {
  for (const server of servers) await server.stop()
  await storage.drop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** The server the test before left running (with the account `crash`), or one of its own. */
async function running(): Promise<ServerProcess> {
  const last = servers.at(-1)
  if (last !== undefined) return last
  const server = await startServer(env)
  servers.push(server)
  await tessera(server.env, 'account', 'create', user)
  return server
}

/** A GET of the admin API with an operator key. */
function adminGet(server: ServerProcess, key: string, route: string) {
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}` }
    const ca = readFileSync(server.certFile)
    const req = request(`${server.url}${route}`, { headers, ca, agent: false }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('a server killed with SIGKILL under load', () => {
  it('restarts with every acknowledged create, update and delete, and nothing never asked for', async () => {
    let server = await startServer(env)
    servers.push(server)
    const account = await tessera(server.env, 'account', 'create', user)
    const scopes = ['tokens:read', 'tokens:write', ...publicScopes, ...secretScopes]
    const holder = await tessera(
      server.env,
      'token',
      'create',
      user,
      '--scopes',
      scopes.join(','),
      '--note',
      'test',
    )
    const own = [account.defaultToken.id, holder.id]

    const s: Load = {
      serial: 0,
      tokens: [],
      unansweredCreates: new Map(),
      acked: { creates: 0, updates: 0, deletes: 0 },
      failures: [],
      problems: [],
    }
    const total = { creates: 0, updates: 0, deletes: 0, inFlight: 0 }
    const wrong = { lost: 0, resurrected: 0, stale: 0, unexpected: 0 }
    // Twice, and again while no kill has caught a request unanswered (a busy machine can
    // leave the server idle, waiting for its client, at the moment of the kill).
    for (let kill = 1; kill <= 2 || (total.inFlight === 0 && kill <= 4); kill++) {
      const round = await loadAndKill(server, holder.token, s)
      server = await startServer(env)
      servers.push(server)
      const found = await verify(server, holder.token, s, own)
      for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += round[key]
      for (const key of Object.keys(wrong) as (keyof typeof wrong)[]) wrong[key] += found[key]
      console.log(
        `crash (${dialect}), kill ${kill}: acknowledged ${round.creates} creates, ` +
          `${round.updates} updates, ${round.deletes} deletes; ${round.inFlight} in flight at kill ` +
          `(${round.unansweredCreates} creates, ${found.kept} of them kept); lost ${found.lost}, ` +
          `resurrected ${found.resurrected}, stale ${found.stale}, unexpected ${found.unexpected}`,
      )
    }
    expect({ ...wrong, failures: s.failures, problems: s.problems }).toEqual({
      lost: 0,
      resurrected: 0,
      stale: 0,
      unexpected: 0,
      failures: [],
      problems: [],
    })
    expect(Math.min(total.creates, total.updates, total.deletes, total.inFlight)).toBeGreaterThan(0)
  }, 60_000)
})

describe('the usage counts of a server killed with SIGKILL', () => {
  it('keeps the counts and last use of verifications written a flush (USAGE_FLUSH_SECONDS) before the kill', async () => {
    let server = await running()
    const key = adminKey.secret
    const pk = await tessera(
      server.env,
      'token',
      'create',
      user,
      '--scopes',
      'styles:read',
      '--note',
      'test',
    )
    const from = new Date(Date.now() - 60_000).toISOString()
    for (let i = 0; i < 20; i++) {
      expect((await api(server, 'GET', '/tokens/v2', pk.token)).body.code).toBe('TokenValid')
    }
    const to = new Date(Date.now() + 120_000).toISOString()
    const route = `/admin/v1/accounts/${user}/usage?from=${from}&to=${to}&resolution=minute&token=${pk.id}`
    const valid = async () =>
      ((await adminGet(server, key, route)).body as { totals: { valid?: number } }).totals.valid
    // Written within a flush, with no shutdown (every second here; a loaded machine may run the
    // timer late).
    const deadline = Date.now() + 5_000
    while ((await valid()) !== 20 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(await valid()).toBe(20)
    await server.kill('SIGKILL')
    server = await startServer(env)
    servers.push(server)
    expect(await valid()).toBe(20)
    const token = await adminGet(server, key, `/admin/v1/accounts/${user}/tokens/${pk.id}/usage`)
    expect((token.body as { lastUsed: string }).lastUsed).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/,
    )
  })
})
