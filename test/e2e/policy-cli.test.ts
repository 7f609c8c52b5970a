import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { main } from '../../src/cli/main.js'
import { tesseraVariables } from '../environment.js'

/** `tessera policy ...`, run in process (the same `main` as bin/tessera.js) on a fresh DATA_DIR. */

const dir = mkdtempSync(path.join(tmpdir(), 'tessera-policy-cli-'))
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

describe('tessera policy', () => {
  it('sets, shows and clears an account token policy, audited as the CLI', async () => {
    expect((await tessera(['account', 'create', 'acme'])).code).toBe(0)
    const empty = { own: {}, plan: {}, effective: {} }
    expect(await tessera(['policy', 'show', 'acme'])).toEqual({ code: 0, json: empty, stderr: '' })
    const policy = {
      maxSkLifetimeDays: 90,
      pkAllowedUrls: true,
      idleDays: 365,
      rollGraceMaxHours: 2,
    }
    const set = await tessera([
      'policy',
      'set',
      'acme',
      '--max-sk-lifetime-days',
      '90',
      '--pk-allowed-urls',
      '--idle-days',
      '365',
      '--roll-grace-max-hours',
      '2',
    ])
    expect(set).toEqual({ code: 0, json: { own: policy, plan: {}, effective: policy }, stderr: '' })
    expect((await tessera(['policy', 'show', 'acme'])).json.effective).toEqual(policy)
    // A token made without an end is refused now, with the policy's sentence.
    expect(
      await tessera(['token', 'create', 'acme', '--scopes', 'tokens:read', '--note', 'test']),
    ).toEqual({
      code: 1,
      json: undefined,
      stderr:
        "tessera: the account's token policy requires a secret token to end within 90 days: give --expires-at\n",
    })
    expect(await tessera(['policy', 'set', 'acme', '--idle-days', 'soon'])).toEqual({
      code: 1,
      json: undefined,
      stderr: 'tessera: --idle-days must be a whole number from 8 to 3650\n',
    })
    expect((await tessera(['policy', 'set', 'acme'])).json).toEqual(empty)
    const audit = await tessera(['audit', 'acme', '--action', 'token_policy.changed'])
    expect(
      audit.json.map((e: { actor: unknown; details: unknown }) => [e.actor, e.details]),
    ).toEqual([
      [{ type: 'cli' }, { policy: {}, before: policy }],
      [{ type: 'cli' }, { policy, before: {} }],
    ])
  })
})
