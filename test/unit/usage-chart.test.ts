import { describe, expect, it } from 'vitest'
import { stacks, usageChart } from '../../src/dashboard/views/chart.js'
import { csvName, fill, periodOf, usageCsv } from '../../src/dashboard/views/periods.js'

/** The periods of the Usage page, the stacked bars and the CSV: pure functions of their data. */

const now = Date.parse('2026-11-22T13:30:00.000Z')

describe('the periods of the usage charts', () => {
  it('ends with the bucket now is in: 24 hours, or 30 days', () => {
    const hours = periodOf('24h', now)
    expect(hours).toMatchObject({
      resolution: 'hour',
      label: 'last 24 hours',
      from: '2026-11-21T14:00:00.000Z',
      to: '2026-11-22T14:00:00.000Z',
    })
    expect(hours.starts).toHaveLength(24)
    const days = periodOf('30d', now)
    expect(days).toMatchObject({
      resolution: 'day',
      from: '2026-10-24T00:00:00.000Z',
      to: '2026-11-23T00:00:00.000Z',
    })
    expect(days.starts.at(-1)).toBe(Date.parse('2026-11-22T00:00:00.000Z'))
    expect(csvName('acme', hours)).toBe('usage-acme-2026-11-21T1400Z.csv')
    expect(csvName('acme', days)).toBe('usage-acme-2026-10-24.csv')
  })

  it('fills every bucket, zeros where the series has none, and writes them all to the CSV', () => {
    const period = periodOf('24h', now)
    const buckets = fill(period, [
      { start: '2026-11-22T13:00:00.000Z', outcomes: { valid: 2, credits_exhausted: 1 } },
      // Outside the period: left out.
      { start: '2026-11-20T13:00:00.000Z', outcomes: { valid: 9 } },
    ])
    expect(buckets).toHaveLength(24)
    expect(buckets.at(-1)).toEqual({
      start: now - 30 * 60_000,
      counts: [2, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    })
    const lines = usageCsv(buckets).split('\r\n')
    expect(lines[0]).toBe(
      'start,valid,malformed,invalid,expired,revoked,rate_limited,url_not_allowed,ip_not_allowed,scope_missing,credits_exhausted',
    )
    expect(lines[1]).toBe('2026-11-21T14:00:00.000Z,0,0,0,0,0,0,0,0,0,0')
    expect(lines[24]).toBe('2026-11-22T13:00:00.000Z,2,0,0,0,0,0,0,0,0,1')
    expect(lines[25]).toBe('')
  })
})

describe('the stacked bars', () => {
  const period = periodOf('24h', now)
  const at = (i: number, counts: number[]) => ({ start: period.starts[i] as number, counts })
  const zero = (i: number) => at(i, new Array(10).fill(0))

  it('stacks the outcomes of a bucket from the bottom, the peak filling the chart', () => {
    const buckets = period.starts.map((_, i) => zero(i))
    buckets[0] = at(0, [600, 0, 0, 0, 200, 0, 0, 0, 0, 0])
    buckets[1] = at(1, [100, 0, 0, 50, 0, 0, 0, 0, 0, 0])
    const chart = stacks(period, buckets)
    expect(chart.peak).toBe(800)
    expect(chart.bars[0]?.pieces).toEqual([
      { outcome: 'valid', count: 600, y: 25, height: 75 },
      { outcome: 'revoked', count: 200, y: 0, height: 25 },
    ])
    expect(chart.bars[1]?.pieces).toEqual([
      { outcome: 'valid', count: 100, y: 87.5, height: 12.5 },
      { outcome: 'expired', count: 50, y: 81.25, height: 6.25 },
    ])
    expect(chart.bars[1]?.x).toBe(11)
    expect(chart.bars[1]?.title).toBe('2026-11-21 15:00 UTC: 100 valid, 50 expired')
    expect(chart.bars[2]?.pieces).toEqual([])
  })

  it('keeps a few refusals visible beside a peak, within the chart', () => {
    const buckets = [at(0, [9_999, 0, 0, 0, 1, 1, 0, 0, 0, 0])]
    const pieces = stacks({ ...period, starts: [period.starts[0] as number] }, buckets).bars[0]
      ?.pieces
    expect(pieces).toEqual([
      { outcome: 'valid', count: 9_999, y: 2, height: 98 },
      { outcome: 'revoked', count: 1, y: 1, height: 1 },
      { outcome: 'rate_limited', count: 1, y: 0, height: 1 },
    ])
  })

  it('says so in words when there is nothing to chart, and draws no SVG', () => {
    const page = usageChart(
      period,
      period.starts.map((_, i) => zero(i)),
    ).text
    expect(page).toContain('<strong>0</strong> verifications in the last 24 hours.</p>')
    expect(page).not.toContain('<svg')
  })
})
