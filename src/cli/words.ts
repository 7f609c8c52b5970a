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

/** A command: the words that name it, its usage line and the options it takes. */
export interface Command {
  words: string
  usage: string
  options: OptionName[]
}

const command = (words: string, rest: string, ...taken: OptionName[]): Command => ({
  words,
  usage: `${words}${rest}`,
  options: taken,
})

const credit = ['token'] as const

/** Every command, by its words; what `tessera --help` prints says what each does. */
export const commands: Command[] = [
  command('serve', ' [--workers N|auto]', 'workers'),
  command('account create', ' <username> [--plan P] [--feature F]...', 'plan', 'feature'),
  command('account invite', ' <username>'),
  command(
    'token create',
    ' <username> [--scopes a,b] [--note N] [--allowed-url U]... [--expires-at T]',
    'scopes',
    'note',
    'allowed-url',
    'expires-at',
  ),
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
  command('webhook add', ' <url> [--events a,b]', 'events'),
  command('webhook list', ''),
  command('webhook remove', ' <id>'),
  command('webhook ping', ' <id>'),
  command('webhook deliveries', ' <id> [--limit N] [--start EVENT_ID]', 'limit', 'start'),
  command('migrate', ''),
]
