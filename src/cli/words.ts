import type { ParseArgsConfig } from 'node:util'

/** Every option the command line knows, as `parseArgs` reads it. */
export const options = {
  plan: { type: 'string' },
  feature: { type: 'string', multiple: true },
  scopes: { type: 'string' },
  scope: { type: 'string' },
  note: { type: 'string' },
  'allowed-url': { type: 'string', multiple: true },
  'expires-at': { type: 'string' },
  action: { type: 'string' },
  outcome: { type: 'string' },
  source: { type: 'string' },
  events: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  start: { type: 'string' },
  role: { type: 'string' },
  expires: { type: 'string' },
  token: { type: 'string' },
  refill: { type: 'string' },
  amount: { type: 'string' },
  day: { type: 'string' },
  'max-sk-lifetime-days': { type: 'string' },
  'pk-allowed-urls': { type: 'boolean' },
  'idle-days': { type: 'string' },
  'roll-grace-max-hours': { type: 'string' },
  workers: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options']

export type OptionName = keyof typeof options

/** What a command group reads of the command line. */
export interface Args {
  positionals: string[]
  values: {
    plan?: string
    feature?: string[]
    scopes?: string
    /** `admin-key create`: the operator key's scope. */
    scope?: string
    note?: string
    'allowed-url'?: string[]
    'expires-at'?: string
    action?: string
    /** `verifications`: comma-separated outcomes and sources. */
    outcome?: string
    source?: string
    events?: string
    since?: string
    until?: string
    limit?: string
    start?: string
    role?: string
    expires?: string
    token?: string
    refill?: string
    amount?: string
    day?: string
    'max-sk-lifetime-days'?: string
    'pk-allowed-urls'?: boolean
    'idle-days'?: string
    'roll-grace-max-hours'?: string
    workers?: string
  }
}

/**
 * The options some command cannot do without, with what each says in the one line that asks
 * for it: a token without a note shows in every list by its raw id, one without scopes can do
 * nothing.
 */
export const needs = {
  note: 'N (what the token is for)',
  scopes: 'a,b (at least one scope)',
} satisfies Partial<Record<OptionName, string>>

/** A command: the words that name it, its usage line, the options it takes and needs. */
export interface Command {
  words: string
  usage: string
  options: OptionName[]
  needs: (keyof typeof needs)[]
}

const command = (words: string, rest: string, ...taken: OptionName[]): Command => ({
  words,
  usage: `${words}${rest}`,
  options: taken,
  needs: [],
})

const credit = ['token'] as const

/** Every command, by its words; what `tessera --help` prints says what each does. */
export const commands: Command[] = [
  command('serve', ' [--workers N|auto]', 'workers'),
  command('account create', ' <username> [--plan P] [--feature F]...', 'plan', 'feature'),
  command('account invite', ' <username>'),
  {
    ...command(
      'token create',
      ' <username> --note N --scopes a,b [--allowed-url U]... [--expires-at T]',
      'note',
      'scopes',
      'allowed-url',
      'expires-at',
    ),
    needs: ['note', 'scopes'],
  },
  command('token list', ' <username>'),
  command('token roll', ' <username> <token id> [--expires T]', 'expires'),
  command('credits show', ' <username> [--token ID]', ...credit),
  command(
    'credits set',
    ' <username> <remaining> [--token ID] [--refill daily|monthly|none] [--amount N] [--day D]',
    ...credit,
    'refill',
    'amount',
    'day',
  ),
  command('credits increment', ' <username> <n> [--token ID]', ...credit),
  command('credits decrement', ' <username> <n> [--token ID]', ...credit),
  command('credits remove', ' <username> [--token ID]', ...credit),
  command('policy show', ' <username>'),
  command(
    'policy set',
    ' <username> [--max-sk-lifetime-days N] [--pk-allowed-urls] [--idle-days N] [--roll-grace-max-hours N]',
    'max-sk-lifetime-days',
    'pk-allowed-urls',
    'idle-days',
    'roll-grace-max-hours',
  ),
  command('ratelimits show', ' <username>'),
  command('ratelimits set', ' <username> <limits>|@<file>'),
  command('member list', ' <account>'),
  command('member add', ' <account> <email> [--role R]', 'role'),
  command('member set-role', ' <account> <login> <role>'),
  command('member remove', ' <account> <login>'),
  command('keys rotate', ''),
  command('admin-key create', ' --scope verifier|admin [--note N]', 'scope', 'note'),
  command('admin-key revoke', ' <id>'),
  command('admin-key list', ''),
  command(
    'audit',
    ' [<username>] [--action a,b] [--since T] [--until T] [--limit N] [--start ID]',
    'action',
    'since',
    'until',
    'limit',
    'start',
  ),
  command(
    'verifications',
    ' <username> [--token ID] [--outcome a,b] [--source a,b] [--since T] [--until T] [--limit N]',
    'token',
    'outcome',
    'source',
    'since',
    'until',
    'limit',
  ),
  command('webhook add', ' <url> [--events a,b]', 'events'),
  command('webhook list', ''),
  command('webhook remove', ' <id>'),
  command('webhook ping', ' <id>'),
  command('webhook deliveries', ' <id> [--limit N] [--start EVENT_ID]', 'limit', 'start'),
  command('migrate', ''),
]
