import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { cli, dataDir, json } from './cli-run.js'

/**
 * Issue 45, items 10 and 8 (the CLI's half): `--expires-at` takes a date (its start in UTC) and
 * a duration from now as well as an ISO 8601 timestamp, and refusals name the flag.
 */

const dir = dataDir('cli-expires')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const dayMs = 86_400_000

describe('tessera token create --expires-at', () => {
  it('takes a date as its start (00:00 UTC), a duration from now and a timestamp', async () => {
    await json(dir, 'account', 'create', 'alice')
    const year = new Date().getUTCFullYear() + 1
    const create = (end: string) =>
      json(
        dir,
        'token',
        'create',
        'alice',
        '--scopes',
        'styles:read',
        '--note',
        end,
        '--expires-at',
        end,
      )

    expect((await create(`${year}-12-10`)).expiresAt).toBe(`${year}-12-10T00:00:00.000Z`)
    expect((await create(`${year}-03-01T12:30:00+02:00`)).expiresAt).toBe(
      `${year}-03-01T10:30:00.000Z`,
    )
    for (const [text, ms] of [
      ['30d', 30 * dayMs],
      ['12h', 12 * 3_600_000],
      ['90m', 90 * 60_000],
      ['2w', 14 * dayMs],
    ] as const) {
      const before = Date.now()
      const made = await create(text)
      const after = Date.now()
      const at = Date.parse(made.expiresAt)
      expect(at).toBeGreaterThanOrEqual(before + ms)
      expect(at).toBeLessThanOrEqual(after + ms)
    }
  })

  it('refuses what is none of them, and names --expires-at in the service’s refusals', async () => {
    await json(dir, 'account', 'create', 'bob')
    const create = (end: string) =>
      cli(
        dir,
        'token',
        'create',
        'bob',
        '--scopes',
        'styles:read',
        '--expires-at',
        end,
        '--note',
        'test',
      )
    expect(await create('soon')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'tessera: resources are invalid: --expires-at must be a date (2026-12-10: its start, UTC), ' +
        'a duration from now (90m, 12h, 30d, 2w) or an ISO 8601 timestamp; not soon\n',
    })
    expect(await create('2026-02-30')).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/not 2026-02-30\n$/),
    })
    expect(await create('2020-01-01')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: resources are invalid: --expires-at must be in the future\n',
    })
  })

  it('names --expires-at in the account’s token policy’s refusals', async () => {
    await json(dir, 'account', 'create', 'carol')
    await json(dir, 'policy', 'set', 'carol', '--max-sk-lifetime-days', '30')
    const create = (...end: string[]) =>
      cli(dir, 'token', 'create', 'carol', '--scopes', 'tokens:read', ...end, '--note', 'test')
    expect(await create()).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "tessera: the account's token policy requires a secret token to end within 30 days: give --expires-at\n",
    })
    const tooLate = await create('--expires-at', '60d')
    expect(tooLate.code).toBe(1)
    expect(tooLate.stderr).toMatch(
      /^tessera: the account's token policy allows a secret token 30 days at most: --expires-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z or sooner\n$/,
    )
    expect((await create('--expires-at', '2w')).code).toBe(0)
    expect(await cli(dir, 'policy', 'set', 'carol', '--idle-days', 'soon')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: --idle-days must be a whole number from 8 to 3650\n',
    })
  })

  it('takes a duration for token roll --expires too, and says so in the help', async () => {
    const { defaultToken } = await json(dir, 'account', 'create', 'dave')
    expect(await cli(dir, 'token', 'roll', 'dave', defaultToken.id, '--expires', '2d')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: expires is more than 24 hours in the future\n',
    })
    const rolled = await cli(dir, 'token', 'roll', 'dave', defaultToken.id, '--expires', '90m')
    expect(rolled.code).toBe(0)
    expect(JSON.parse(rolled.stdout).id).not.toBe(defaultToken.id)
    const help = (await cli(dir, '--help')).stdout
    expect(help).toContain('a date (2026-12-10,\n')
    expect(help).toContain('a duration from now (90m,\n')
  })
})
