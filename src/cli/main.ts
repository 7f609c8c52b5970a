import { CommandError, readArgs, UsageError } from './args.js'

/*
 * This module loads only what reads the command line: each command imports what it runs when
 * it runs (`tessera --help` answers at once; a command on the database loads the services but
 * not the HTTP server; `serve` loads the server).
 */

const usage = `usage: tessera <command>

  serve [--workers N|auto]                    run the service (what npm start runs); N processes
                                              share the port (WORKERS, default 1)
  account create <username> [--plan P] [--feature F]...
  account invite <username>                   a new dashboard setup link (voids older ones)
  token create <username> --note N --scopes a,b [--allowed-url U]... [--expires-at T]
                                              N: what the token is for; at least one scope;
                                              T: the token's end of life: a date (2026-12-10,
                                              its start, 00:00 UTC), a duration from now (90m,
                                              12h, 30d, 2w) or an ISO 8601 timestamp
  token list <username>                       the account's tokens (pk with their strings)
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
  verifications <username> [--token ID] [--outcome a,b] [--source a,b] [--since T] [--until T]
                [--limit N]                   the account's verification log, newest first
                                              (limit 1-100); T: a date, an ISO 8601 timestamp
                                              or, for --since, a duration back (15m, 2h, 7d);
                                              by default the last 24 hours
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

async function run(argv: string[]): Promise<void> {
  const line = readArgs(argv)
  if (line.help) {
    process.stdout.write(`${usage}\n`)
    return
  }
  const { command, args } = line
  const { readEnv, toConfig } = await import('../config.js')
  const { workers } = args.values
  const config = toConfig({ ...readEnv(), ...(workers === undefined ? {} : { WORKERS: workers }) })
  if (command.words === 'serve') return (await import('../server.js')).serve(config)
  const { adminKeys, signingKeys } = config
  if (command.words === 'admin-key create' && adminKeys !== undefined) {
    return print((await import('./keys.js')).adminKeyInEnv(adminKeys, args.values.scope))
  }
  if (command.words === 'keys rotate' && signingKeys !== undefined) {
    return print(await (await import('./keys.js')).rotateKeys(config, async () => {}))
  }
  print(await (await import('./run.js')).runOnServices(command, args, config))
}

/** Why a command failed, in one line (a bug: its stack). */
async function failure(err: unknown): Promise<string> {
  if (err instanceof UsageError || err instanceof CommandError) return err.message
  const [{ ApiError, personText }, { describeFailure }] = await Promise.all([
    import('../errors.js'),
    import('../failure.js'),
  ])
  // A service's refusal and a contract error say what the error table has them say.
  if (err instanceof ApiError) return personText(err, 'line')
  // Configuration and the world around (files, ports, the database): one line.
  return describeFailure(err) ?? String((err as Error).stack)
}

export async function main(argv = process.argv.slice(2)): Promise<number> {
  try {
    await run(argv)
    return 0
  } catch (err) {
    process.stderr.write(`tessera: ${await failure(err)}\n`)
    return err instanceof UsageError ? 2 : 1
  }
}
