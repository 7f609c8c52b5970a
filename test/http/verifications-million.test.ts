import { performance } from 'node:perf_hooks'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { verificationsRepo } from '../../src/db/verifications.js'
import { dialect } from '../dialect.js'
import { tesseraVariables } from '../environment.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * The verification log's listing over 10^6 rows (issue 47, done-means 2): 3 days, 2 accounts,
 * 3 tokens each, several outcomes and sources, seeded by one statement. Paging a filtered query
 * gives every row exactly once, as a direct count says; the CLI's first rows are the API's.
 */

const dayMs = 86_400_000
const rows = 1_000_000
/** Midnight three days before T0's; row i is at day + 259 i ms, the last one on T0's eve. */
const day = T0 - (T0 % dayMs) - 3 * dayMs
const range = { from: new Date(day).toISOString(), to: new Date(day + 3 * dayMs).toISOString() }
/** alice's tokens end in 0-2 and are `c` and 23 a's before it; bob's, b's. */
const tokenOf = (account: 'alice' | 'bob', n: number) =>
  `c${(account === 'alice' ? 'a' : 'b').repeat(23)}${n}`

/**
 * Row i: alice's when i is even; token (i / 2) % 3; every 997th ip_not_allowed (the rare one),
 * then 49 of 997 rate_limited, 100 revoked, the rest valid; source by (i / 6) % 4.
 */
const columns = (i: string) => `
  ${day} + ${i} * 259,
  's' || ${i},
  case when ${i} % 2 = 0 then 'alice' else 'bob' end,
  'c' || case when ${i} % 2 = 0 then '${'a'.repeat(23)}' else '${'b'.repeat(23)}' end || ((${i} / 2) % 3),
  case (${i} / 6) % 4 when 0 then 'retrieve' when 1 then 'api' when 2 then 'introspection'
    else 'verifier' end,
  case when ${i} % 997 = 0 then 'ip_not_allowed' when ${i} % 997 < 50 then 'rate_limited'
    when ${i} % 997 < 150 then 'revoked' else 'valid' end,
  case when ${i} % 997 between 1 and 49 then 'requests' end,
  '203.0.113.' || (${i} % 250),
  null,
  'req' || ${i},
  100 + ${i} % 900`

const into =
  'insert into verifications (at, id, account, token_id, source, outcome, limit_name, ip, ' +
  'origin, request_id, duration_us)'

let h: Harness
beforeAll(async () => {
  h = await harness({ ...adminEnv }, { accountsCreated: day - dayMs })
  const started = performance.now()
  if (dialect === 'postgres') {
    for (let d = 0; d < 4; d += 2) await verificationsRepo.prepare(h.ctx.db, day + d * dayMs)
    // In steps of 10^5: a statement has 5 s (the pool's query_timeout).
    for (let lo = 0; lo < rows; lo += 100_000) {
      const series = `generate_series(${lo}, ${lo + 100_000 - 1})`
      await sql.raw(`${into} select ${columns('i')} from ${series} as i`).execute(h.ctx.db)
    }
    await sql.raw('analyze verifications').execute(h.ctx.db)
  } else {
    await sql
      .raw(
        `with recursive n(i) as (select 0 union all select i + 1 from n where i < ${rows - 1}) ` +
          `${into} select ${columns('i')} from n`,
      )
      .execute(h.ctx.db)
  }
  console.log(`${dialect}: ${rows} rows seeded in ${Math.round(performance.now() - started)} ms`)
}, 180_000)
afterAll(() => h?.close())

const q = (params: Record<string, string>) => new URLSearchParams(params).toString()

/** The ids a direct query finds, newest first. */
async function expected(
  account: string,
  where: { token?: string; outcome: string; source?: string },
) {
  let query = h.ctx.db
    .selectFrom('verifications')
    .select('id')
    .where('account', '=', account)
    .where('at', '>=', day)
    .where('at', '<', day + 3 * dayMs)
    .where('outcome', '=', where.outcome)
  if (where.token !== undefined) query = query.where('token_id', '=', where.token)
  if (where.source !== undefined) query = query.where('source', '=', where.source)
  const found = await query.orderBy('at', 'desc').orderBy('id', 'desc').execute()
  return found.map((r) => r.id)
}

/** Every page of a listing, following Link: the ids in order, the pages, the first's time. */
async function everyPage(path: string) {
  const ids: string[] = []
  let pages = 0
  let first = 0
  let next: string | undefined = path
  while (next !== undefined) {
    const started = performance.now()
    const res = await admin(h.app, 'GET', next)
    if (pages === 0) first = performance.now() - started
    expect(res.status).toBe(200)
    ids.push(...res.body.map((r: { id: string }) => r.id))
    pages++
    const link = res.headers.link as string | undefined
    next = link === undefined ? undefined : /\/admin\/v1([^>]*)>/.exec(link)?.[1]
  }
  return { ids, pages, first }
}

async function cli(args: string[]) {
  const out: string[] = []
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk))
    return true
  })
  for (const name of tesseraVariables) vi.stubEnv(name, undefined)
  vi.stubEnv('DATA_DIR', h.dir)
  const { db } = h.ctx.config
  if (db.kind === 'postgres') {
    vi.stubEnv('DATABASE_URL', db.url)
    if (db.schema !== undefined) vi.stubEnv('DATABASE_SCHEMA', db.schema)
  }
  try {
    const code = await main(args)
    return { code, json: JSON.parse(out.join('')) }
  } finally {
    stdout.mockRestore()
    vi.unstubAllEnvs()
  }
}

describe('the verification log over 10^6 rows', () => {
  it('pages a rare outcome of one token exactly, as a direct count finds it', async () => {
    const token = tokenOf('alice', 0)
    const want = await expected('alice', { token, outcome: 'ip_not_allowed' })
    expect(want.length).toBeGreaterThan(100)
    const got = await everyPage(
      `/accounts/alice/verifications?${q({ ...range, token, outcome: 'ip_not_allowed', limit: '50' })}`,
    )
    expect(got.ids).toEqual(want)
    expect(got.pages).toBe(Math.ceil(want.length / 50))
    console.log(
      `${dialect}: ${want.length} rows of a rare outcome of one token in ${got.pages} pages; ` +
        `first page ${got.first.toFixed(1)} ms`,
    )
  })

  it('pages thousands of rows of an outcome and a source, every one once', async () => {
    const want = await expected('bob', { outcome: 'rate_limited', source: 'api' })
    expect(want.length).toBeGreaterThan(5000)
    const started = performance.now()
    const got = await everyPage(
      `/accounts/bob/verifications?${q({ ...range, outcome: 'rate_limited', source: 'api' })}`,
    )
    expect(got.ids.length).toBe(want.length)
    expect(new Set(got.ids).size).toBe(want.length)
    expect(got.ids).toEqual(want)
    console.log(
      `${dialect}: ${want.length} rows in ${got.pages} pages, ` +
        `${Math.round(performance.now() - started)} ms; first page ${got.first.toFixed(1)} ms`,
    )
  })

  it("answers an account's newest rows at once, and the CLI the same first rows", async () => {
    const started = performance.now()
    const newest = await admin(h.app, 'GET', `/accounts/alice/verifications?${q(range)}`)
    console.log(`${dialect}: first page, no filter: ${(performance.now() - started).toFixed(1)} ms`)
    expect(newest.body).toHaveLength(100)
    // alice's newest is the last even i, then every second one before it.
    const last = rows - 2
    expect(newest.body[0]).toMatchObject({
      id: `s${last}`,
      at: new Date(day + last * 259).toISOString(),
    })
    expect(newest.body[99].id).toBe(`s${last - 198}`)

    const token = tokenOf('bob', 2)
    const filters = { ...range, token, outcome: 'ip_not_allowed,rate_limited' }
    const api = await admin(h.app, 'GET', `/accounts/bob/verifications?${q(filters)}`)
    expect(api.body).toHaveLength(100)
    const flags = ['--token', token, '--outcome', 'ip_not_allowed,rate_limited']
    const times = ['--since', range.from, '--until', range.to]
    const printed = await cli(['verifications', 'bob', ...flags, ...times])
    expect(printed).toEqual({ code: 0, json: api.body })
  })
})
