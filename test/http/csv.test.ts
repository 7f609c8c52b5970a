import { parse } from 'csv-parse/sync'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { outcomeIndex, outcomes } from '../../src/usage/outcomes.js'
import { type Harness, harness, T0 } from '../helpers.js'
import { DashboardClient } from './dashboard-client.js'

/**
 * Every CSV Tessera writes (the Usage page's download) is RFC 4180: each record, the header
 * included, ends with CRLF, which `csv-parse` in strict mode reads back exactly.
 */

const password = 'correct horse battery staple'
const day = 86_400_000

let h: Harness
let owner: DashboardClient
beforeEach(async () => {
  h = await harness({}, { accountsCreated: T0 - 60 * day })
  owner = new DashboardClient(h.app)
  const link = await h.ctx.holders.invite('alice', cliActor)
  expect((await owner.post(`/account/setup/${link}`, { password, confirm: password })).status).toBe(
    303,
  )
  const website = await h.token('alice', ['styles:read'], { note: 'website' })
  h.ctx.usage.count('alice', website.id, outcomeIndex.valid, 12)
  h.ctx.usage.count('alice', website.id, outcomeIndex.expired, 3)
  await h.ctx.usage.flush()
})
afterEach(() => h.close())

/** RFC 4180 strictly: CRLF between records, every record as wide as the header, no quotes. */
const strict = (csv: string): string[][] =>
  parse(csv, {
    record_delimiter: '\r\n',
    relax_column_count: false,
    relax_quotes: false,
    skip_empty_lines: false,
  })

describe('the Usage CSV download', () => {
  it.each([
    ['24h', 24],
    ['30d', 30],
  ])('of %s ends every record with CRLF and parses strictly', async (period, rows) => {
    const csv = await owner.get(`/account/usage.csv?period=${period}`)
    expect(csv.status).toBe(200)
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8')
    const { body } = csv
    // The raw bytes: CRLF after each record, the last included, and no bare LF or CR.
    expect(body.endsWith('\r\n')).toBe(true)
    expect(body.replaceAll('\r\n', '')).not.toMatch(/[\r\n]/)
    expect(body.split('\r\n')).toHaveLength(rows + 2)

    const records = strict(body)
    expect(records).toHaveLength(rows + 1)
    expect(records[0]).toEqual(['start', ...outcomes])
    const last = records.at(-1) as string[]
    expect(last[1]).toBe('12')
    expect(last[1 + outcomeIndex.expired]).toBe('3')
    expect(records.slice(1).every((r) => r.length === outcomes.length + 1)).toBe(true)
    // Read with csv-parse's own detection of the record delimiter, it is the same.
    expect(parse(body)).toEqual(records)
  })
})
