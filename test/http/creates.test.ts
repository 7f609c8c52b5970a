import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { auditEvent, cliActor } from '../../src/audit/events.js'
import { toOutboxRow, toRow } from '../../src/db/audit.js'
import { createsStatement, insertDepth, insertWithEvents } from '../../src/db/creates.js'
import { fromToken, type TokenRecord } from '../../src/db/repositories.js'
import { tokenView } from '../../src/db/token-document.js'
import { dialect } from '../dialect.js'
import { all, type Harness, harness } from '../helpers.js'

let h: Harness
beforeAll(async () => {
  h = await harness()
})
afterAll(async () => {
  await h.close()
})

const outbox = () =>
  h.ctx.db.selectFrom('event_outbox').select(['seq', 'event_id', 'action']).orderBy('seq').execute()

describe('creates: the token, its audit event and its outbox row together', () => {
  it('are pipelined on PostgreSQL, two groups out at most, and one group at a time on SQLite', async () => {
    expect(insertDepth(h.ctx.db)).toBe(dialect === 'postgres' ? 2 : 1)
    const statement = createsStatement(h.ctx.db)
    expect(statement === undefined).toBe(dialect === 'sqlite')
    if (statement === undefined) return
    const account = await h.ctx.accounts.find('alice')
    if (account === undefined) throw new Error('no alice')
    const create = () =>
      h.ctx.tokens.create(account, h.ctx.accounts.holder(account), { scopes: [] }, cliActor)
    await create() // its connection open
    const run = vi.spyOn(statement, 'run')
    try {
      await Promise.all([create(), create()])
      // Two creates of one turn: one group, one run of the pipelined statement.
      expect(run).toHaveBeenCalledTimes(1)
      expect(JSON.parse(run.mock.calls[0]?.[0][0] as string)).toHaveLength(2)
    } finally {
      run.mockRestore()
    }
  })

  it('writes 20 concurrent creates with their events, the outbox in the order of the events', async () => {
    const before = (await outbox()).length
    const views = await Promise.all(
      Array.from({ length: 20 }, (_, i) => h.token('alice', ['styles:read'], { note: `n${i}` })),
    )
    const ids = views.map((v) => v.id)
    const stored = await h.ctx.db.selectFrom('tokens').select('id').where('id', 'in', ids).execute()
    expect(stored).toHaveLength(20)
    const events = await h.ctx.db
      .selectFrom('audit_events')
      .select(['id', 'target_id'])
      .where('action', '=', 'token.created')
      .where('target_id', 'in', ids)
      .orderBy('id')
      .execute()
    expect(events.map((e) => e.target_id).sort()).toEqual([...ids].sort())
    const rows = (await outbox()).slice(before)
    expect(rows.map((r) => r.event_id)).toEqual(events.map((e) => e.id))
    expect(new Set(rows.map((r) => r.action))).toEqual(new Set(['token.created']))
  })

  it('writes all or nothing: a token whose id is taken fails the whole write', async () => {
    const account = await h.ctx.accounts.find('alice')
    if (account === undefined) throw new Error('no alice')
    const taken = await h.token('alice', all)
    const fresh = h.ctx.tokens.newRecord(account, { note: 'a', scopes: [], allowedUrls: null })
    const clash = { ...fresh, id: taken.id, note: 'b' }
    const event = (id: string) =>
      auditEvent(Date.now(), 'token.created', cliActor, { type: 'token', id }, 'alice')
    const outboxBefore = (await outbox()).length
    const auditBefore = await h.ctx.db
      .selectFrom('audit_events')
      .select((e) => e.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    await expect(
      insertWithEvents(h.ctx.db, [fresh, clash], [event(fresh.id), event(clash.id)]),
    ).rejects.toThrow(/unique|UNIQUE/)
    const freshRow = await h.ctx.db
      .selectFrom('tokens')
      .select('id')
      .where('id', '=', fresh.id)
      .execute()
    expect(freshRow).toEqual([])
    const auditAfter = await h.ctx.db
      .selectFrom('audit_events')
      .select((e) => e.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    expect(Number(auditAfter.n)).toBe(Number(auditBefore.n))
    expect((await outbox()).length).toBe(outboxBefore)
  })

  it.each([
    ['quotes, non-BMP and line separators', 'a "quoted" \u2028 \u00e9 \u{1f600} {"x":[1]} \\ \\\\'],
    ['a backslash-u of its own', 'a "quoted" \\ back\\slash, \\u0000 as text, \u{1f600}'],
    ['a NUL, a control character and a lone surrogate', 'a \u0000 b \u0001 c \ud800 d "e"'],
  ])('stores every column as given: %s', async (_, note) => {
    const account = await h.ctx.accounts.find('bob')
    if (account === undefined) throw new Error('no bob')
    const record = h.ctx.tokens.newRecord(account, {
      note,
      scopes: ['styles:read'],
      allowedUrls: null,
    })
    const event = auditEvent(
      Date.parse('2026-11-24T10:00:00.000Z'),
      'token.created',
      { type: 'token', usage: 'sk', id: 'cactor', address: '::1', requestId: 'req-"1"' },
      { type: 'token', id: record.id },
      'bob',
      { note, n: 1 },
    )
    await insertWithEvents(h.ctx.db, [record], [event])
    // Documents already written (as creates pass them), in one group with a plain note's.
    const fresh = (n: string) =>
      h.ctx.tokens.newRecord(account, { note: n, scopes: ['styles:read'], allowedUrls: null })
    const written = [fresh('plain'), fresh(note), fresh('plain too')]
    const documents = written.map((r) => JSON.stringify(tokenView(r)))
    await insertWithEvents(h.ctx.db, written, [], documents)
    const stored = async (r: TokenRecord) => {
      const token = await h.ctx.db
        .selectFrom('tokens')
        .select([
          'id',
          'username',
          'usage',
          'is_default',
          'scopeless',
          'key_id',
          'created',
          'modified',
          'document',
        ])
        .where('id', '=', r.id)
        .executeTakeFirstOrThrow()
      return { ...token, is_default: Number(token.is_default), scopeless: Number(token.scopeless) }
    }
    for (const r of [record, ...written]) expect(await stored(r)).toEqual(fromToken(r))
    expect(JSON.parse((await stored(record)).document).note).toBe(note)
    expect(JSON.parse((await stored(written[1] as TokenRecord)).document).note).toBe(note)
    const audit = await h.ctx.db
      .selectFrom('audit_events')
      .selectAll()
      .where('id', '=', event.id)
      .executeTakeFirstOrThrow()
    expect(audit).toEqual(toRow(event))
    const row = await h.ctx.db
      .selectFrom('event_outbox')
      .select(['event_id', 'at', 'action', 'username', 'body'])
      .where('event_id', '=', event.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual(toOutboxRow(event))
    expect(JSON.parse(row.body)).toEqual(event)
  })

  it('is one statement on PostgreSQL (one round trip), one transaction of runs on SQLite', async () => {
    let statements = 0
    const db = h.ctx.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        statements++
        return args.result
      },
    })
    const account = await h.ctx.accounts.find('bob')
    if (account === undefined) throw new Error('no bob')
    const counts = []
    for (const count of [1, 7]) {
      statements = 0
      const records = Array.from({ length: count }, () =>
        h.ctx.tokens.newRecord(account, { note: '', scopes: [], allowedUrls: null }),
      )
      const events = records.map((r) =>
        auditEvent(Date.now(), 'token.created', cliActor, { type: 'token', id: r.id }, 'bob'),
      )
      await insertWithEvents(db, records, events)
      counts.push(statements)
      const stored = await h.ctx.db
        .selectFrom('tokens')
        .select('id')
        .where(
          'id',
          'in',
          records.map((r) => r.id),
        )
        .execute()
      expect(stored).toHaveLength(count)
    }
    // SQLite: tokens, audit events and outbox rows, each in runs of 4 + 2 + 1 for 7.
    expect(counts).toEqual(dialect === 'postgres' ? [1, 1] : [3, 9])
  })

  it('indexes only rolled tokens by their end (a create adds no entry), and the sweep uses it', async () => {
    const retired = h.ctx.db
      .selectFrom('tokens')
      .select(['id', 'username'])
      .where('retires', '<=', '2026-11-22T12:00:00.000Z')
      .limit(100)
      .compile()
    if (dialect === 'postgres') {
      const { rows } = await sql<{ indexdef: string }>`select indexdef from pg_indexes
        where schemaname = current_schema() and indexname = 'tokens_retiring'`.execute(h.ctx.db)
      expect(rows.map((r) => r.indexdef.replace(/^.* USING /, ''))).toEqual([
        'btree (retires) WHERE (retires IS NOT NULL)',
      ])
      // A plan with sequential scans off shows whether the planner can use the index at all.
      const plan = await h.ctx.db.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx)
        return trx.executeQuery({ ...retired, sql: `explain ${retired.sql}` })
      })
      expect(JSON.stringify(plan.rows)).toContain('tokens_retiring')
    } else {
      const { rows } = await sql<{ sql: string }>`select sql from sqlite_master
        where name = 'tokens_retiring'`.execute(h.ctx.db)
      expect(rows.map((r) => r.sql)).toEqual([
        'CREATE INDEX "tokens_retiring" on "tokens" ("retires") where "retires" is not null',
      ])
      const plan = await h.ctx.db.executeQuery({
        ...retired,
        sql: `explain query plan ${retired.sql}`,
      })
      expect(JSON.stringify(plan.rows)).toContain('USING INDEX tokens_retiring')
    }
  })
})
