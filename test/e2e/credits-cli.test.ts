import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { tesseraVariables } from '../environment.js'

/** `tessera credits ...`, run in process (the same `main` as bin/tessera.js) on a fresh DATA_DIR. */

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-credits-cli-'))
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

describe('tessera credits', () => {
  it('sets, shows, increments, decrements and removes credits', async () => {
    expect((await tessera(['account', 'create', 'acme'])).code).toBe(0)
    const set = await tessera([
      'credits',
      'set',
      'acme',
      '100',
      '--refill',
      'monthly',
      '--amount',
      '500',
      '--day',
      '3',
    ])
    expect(set.code).toBe(0)
    expect(set.json).toMatchObject({
      remaining: 100,
      balance: 100,
      refill: { interval: 'monthly', amount: 500, day: 3 },
    })
    expect(set.json.nextRefill).toMatch(/^\d{4}-\d{2}-03T00:00:00\.000Z$/)
    expect((await tessera(['credits', 'increment', 'acme', '20'])).json).toMatchObject({
      remaining: 120,
      balance: 120,
    })
    expect((await tessera(['credits', 'decrement', 'acme', '50'])).json).toMatchObject({
      remaining: 70,
      balance: 120,
    })
    expect((await tessera(['credits', 'show', 'acme'])).json).toMatchObject({ remaining: 70 })
    expect(await tessera(['credits', 'remove', 'acme'])).toEqual({
      code: 0,
      json: { removed: true },
      stderr: '',
    })
    expect(await tessera(['credits', 'show', 'acme'])).toEqual({
      code: 0,
      json: { account: 'acme', credits: null },
      stderr: '',
    })
    const audit = await tessera(['audit', 'acme', '--action', 'credits.changed'])
    expect(audit.json.map((e: { details: { operation: string } }) => e.details.operation)).toEqual([
      'remove',
      'decrement',
      'increment',
      'set',
    ])
    expect(audit.json[0].actor).toEqual({ type: 'cli' })
  })

  it('says what is wrong with a command line', async () => {
    const line = async (args: string[]) => {
      const res = await tessera(args)
      return [res.code, res.stderr]
    }
    expect(await line(['credits', 'set', 'acme', '1.5'])).toEqual([
      1,
      'tessera: resources are invalid: remaining must be a whole number of 0 or more\n',
    ])
    expect(await line(['credits', 'set', 'acme', '5', '--refill', 'weekly'])).toEqual([
      1,
      'tessera: resources are invalid: --refill must be daily, monthly or none\n',
    ])
    const before = (await tessera(['credits', 'show', 'acme'])).json
    for (const extra of [
      ['--amount', '5'],
      ['--day', '3'],
    ]) {
      expect(await line(['credits', 'set', 'acme', '5', '--refill', 'none', ...extra])).toEqual([
        1,
        'tessera: resources are invalid: --refill none takes no --amount or --day\n',
      ])
    }
    expect((await tessera(['credits', 'show', 'acme'])).json).toEqual(before)
    expect(await line(['credits', 'increment', 'acme', '0'])).toEqual([
      1,
      'tessera: resources are invalid: amount must be a whole number of 1 or more\n',
    ])
    expect(await line(['credits', 'show', 'nobody'])).toEqual([1, 'tessera: No such user\n'])
    expect(await line(['credits', 'show', 'acme', '--token', 'cnope'])).toEqual([
      1,
      'tessera: Not found\n',
    ])
    expect((await tessera(['credits', 'frobnicate', 'acme'])).code).toBe(2)
  })
})
