import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cliActor } from '../../src/audit/events.js'
import { main } from '../../src/cli/main.js'
import { toConfig } from '../../src/config.js'
import { createContext } from '../../src/context.js'
import { type StoredVerification, verificationsRepo } from '../../src/db/verifications.js'
import { tesseraVariables } from '../environment.js'

/**
 * `tessera verifications ...`, run in process (the same `main` as bin/tessera.js) on a fresh
 * DATA_DIR whose log the test writes first; the command's clock is the real one.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-verifications-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const minute = 60_000
const hour = 60 * minute
/** A whole minute well before the command runs: every row is within the last few hours. */
const now = Date.now()
const base = now - (now % minute) - 3 * hour
const token = 'cacme00000000000000000000'
const iso = (ms: number) => new Date(ms).toISOString()

const row = (at: number, id: string, fields: Partial<StoredVerification> = {}) => ({
  at,
  id,
  account: 'acme',
  tokenId: token,
  source: 'retrieve',
  outcome: 'valid',
  limit: null,
  ip: null,
  origin: null,
  requestId: null,
  durationUs: null,
  ...fields,
})

beforeAll(async () => {
  // The account made a day before the rows, by a context of the same data.
  const ctx = await createContext(toConfig({ DATA_DIR: dir }), { now: () => base - 24 * hour })
  try {
    await ctx.accounts.create('acme', undefined, [], cliActor)
    await verificationsRepo.insert(ctx.db, [
      row(base, 'r1', { ip: '203.0.113.9', durationUs: 80 }),
      row(base + hour, 'r2', { source: 'api', outcome: 'rate_limited', limit: 'requests' }),
      row(base + 2 * hour, 'r3', { tokenId: '', outcome: 'malformed' }),
      row(base + 2 * hour + minute, 'r4', { account: 'other' }),
    ])
    await verificationsRepo.addDrops(ctx.db, base + hour, 'somewhere', 3)
  } finally {
    await ctx.close()
  }
})

async function tessera(args: string[]) {
  const out: string[] = []
  const err: string[] = []
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk))
    return true
  })
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err.push(String(chunk))
    return true
  })
  for (const name of tesseraVariables) vi.stubEnv(name, undefined)
  vi.stubEnv('DATA_DIR', dir)
  try {
    const code = await main(args)
    const text = out.join('')
    return { code, json: text === '' ? undefined : JSON.parse(text), stderr: err.join('') }
  } finally {
    stdout.mockRestore()
    stderr.mockRestore()
    vi.unstubAllEnvs()
  }
}

const r1 = {
  id: 'r1',
  at: iso(base),
  token,
  source: 'retrieve',
  outcome: 'valid',
  ip: '203.0.113.9',
  duration_us: 80,
  reason: 'Valid',
}
const r2 = {
  id: 'r2',
  at: iso(base + hour),
  token,
  source: 'api',
  outcome: 'rate_limited',
  limit: 'requests',
  reason: 'Refused by the rate limit "requests"',
}
const r3 = {
  id: 'r3',
  at: iso(base + 2 * hour),
  token: null,
  source: 'retrieve',
  outcome: 'malformed',
  reason: 'Not a token string (not a pk, sk or tk token)',
}
const warning = (from: number, to: number) =>
  `tessera: warning: 3 rows of the verification log (of every account) were dropped unwritten ` +
  `between ${iso(from)} and ${iso(to)}: this list may lack some\n`

describe('tessera verifications', () => {
  it("prints the account's rows of the last 24 hours, newest first, as the API's", async () => {
    const res = await tessera(['verifications', 'acme'])
    expect([res.code, res.json]).toEqual([0, [r3, r2, r1]])
    // The range ends now: the warning names it.
    expect(res.stderr).toMatch(/^tessera: warning: 3 rows of the verification log .* lack some\n$/)
  })

  it('filters by token, outcomes and sources, and takes --since, --until and --limit', async () => {
    const json = async (...args: string[]) => {
      const res = await tessera(['verifications', 'acme', ...args])
      expect([args, res.code]).toEqual([args, 0])
      return res.json
    }
    expect(await json('--token', token)).toEqual([r2, r1])
    expect(await json('--outcome', 'malformed,rate_limited')).toEqual([r3, r2])
    expect(await json('--source', 'api')).toEqual([r2])
    expect(await json('--limit', '1')).toEqual([r3])
    // --since inclusive, --until exclusive.
    expect(await json('--since', iso(base + hour), '--until', iso(base + 2 * hour))).toEqual([r2])
    // A duration back from now: the last rows are more than an hour old.
    expect(await json('--since', '5m')).toEqual([])
    expect(await json('--since', '4h')).toEqual([r3, r2, r1])
  })

  it('warns on stderr when rows were dropped in the range, and only then', async () => {
    const dropped = await tessera([
      'verifications',
      'acme',
      '--since',
      iso(base),
      '--until',
      iso(base + hour + 1),
    ])
    expect(dropped).toEqual({ code: 0, json: [r2, r1], stderr: warning(base, base + hour + 1) })
    const none = await tessera([
      'verifications',
      'acme',
      '--since',
      iso(base),
      '--until',
      iso(base + hour),
    ])
    expect(none).toEqual({ code: 0, json: [r1], stderr: '' })
  })

  it('refuses a bad flag in one line, naming the flags', async () => {
    const line = async (...args: string[]) => {
      const res = await tessera(['verifications', ...args])
      return [res.code, res.stderr]
    }
    expect(await line('nobody')).toEqual([1, 'tessera: no such account: nobody\n'])
    expect(await line('acme', '--outcome', 'valid,nope')).toEqual([
      1,
      'tessera: resources are invalid: --outcome must be a comma-separated list of valid, ' +
        'malformed, invalid, expired, revoked, rate_limited, url_not_allowed, ip_not_allowed, ' +
        'scope_missing, credits_exhausted; not nope\n',
    ])
    expect(await line('acme', '--source', 'web')).toEqual([
      1,
      'tessera: resources are invalid: --source must be a comma-separated list of retrieve, api, ' +
        'introspection, verifier; not web\n',
    ])
    expect(await line('acme', '--token', 'abc')).toEqual([
      1,
      'tessera: resources are invalid: --token must be an id: c and 24 characters of a-z and 0-9\n',
    ])
    expect(await line('acme', '--since', 'yesterday')).toEqual([
      1,
      'tessera: resources are invalid: --since must be a duration back from now (15m, 2h, 7d, ' +
        '2w), a date (2026-12-10: its start, UTC) or an ISO 8601 timestamp; not yesterday\n',
    ])
    expect(await line('acme', '--until', 'soon')).toEqual([
      1,
      'tessera: resources are invalid: --until must be an ISO 8601 date or timestamp\n',
    ])
    expect(await line('acme', '--since', '30d')).toEqual([
      1,
      'tessera: resources are invalid: --since must be at most 8 days before --until: rows are ' +
        'kept 7 days (VERIFICATION_LOG_RETENTION_DAYS)\n',
    ])
    expect(await line('acme', '--since', iso(base), '--until', iso(base))).toEqual([
      1,
      'tessera: resources are invalid: --since must be before --until\n',
    ])
    expect(await line('acme', '--limit', '500')).toEqual([
      1,
      'tessera: limit must be an integer between 1 and 100\n',
    ])
    expect(await line()).toEqual([
      2,
      'tessera: usage: tessera verifications <username> [--token ID] [--outcome a,b] ' +
        '[--source a,b] [--since T] [--until T] [--limit N]\n',
    ])
    expect(await line('acme', '--outcomes', 'valid')).toEqual([
      2,
      'tessera: unknown option --outcomes for verifications; did you mean --outcome?\n',
    ])
  })
})
