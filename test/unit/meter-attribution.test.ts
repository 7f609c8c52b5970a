import { describe, expect, it } from 'vitest'
import { outcomeColumns } from '../../src/db/usage.js'
import type { ParsedToken } from '../../src/tokens/codec.js'
import type { Validation } from '../../src/tokens/validator.js'
import { keyOf, splitKey } from '../../src/usage/attribution.js'
import { bucketRange, countsOf, outcomesOf } from '../../src/usage/buckets.js'
import { outcomes } from '../../src/usage/outcomes.js'

const id = 'c0123456789abcdefghijklmn'
const pk = (u: unknown, a: unknown) =>
  ({ usage: 'pk', payload: { u, a }, signed: '', signature: '' }) as ParsedToken
const tk = {
  usage: 'tk',
  payload: { u: 'acme', exp: 1, iat: 0, scopes: [], client: 'api' },
  signed: '',
  signature: '',
} as ParsedToken

describe('attribution', () => {
  const account = { username: 'acme', plan: 'free', features: [], created: '', disabled: false }
  it('counts a validation against whom it names, and refusals that prove nothing against nobody', () => {
    const cases: [Validation, string][] = [
      [{ code: 'TokenMalformed' }, ' '],
      [{ code: 'TokenInvalid', parsed: pk('acme', id) }, ' '],
      [{ code: 'TokenRevoked', parsed: pk('acme', id) }, `acme ${id}`],
      [{ code: 'TokenRevoked', parsed: pk('acme', 'not-an-id') }, 'acme '],
      [{ code: 'TokenRevoked', parsed: pk('Not A Name', id) }, ' '],
      [{ code: 'TokenExpired', parsed: tk }, 'acme '],
      // Made in a former account of the name (or none has it now): nobody's.
      [{ code: 'TokenRevoked', parsed: pk('acme', id), unowned: true }, ' '],
      [{ code: 'TokenExpired', parsed: tk, unowned: true }, ' '],
      [
        {
          code: 'TokenValid',
          parsed: pk('acme', id),
          principal: { usage: 'pk', username: 'acme', scopes: new Set(), tokenId: id },
          account,
        },
        `acme ${id}`,
      ],
      [
        {
          code: 'TokenValid',
          parsed: pk('acme', id),
          principal: {
            usage: 'pk',
            username: 'acme',
            scopes: new Set(),
            meterKey: 'kept as built',
          },
          account,
        },
        'kept as built',
      ],
    ]
    for (const [validation, key] of cases)
      expect([validation.code, keyOf(validation)]).toEqual([validation.code, key])
    expect(splitKey(`acme ${id}`)).toEqual({ account: 'acme', tokenId: id })
    expect(splitKey(' ')).toEqual({ account: '', tokenId: '' })
  })

  it('names the columns of the usage tables as the outcomes, in the same order', () => {
    expect([...outcomeColumns]).toEqual([...outcomes])
    expect(countsOf({ revoked: 2, valid: 1 })).toEqual([1, 0, 0, 0, 2, 0, 0, 0, 0, 0])
    expect(outcomesOf([1, 0, 0, 0, 2, 0, 0, 0, 0, 3])).toEqual({
      valid: 1,
      revoked: 2,
      credits_exhausted: 3,
    })
  })

  it('takes the buckets that overlap [from, to)', () => {
    const t = (iso: string) => Date.parse(iso)
    expect(
      bucketRange('hour', { from: t('2026-11-22T12:30:00Z'), to: t('2026-11-22T14:00:00Z') }),
    ).toEqual({
      fromAt: '2026-11-22T12',
      toAt: '2026-11-22T14',
    })
    expect(
      bucketRange('hour', { from: t('2026-11-22T12:00:00Z'), to: t('2026-11-22T14:00:00.001Z') }),
    ).toEqual({
      fromAt: '2026-11-22T12',
      toAt: '2026-11-22T15',
    })
    expect(
      bucketRange('day', { from: t('2026-11-22T12:00:00Z'), to: t('2026-11-23T00:00:00Z') }),
    ).toEqual({
      fromAt: '2026-11-22',
      toAt: '2026-11-23',
    })
    expect(
      bucketRange('minute', { from: t('2026-11-22T12:00:59Z'), to: t('2026-11-22T12:01:01Z') }),
    ).toEqual({
      fromAt: '2026-11-22T12:00',
      toAt: '2026-11-22T12:02',
    })
  })
})
