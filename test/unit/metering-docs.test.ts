import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { outcomes } from '../../src/usage/outcomes.js'

/**
 * docs/metering.md's table of outcomes says what the meter counts. `expired` is every token past
 * its end: a tk past `expires`, and a pk or sk past `expiresAt` (test/http/expires-at.test.ts
 * counts the latter `expired`, against the token itself).
 */

const page = readFileSync(path.resolve(import.meta.dirname, '../../docs/metering.md'), 'utf8')
const rows = new Map(
  [...page.matchAll(/^\| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => [m[1] as string, m[2] as string]),
)

describe("docs/metering.md's outcomes", () => {
  it('has a row for every outcome the meter counts, in its order', () => {
    expect([...rows.keys()].filter((name) => outcomes.includes(name as never))).toEqual([
      ...outcomes,
    ])
  })

  it('counts expired both a temporary token past expires and a pk or sk past expiresAt', () => {
    expect(rows.get('expired')).toBe(
      'A token past its end: a temporary token past its `expires`, or a pk or sk past its `expiresAt`.',
    )
  })
})
