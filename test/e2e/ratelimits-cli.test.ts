import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { tesseraVariables } from '../environment.js'

/** `tessera ratelimits ...`, run in process (the same `main` as bin/tessera.js) on a fresh DATA_DIR. */

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-ratelimits-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

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
  vi.stubEnv('RATE_LIMIT_PER_MINUTE', '120')
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

const service = { name: 'requests', limit: 120, duration: 60_000 }
const requests = { name: 'requests', limit: 600, duration: 60_000 }
const daily = { name: 'daily', limit: 100_000, duration: 86_400_000, cost: 2 }
const usage = expect.stringMatching(/^tessera: usage: tessera/)

describe('tessera ratelimits', () => {
  it('sets, shows and clears an account’s rate limits, audited as the CLI', async () => {
    expect((await tessera(['account', 'create', 'acme'])).code).toBe(0)
    const none = { own: [], plan: [], effective: [service] }
    expect(await tessera(['ratelimits', 'show', 'acme'])).toEqual({
      code: 0,
      json: none,
      stderr: '',
    })
    const set = await tessera(['ratelimits', 'set', 'acme', JSON.stringify([requests, daily])])
    const view = { own: [requests, daily], plan: [], effective: [requests, daily] }
    expect(set).toEqual({ code: 0, json: view, stderr: '' })
    expect((await tessera(['ratelimits', 'show', 'acme'])).json).toEqual(view)

    // From a file, and as the API's body as well as a bare list.
    const file = path.join(dir, 'limits.json')
    writeFileSync(file, JSON.stringify({ limits: [daily] }))
    const fromFile = await tessera(['ratelimits', 'set', 'acme', `@${file}`])
    expect(fromFile.json).toEqual({ own: [daily], plan: [], effective: [service, daily] })

    expect(
      await tessera([
        'ratelimits',
        'set',
        'acme',
        '[{"name":"requests","limit":5,"duration":999}]',
      ]),
    ).toEqual({
      code: 1,
      json: undefined,
      stderr:
        'tessera: resources are invalid: limits[0].duration must be a whole number of milliseconds from 1000 to 86400000\n',
    })
    expect(await tessera(['ratelimits', 'set', 'acme', 'requests=5'])).toEqual({
      code: 1,
      json: undefined,
      stderr:
        'tessera: the limits are not JSON: give a list such as \'[{"name": "requests", "limit": 600, "duration": 60000}]\' or @file\n',
    })
    const missing = await tessera(['ratelimits', 'set', 'acme', `@${dir}/none.json`])
    expect([missing.code, missing.stderr]).toEqual([
      1,
      expect.stringMatching(new RegExp(`^tessera: cannot read ${dir}/none.json: ENOENT`)),
    ])
    expect(await tessera(['ratelimits', 'show', 'nobody'])).toEqual({
      code: 1,
      json: undefined,
      stderr: 'tessera: no such account: nobody\n',
    })
    for (const args of [['ratelimits', 'set', 'acme'], ['ratelimits', 'show'], ['ratelimits']]) {
      expect(await tessera(args)).toEqual({ code: 2, json: undefined, stderr: usage })
    }

    expect((await tessera(['ratelimits', 'set', 'acme', '[]'])).json).toEqual(none)
    const audit = await tessera(['audit', 'acme', '--action', 'ratelimits.changed'])
    expect(
      audit.json.map((e: { actor: unknown; details: unknown }) => [e.actor, e.details]),
    ).toEqual([
      [{ type: 'cli' }, { limits: [], before: [daily] }],
      [{ type: 'cli' }, { limits: [daily], before: [requests, daily] }],
      [{ type: 'cli' }, { limits: [requests, daily], before: [] }],
    ])
  })
})
