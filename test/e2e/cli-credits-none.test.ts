import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { cli, dataDir, json } from './cli-run.js'

/** Issue 45, item 13: credits show of an account or token without credits is an answer. */

const dir = dataDir('cli-credits-none')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('tessera credits show without credits', () => {
  it('answers credits null, exit 0, for the account and for one of its tokens', async () => {
    const { defaultToken } = await json(dir, 'account', 'create', 'alice')
    expect(await cli(dir, 'credits', 'show', 'alice')).toEqual({
      code: 0,
      stdout: '{\n  "account": "alice",\n  "credits": null\n}\n',
      stderr: '',
    })
    expect(await json(dir, 'credits', 'show', 'alice', '--token', defaultToken.id)).toEqual({
      account: 'alice',
      token: defaultToken.id,
      credits: null,
    })
    // With credits, the balance as before; removed, none again.
    await json(dir, 'credits', 'set', 'alice', '10')
    expect(await json(dir, 'credits', 'show', 'alice')).toMatchObject({ remaining: 10 })
    await json(dir, 'credits', 'remove', 'alice')
    expect(await json(dir, 'credits', 'show', 'alice')).toEqual({ account: 'alice', credits: null })
  })

  it('still refuses an account or token that does not exist, exit 1', async () => {
    expect(await cli(dir, 'credits', 'show', 'nobody')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: No such user\n',
    })
    await json(dir, 'account', 'create', 'bob')
    expect(await cli(dir, 'credits', 'show', 'bob', '--token', 'cnope')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'tessera: Not found\n',
    })
  })
})
