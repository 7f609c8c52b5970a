import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { cli, dataDir } from './cli-run.js'

/** Issue 45, item 9: a mistyped word gets one line naming it and the nearest word, exit 2. */

const dir = dataDir('cli-typos')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const commands =
  'serve, account, token, credits, policy, ratelimits, member, keys, admin-key, audit, verifications, webhook and migrate'

const cases: [string[], string][] = [
  [
    ['token', 'create', 'alice', '--scope', 'styles:read'],
    'unknown option --scope for token create; did you mean --scopes?',
  ],
  [
    ['admin-key', 'create', '--scopes', 'admin'],
    'unknown option --scopes for admin-key create; did you mean --scope?',
  ],
  [
    ['token', 'roll', 'alice', 'tk1', '--expires-at', '2h'],
    'unknown option --expires-at for token roll; did you mean --expires?',
  ],
  [
    ['credits', 'set', 'alice', '5', '--refil', 'daily'],
    'unknown option --refil for credits set; did you mean --refill?',
  ],
  [
    ['account', 'invite', 'alice', '--plan', 'pro'],
    'unknown option --plan for account invite; it takes none',
  ],
  [
    ['webhook', 'add', 'https://example.com', '--colour', 'red'],
    'unknown option --colour for webhook add; it takes --events',
  ],
  [['--version'], 'unknown option --version; tessera --help lists the commands and their options'],
  [['token', 'crate', 'alice'], 'unknown command token crate; did you mean token create?'],
  [['tokens', 'create', 'alice'], 'unknown command tokens; did you mean token?'],
  [
    ['member', 'delete', 'acme', 'bob'],
    'unknown command member delete; member takes list, add, set-role and remove',
  ],
  [['frobnicate'], `unknown command frobnicate; the commands are ${commands}`],
  [['token'], 'usage: tessera token create|list|roll ... (tessera --help)'],
  [
    ['token', 'create'],
    'usage: tessera token create <username> --note N --scopes a,b [--allowed-url U]... [--expires-at T]',
  ],
  [['token', 'create', 'alice', '--note'], '--note needs a value'],
  [
    ['token', 'create', 'alice', '--note', '--scopes', 'styles:read'],
    '--note needs a value; one starting with - goes as --note=--scopes',
  ],
  [['policy', 'set', 'alice', '--pk-allowed-urls=yes'], '--pk-allowed-urls takes no value'],
]

describe('a mistyped command line', () => {
  it.each(cases)('%j: one line, exit 2', async (args, line) => {
    const res = await cli(dir, ...args)
    expect(res).toEqual({ code: 2, stdout: '', stderr: `tessera: ${line}\n` })
  })

  it('prints the usage for --help, exit 0', async () => {
    const res = await cli(dir, 'token', 'create', '--help')
    expect(res.code).toBe(0)
    expect(res.stdout).toMatch(/^usage: tessera <command>\n/)
    expect(res.stderr).toBe('')
  })
})
