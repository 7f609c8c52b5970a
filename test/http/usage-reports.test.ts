import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Harness, harness, T0 } from '../helpers.js'
import { admin, adminEnv } from './admin-client.js'
import { usageRows } from './usage-helpers.js'

/** POST /admin/v1/usage/reports: a verifier's counts, counted once per (reporter, batch). */

let h: Harness
beforeEach(async () => {
  h = await harness(adminEnv)
})
afterEach(() => h.close())

const report = (batch: string, counts: object[], extra: object = {}) =>
  admin(h.app, 'POST', '/usage/reports', { reporter: 'edge-1', batch, counts, ...extra })

const everything = async () => ({
  minutes: await usageRows(h.ctx.db, 'usage_minutes'),
  hours: await usageRows(h.ctx.db, 'usage_hours'),
  days: await usageRows(h.ctx.db, 'usage_days'),
  reports: (await h.ctx.db.selectFrom('usage_reports').selectAll().execute()).length,
})

describe('verifier reports', () => {
  it('adds a batch once: the same batch again answers counted false and changes nothing', async () => {
    const a = h.alice.defaultToken.id
    const counts = [
      { minute: '2026-11-22T11:58:00.000Z', account: 'alice', token: a, outcomes: { valid: 3 } },
      // Within the minute: counted in the minute it falls in; the same row twice adds up.
      {
        minute: '2026-11-22T11:58:30Z',
        account: 'alice',
        token: a,
        outcomes: { valid: 1, scope_missing: 2 },
      },
      { minute: '2026-11-22T12:01:00Z', account: 'alice', token: '', outcomes: { expired: 4 } },
      {
        minute: '2026-11-22T12:01:00Z',
        account: '',
        token: '',
        outcomes: { malformed: 6, invalid: 0 },
      },
    ]
    expect(await report('b-1', counts)).toMatchObject({ status: 200, body: { counted: true } })
    const once = {
      minutes: {
        '/ 2026-11-22T12:01': { malformed: 6 },
        'alice/ 2026-11-22T12:01': { expired: 4 },
        [`alice/${a} 2026-11-22T11:58`]: { valid: 4, scope_missing: 2 },
      },
      hours: {
        '/ 2026-11-22T12': { malformed: 6 },
        'alice/ 2026-11-22T12': { expired: 4 },
        [`alice/${a} 2026-11-22T11`]: { valid: 4, scope_missing: 2 },
      },
      days: {
        '/ 2026-11-22': { malformed: 6 },
        'alice/ 2026-11-22': { expired: 4 },
        [`alice/${a} 2026-11-22`]: { valid: 4, scope_missing: 2 },
      },
      reports: 1,
    }
    expect(await everything()).toEqual(once)
    expect(await report('b-1', counts)).toMatchObject({ status: 200, body: { counted: false } })
    expect(await everything()).toEqual(once)
    // A verifier's valid counts are uses.
    expect([...(await h.ctx.usage.lastUsed([a]))]).toEqual([[a, '2026-11-22T11:58:00.000Z']])
    // Another reporter's batch of the same name is its own; an empty batch is counted too.
    const other = await admin(h.app, 'POST', '/usage/reports', {
      reporter: 'edge-2',
      batch: 'b-1',
      counts: [],
    })
    expect(other.body).toEqual({ counted: true })
    expect((await everything()).reports).toBe(2)
  })

  it('refuses a malformed batch with 422 and counts nothing of it', async () => {
    const row = {
      minute: '2026-11-22T12:00:00Z',
      account: 'alice',
      token: '',
      outcomes: { valid: 1 },
    }
    const bad: [string, object][] = [
      ['a reporter with a space', { reporter: 'edge 1', batch: 'b', counts: [row] }],
      ['no batch', { reporter: 'edge-1', counts: [row] }],
      ['a batch of 65 characters', { reporter: 'edge-1', batch: 'b'.repeat(65), counts: [row] }],
      [
        'a negative count',
        { reporter: 'e', batch: 'b', counts: [{ ...row, outcomes: { valid: -1 } }] },
      ],
      ['a fraction', { reporter: 'e', batch: 'b', counts: [{ ...row, outcomes: { valid: 1.5 } }] }],
      [
        'an unknown outcome',
        { reporter: 'e', batch: 'b', counts: [{ ...row, outcomes: { nice: 1 } }] },
      ],
      ['a bad account', { reporter: 'e', batch: 'b', counts: [{ ...row, account: 'Alice' }] }],
      ['a bad token', { reporter: 'e', batch: 'b', counts: [{ ...row, token: 'c1' }] }],
      ['a bad minute', { reporter: 'e', batch: 'b', counts: [row, { ...row, minute: 'noon' }] }],
      [
        'a minute more than 5 minutes ahead',
        { reporter: 'e', batch: 'b', counts: [row, { ...row, minute: '2026-11-22T12:05:01Z' }] },
      ],
      ['10,001 rows', { reporter: 'e', batch: 'b', counts: new Array(10_001).fill(row) }],
      [
        'a lease without an amount',
        { reporter: 'e', batch: 'b', counts: [row], returned: [{ account: 'alice', lease: 'x' }] },
      ],
    ]
    for (const [what, body] of bad) {
      const res = await admin(h.app, 'POST', '/usage/reports', body)
      expect([what, res.status, res.body.message]).toEqual([what, 422, 'resources are invalid'])
    }
    expect(await everything()).toEqual({ minutes: {}, hours: {}, days: {}, reports: 0 })
    // Refused, the batch was not taken: sent right, it counts.
    const good = await admin(h.app, 'POST', '/usage/reports', {
      reporter: 'e',
      batch: 'b',
      counts: [row],
    })
    expect(good.body).toEqual({ counted: true })
    // 5 minutes ahead is still taken; 10,000 rows are.
    h.clock.now = T0
    const edge = { ...row, minute: '2026-11-22T12:05:00Z' }
    const full = await report('full', new Array(10_000).fill(edge))
    expect(full.body).toEqual({ counted: true })
    expect((await everything()).minutes).toEqual({
      'alice/ 2026-11-22T12:00': { valid: 1 },
      'alice/ 2026-11-22T12:05': { valid: 10_000 },
    })
  })

  it('answers 401 without an operator key', async () => {
    const res = await admin(
      h.app,
      'POST',
      '/usage/reports',
      { reporter: 'e', batch: 'b', counts: [] },
      null,
    )
    expect(res.status).toBe(401)
  })
})
