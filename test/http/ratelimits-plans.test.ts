import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { call, type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'

/**
 * A plan's named rate limits (`plans.<name>.ratelimits` in the catalog, docs/configuration.md):
 * every account on the plan gets them, in place of the service's `requests` when one is named
 * so; an account's own limit of the same name replaces the plan's; a bad list stops start-up.
 */
let h: Harness
afterEach(() => h?.close())

/** The default catalog with `ratelimits` on the pro plan (YAML flow text). */
function catalogWithPlanLimits(limits: string): string {
  const source = readFileSync(path.join(import.meta.dirname, '../../catalog/default.yaml'), 'utf8')
  const example =
    '    # policy: { maxSkLifetimeDays: 90, pkAllowedUrls: true, idleDays: 365, rollGraceMaxHours: 24 }'
  const yaml = source.replace(example, `${example}\n    ratelimits: ${limits}`)
  if (yaml === source) throw new Error('the catalog no longer has the policy example')
  const file = path.join(tmpdir(), `tessera-ratelimits-${process.pid}-${Date.now()}.yaml`)
  writeFileSync(file, yaml)
  return file
}

async function harnessWith(limits: string) {
  const file = catalogWithPlanLimits(limits)
  try {
    return await harness({ ...adminEnv, SCOPES_FILE: file })
  } finally {
    rmSync(file)
  }
}

const burst = { name: 'burst', limit: 2, duration: 1000 }
const requests = { name: 'requests', limit: 10, duration: 60_000 }
const headersOf = (res: { headers: Record<string, unknown> }) => ({
  limit: res.headers['x-rate-limit-limit'],
  policy: res.headers['ratelimit-policy'],
  remaining: res.headers.ratelimit,
  retry: res.headers['retry-after'],
})

describe('a plan’s rate limits', () => {
  it('bind every account on the plan, and an account’s own of the same name replaces them', async () => {
    h = await harnessWith(
      '[{ name: burst, limit: 2, duration: 1000 }, { name: requests, limit: 10, duration: 60000 }]',
    )
    const carol = await h.ctx.accounts.create('carol', 'pro', [], cliActor)
    const view = await admin(h.app, 'GET', '/accounts/carol/ratelimits')
    // The plan's `requests` takes the service's place, first; then the plan's others.
    expect([view.status, view.body]).toEqual([
      200,
      { own: [], plan: [burst, requests], effective: [requests, burst] },
    ])
    // Alice's plan (standard) sets none: the service's `requests` (the harness's 100000).
    expect((await admin(h.app, 'GET', '/accounts/alice/ratelimits')).body).toEqual({
      own: [],
      plan: [],
      effective: [{ name: 'requests', limit: 100_000, duration: 60_000 }],
    })

    const retrieve = () => call(h.app, 'GET', '/tokens/v2', carol.defaultToken.token as string)
    const first = await retrieve()
    expect([first.status, headersOf(first)]).toEqual([
      200,
      { limit: '10', policy: '"burst";q=2;w=1', remaining: '"burst";r=1;t=1', retry: undefined },
    ])
    expect(first.headers['x-rate-limit-reset']).toBe(String((T0 + 60_000) / 1000))
    expect((await retrieve()).status).toBe(200)
    const refused = await retrieve()
    expect([refused.status, refused.body]).toEqual([429, { message: 'Too Many Requests' }])
    expect(headersOf(refused)).toEqual({
      limit: '10',
      policy: '"burst";q=2;w=1',
      remaining: '"burst";r=0;t=1',
      retry: '1',
    })

    // Carol's own burst of 4 replaces the plan's 2, from the next request, in the same second.
    const own = { name: 'burst', limit: 4, duration: 1000 }
    const set = await admin(h.app, 'PUT', '/accounts/carol/ratelimits', { limits: [own] })
    expect(set.body).toEqual({ own: [own], plan: [burst, requests], effective: [requests, own] })
    const third = await retrieve()
    expect([third.status, headersOf(third)]).toEqual([
      200,
      { limit: '10', policy: '"burst";q=4;w=1', remaining: '"burst";r=1;t=1', retry: undefined },
    ])
    expect((await retrieve()).status).toBe(200)
    const past = await retrieve()
    expect([past.status, headersOf(past).remaining]).toEqual([429, '"burst";r=0;t=1'])

    // A second on, the plan's `requests` of 10 a minute holds: 4 passed before in its window.
    h.clock.now += 1000
    for (let i = 0; i < 4; i++) expect((await retrieve()).status).toBe(200)
    h.clock.now += 1000
    for (let i = 0; i < 2; i++) expect((await retrieve()).status).toBe(200)
    const minute = await retrieve()
    expect([minute.status, headersOf(minute)]).toEqual([
      429,
      {
        limit: '10',
        policy: '"requests";q=10;w=60',
        remaining: '"requests";r=0;t=58',
        retry: '58',
      },
    ])
  })

  it('refuses a catalog whose list is not one at start-up, with one line naming the field', async () => {
    const cases: [string, string][] = [
      [
        '[{ name: burst, limit: 2, duration: 999 }]',
        'plans.pro.ratelimits[0].duration must be a whole number of milliseconds from 1000 to 86400000',
      ],
      [
        '[{ name: burst, limit: 2, duration: 1000 }, { name: burst, limit: 3, duration: 1000 }]',
        'plans.pro.ratelimits[1].name burst is given twice',
      ],
      [
        '[{ name: "a b", limit: 2, duration: 1000 }]',
        'plans.pro.ratelimits[0].name must match /^[a-z0-9][a-z0-9._-]{0,63}$/',
      ],
      ['{ name: burst }', 'plans.pro.ratelimits must be a list'],
    ]
    for (const [limits, line] of cases) {
      const file = catalogWithPlanLimits(limits)
      try {
        await expect(harness({ ...adminEnv, SCOPES_FILE: file })).rejects.toThrow(
          `${file}: ${line}`,
        )
      } finally {
        rmSync(file)
      }
    }
  })
})
