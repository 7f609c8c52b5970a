import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { insertDepth } from '../../src/db/creates.js'
import { createDatabase, isUnavailable } from '../../src/db/database.js'
import { PipelinedStatement } from '../../src/db/pipeline.js'
import { randomAlnum } from '../../src/ids.js'
import { type TcpProxy, tcpProxy } from './tcp-proxy.js'

// The pipelined statement against a real PostgreSQL: runs sent before the last is answered,
// each its own transaction, failures alone, a lost connection failing what was out.
const url = process.env.TEST_DATABASE_URL
if (!url) throw new Error('the pipeline tests need TEST_DATABASE_URL')
const schema = `tessera_pipe_${randomAlnum(10)}`
const options = `-c search_path=${schema}`
const insert = 'insert into t (id, v) values ($1::int, $2)'
let admin: pg.Client
let proxy: TcpProxy

beforeAll(async () => {
  admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`create schema ${schema}`)
  await admin.query(`create table ${schema}.t (id int primary key, v text not null)`)
  proxy = await tcpProxy(Number(new URL(url).port || 5432))
})
afterAll(async () => {
  await proxy.close()
  await admin.query(`drop schema if exists ${schema} cascade`)
  await admin.end()
})

const rows = async (from: number, to: number) =>
  (
    await admin.query(`select id, v from ${schema}.t where id between $1 and $2 order by id`, [
      from,
      to,
    ])
  ).rows

const statement = (name: string, text = insert, timeoutMs?: number) =>
  new PipelinedStatement(
    { connectionString: url, options, application_name: name },
    'tessera_p0',
    text,
    timeoutMs,
  )

describe('a pipelined statement', () => {
  it('sends every run at once and settles each when PostgreSQL has committed it, in order', async () => {
    const s = statement('pipe-order')
    await s.run(['0', 'warm'])
    const settled: number[] = []
    const runs = Array.from({ length: 200 }, (_, i) =>
      s.run([String(i + 1), `v${i + 1}`]).then(() => settled.push(i + 1)),
    )
    // All 200 are written before the first answer can be read.
    expect(settled).toEqual([])
    await Promise.all(runs)
    expect(settled).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    const stored = await rows(1, 200)
    expect(stored).toHaveLength(200)
    expect(stored[199]).toEqual({ id: 200, v: 'v200' })
    await s.end()
  })

  it('fails a run alone: the runs before and after it are committed', async () => {
    const s = statement('pipe-alone')
    const results = await Promise.allSettled([
      s.run(['1001', 'a']),
      s.run(['1001', 'again']),
      s.run(['1002', 'b']),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const reason = (results[1] as PromiseRejectedResult).reason
    expect(reason.code).toBe('23505')
    expect(isUnavailable(reason)).toBe(false)
    expect(await rows(1001, 1002)).toEqual([
      { id: 1001, v: 'a' },
      { id: 1002, v: 'b' },
    ])
    await s.end()
  })

  it('keeps its statement prepared when the first run on a connection fails after its Parse', async () => {
    const s = statement('pipe-first-fails')
    await admin.query(`insert into ${schema}.t (id, v) values (5001, 'taken')`)
    // The first run carries the Parse, which succeeds; its Execute fails (the id is taken).
    const results = await Promise.allSettled([
      s.run(['5001', 'again']),
      s.run(['5002', 'b']),
      s.run(['5003', 'c']),
    ])
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled'])
    await s.run(['5004', 'd'])
    expect((await rows(5001, 5004)).map((r) => r.v)).toEqual(['taken', 'b', 'c', 'd'])
    await s.end()
  })

  it('prepares again after its preparation failed', async () => {
    const s = statement('pipe-parse', `insert into later (id) values ($1::int)`)
    await expect(s.run(['1'])).rejects.toMatchObject({ code: '42P01' })
    await admin.query(`create table ${schema}.later (id int primary key)`)
    await s.run(['1'])
    const { rows: stored } = await admin.query(`select id from ${schema}.later`)
    expect(stored).toEqual([{ id: 1 }])
    await s.end()
  })

  it('fails the runs out when its connection is ended, and opens a new one for the next', async () => {
    const s = statement('pipe-terminated')
    await s.run(['2001', 'before'])
    const out = Array.from({ length: 20 }, (_, i) =>
      s.run([String(2100 + i), 'maybe']).catch((err: unknown) => err),
    )
    await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'pipe-terminated'`,
    )
    const outcomes = await Promise.all(out)
    // The connection's end seen (with no run out, only its close tells).
    for (let i = 0; i < 200 && s.connected; i++) await new Promise((r) => setTimeout(r, 10))
    expect(s.connected).toBe(false)
    // Those answered before the end are committed; the others failed as the database being away.
    const failed = outcomes.filter((o) => o !== undefined)
    for (const err of failed) expect(isUnavailable(err)).toBe(true)
    expect(await rows(2100, 2119)).toHaveLength(20 - failed.length)
    await s.run(['2002', 'after'])
    expect(await rows(2002, 2002)).toEqual([{ id: 2002, v: 'after' }])
    await s.end()
  })

  it('fails a run out longer than its timeout as the database being away', async () => {
    const s = statement('pipe-slow', 'select pg_sleep($1::float8)', 1000)
    await s.run(['0'])
    const started = Date.now()
    const err = await s.run(['1.7']).catch((e: unknown) => e)
    expect(isUnavailable(err)).toBe(true)
    expect((err as Error).message).toBe('Query read timeout')
    const failedAt = Date.now() - started
    expect(failedAt).toBeGreaterThanOrEqual(1000)
    expect(failedAt).toBeLessThan(2000)
    // The next run, on a new connection, is settled by its own answer: not by the old
    // connection's, which PostgreSQL sends when its sleep ends.
    const next = Date.now()
    await s.run(['0.85'])
    expect(Date.now() - next).toBeGreaterThanOrEqual(800)
    await s.end()
  })

  it('fails runs while the database is away, and serves again once it is back', async () => {
    const s = new PipelinedStatement(
      { connectionString: url?.replace(/:\d+\//, `:${proxy.port}/`), options },
      'tessera_p0',
      insert,
    )
    await s.run(['3001', 'before'])
    await proxy.cut()
    const lost = await s.run(['3002', 'lost']).catch((e: unknown) => e)
    expect(isUnavailable(lost)).toBe(true)
    const refused = await s.run(['3003', 'refused']).catch((e: unknown) => e)
    expect(isUnavailable(refused)).toBe(true)
    await proxy.restore()
    await s.run(['3004', 'after'])
    expect(await rows(3001, 3004)).toEqual([
      { id: 3001, v: 'before' },
      { id: 3004, v: 'after' },
    ])
    await s.end()
  })

  it('ends once the runs out are answered, and refuses runs after that', async () => {
    const s = statement('pipe-end')
    await s.run(['4000', 'open'])
    const out = Array.from({ length: 50 }, (_, i) => s.run([String(4001 + i), 'x']))
    // Twice while runs are out: both settle once they are answered.
    await Promise.all([s.end(), s.end(), ...out])
    expect(await rows(4001, 4050)).toHaveLength(50)
    await expect(s.run(['4051', 'late'])).rejects.toThrow('Connection terminated')
    const { rows: left } = await admin.query(
      `select count(*)::int as n from pg_stat_activity where application_name = 'pipe-end'`,
    )
    expect(left).toEqual([{ n: 0 }])
  })

  it('is one of the pool size: with a pool of one, creates take turns on that connection', async () => {
    for (const [poolSize, depth] of [
      [1, 1],
      [2, 2],
    ] as const) {
      const db = createDatabase({ kind: 'postgres', url: url as string, poolSize, schema })
      expect(insertDepth(db)).toBe(depth)
      await db.destroy()
    }
  })
})
