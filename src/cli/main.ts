import { adminKeyEntry, newAdminKey } from '../admin/keys.js'
import { readEnv, toConfig } from '../config.js'
import { type AppContext, createContext } from '../context.js'
import { ApiError, personText } from '../errors.js'
import { describeFailure } from '../failure.js'
import { serve } from '../server.js'
import { formatSigningKeys, Keyring, newSigningKey, parseSigningKeys } from '../tokens/keyring.js'
import { readArgs, UsageError } from './args.js'
import {
  accountCommand,
  adminKeyCommand,
  auditCommand,
  CommandError,
  type Config,
  type Group,
  record,
  scopeOption,
  tokenCommand,
} from './commands.js'
import { creditsCommand } from './credits.js'
import { memberCommand } from './members.js'
import { policyCommand } from './policy.js'
import { ratelimitsCommand } from './ratelimits.js'
import { webhookCommand } from './webhooks.js'

const usage = `usage: tessera <command>

  serve [--workers N|auto]                    run the service (what npm start runs); N processes
                                              share the port (WORKERS, default 1)
  account create <username> [--plan P] [--feature F]...
  account invite <username>                   a new dashboard setup link (voids older ones)
  token create <username> [--scopes a,b] [--note N] [--allowed-url U]... [--expires-at T]
                                              T: the token's end of life: a date (2026-12-10,
                                              its start, 00:00 UTC), a duration from now (90m,
                                              12h, 30d, 2w) or an ISO 8601 timestamp
  token roll <username> <token id> [--expires T]
                                              a new token in its place; the old string works
                                              until T (as --expires-at; at most 24 hours
                                              ahead), else stops now
  credits show <username> [--token ID]        the credits of the account (or one of its tokens);
                                              without: {"account", "credits": null}
  credits set <username> <remaining> [--token ID] [--refill daily|monthly|none]
              [--amount N] [--day D]          a new balance from now; a refill sets it to N
                                              at 00:00 UTC (monthly: on day D, 1-28, default 1)
  credits increment|decrement <username> <n> [--token ID]
  credits remove <username> [--token ID]      no longer metered
  policy show <username>                      the account's token policy: own, plan's, effective
  policy set <username> [--max-sk-lifetime-days N] [--pk-allowed-urls] [--idle-days N]
             [--roll-grace-max-hours N]       replaces the account's own (none: no option)
  ratelimits show <username>                  the account's named rate limits: own, plan's,
                                              effective
  ratelimits set <username> <limits>|@<file>  replaces the account's own: a JSON list of
                                              {"name", "limit", "duration" (ms), "cost"?}
                                              ([]: none of its own)
  member list <account>                       the people of an account, with their roles
  member add <account> <email> [--role R]     a one-time invitation link (7 days; role owner,
                                              developer (the default) or viewer)
  member set-role <account> <login> <role>    their sessions in the account end
  member remove <account> <login>             their sessions in the account end
  keys rotate                                 add a signing key
  admin-key create --scope verifier|admin [--note N]
                                              a new operator key for /admin/v1, printed once;
                                              verifier: introspection, leases, usage reports,
                                              the event stream (for @tessera/verifier); admin:
                                              every route
  admin-key revoke <id>                       the key stops working at once
  admin-key list                              every operator key with its scope (never its
                                              secret)
  audit [<username>] [--action a,b] [--since T] [--until T] [--limit N] [--start ID]
                                              audit events, newest first (limit 1-100)
  webhook add <url> [--events a,b]            register a webhook endpoint; prints its secret once
  webhook list                                every webhook endpoint (never its secret)
  webhook remove <id>                         stop delivering to it
  webhook ping <id>                           post a test event now; prints the delivery
  webhook deliveries <id> [--limit N] [--start EVENT_ID]
                                              its deliveries with their attempts, newest first
  migrate                                     apply database migrations

Configuration comes from the environment (and .env), as for the server. Operator keys are kept
hashed in DATA_DIR/admin-keys.json; with ADMIN_KEYS set, they are that list instead, and
admin-key create prints the new value of ADMIN_KEYS to set on every instance.`

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

/** The commands that run on the services, by their first word. */
const groups = new Map<string, Group>([
  ['admin-key', adminKeyCommand],
  ['audit', auditCommand],
  ['webhook', webhookCommand],
  ['member', memberCommand],
  ['account', accountCommand],
  ['token', tokenCommand],
  ['credits', creditsCommand],
  ['policy', policyCommand],
  ['ratelimits', ratelimitsCommand],
])

async function run(argv: string[]): Promise<void> {
  const line = readArgs(argv)
  if (line.help) {
    process.stdout.write(`${usage}\n`)
    return
  }
  const { command, args } = line
  const [first] = args.positionals
  const { workers } = args.values
  const config = toConfig({ ...readEnv(), ...(workers === undefined ? {} : { WORKERS: workers }) })
  if (command.words === 'serve') return serve(config)
  if (command.words === 'keys rotate') return print(await rotateKeys(config))
  if (command.words === 'admin-key create' && config.adminKeys !== undefined) {
    // As for SIGNING_KEYS: the environment cannot be written back; nothing is stored.
    const made = newAdminKey(Date.now(), scopeOption(args.values.scope))
    const entry = adminKeyEntry(made.id, made.scope, made.key)
    return print({ ...made, ADMIN_KEYS: `${config.adminKeys},${entry}` })
  }
  const ctx = await createContext(config)
  try {
    if (command.words === 'migrate') return print({ migrated: true })
    const done = await groups.get(first as string)?.(ctx, config, args)
    // The words name a command, but not its arguments: its own usage line.
    if (done === undefined) throw new UsageError(`usage: tessera ${command.usage}`)
    print(done)
  } finally {
    await ctx.close()
  }
}

/** `tessera keys rotate`: a new signing key, in DATA_DIR or as the new SIGNING_KEYS. */
async function rotateKeys(config: Config) {
  if (config.signingKeys) {
    // Keys from the environment cannot be written back: hand the operator the new value.
    const keys = [...parseSigningKeys(config.signingKeys), newSigningKey()]
    const added = keys[keys.length - 1]
    return { id: added?.id, SIGNING_KEYS: formatSigningKeys(keys) }
  }
  const { id } = Keyring.fromDataDir(config.dataDir).rotate()
  await withContext(config, (ctx) => record(ctx, 'signing_key.added', { type: 'signing_key', id }))
  return { id }
}

async function withContext(config: Config, use: (ctx: AppContext) => Promise<void>) {
  const ctx = await createContext(config)
  try {
    await use(ctx)
  } finally {
    await ctx.close()
  }
}

export async function main(argv = process.argv.slice(2)): Promise<number> {
  try {
    await run(argv)
    return 0
  } catch (err) {
    const known =
      err instanceof UsageError || err instanceof CommandError || err instanceof ApiError
    // A service's refusal and a contract error say what the error table has them say.
    const text = err instanceof ApiError ? personText(err, 'line') : (err as Error).message
    // Configuration and the world around (files, ports, the database): one line. A bug: its stack.
    const line = known ? text : (describeFailure(err) ?? (err as Error).stack)
    process.stderr.write(`tessera: ${line}\n`)
    return err instanceof UsageError ? 2 : 1
  }
}
