import { parseArgs } from 'node:util'
import { AccountError } from '../accounts/service.js'
import { newAdminKey } from '../admin/keys.js'
import { type AuditAction, type AuditTarget, auditEvent, cliActor } from '../audit/events.js'
import { auditFilter } from '../audit/query.js'
import { configuredOrigin, readEnv, toConfig } from '../config.js'
import { type AppContext, createContext } from '../context.js'
import { auditRepo } from '../db/audit.js'
import { ApiError } from '../errors.js'
import { describeFailure } from '../failure.js'
import { MemberError } from '../people/members.js'
import { serve } from '../server.js'
import { formatSigningKeys, Keyring, newSigningKey, parseSigningKeys } from '../tokens/keyring.js'

const usage = `usage: tessera <command>

  serve                                       run the service (what npm start runs)
  account create <username> [--plan P] [--feature F]...
  account invite <username>                   a new dashboard setup link (voids older ones)
  token create <username> [--scopes a,b] [--note N] [--allowed-url U]...
  token roll <username> <token id> [--expires T]
                                              a new token in its place; the old string works
                                              until T (at most 24 hours ahead), else stops now
  member list <account>                       the people of an account, with their roles
  member add <account> <email> [--role R]     a one-time invitation link (7 days; role owner,
                                              developer (the default) or viewer)
  member set-role <account> <login> <role>    their sessions in the account end
  member remove <account> <login>             their sessions in the account end
  keys rotate                                 add a signing key
  admin-key create [--note N]                 a new operator key for /admin/v1, printed once
  admin-key revoke <id>                       the key stops working at once
  admin-key list                              every operator key (never its secret)
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

class UsageError extends Error {}
/** A command that cannot do what it was asked (an unknown id): one line, exit status 1. */
class CommandError extends Error {}

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      plan: { type: 'string' },
      feature: { type: 'string', multiple: true },
      scopes: { type: 'string' },
      note: { type: 'string' },
      'allowed-url': { type: 'string', multiple: true },
      action: { type: 'string' },
      events: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
      start: { type: 'string' },
      role: { type: 'string' },
      expires: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const [command, sub, arg] = positionals
  if (values.help || command === undefined) {
    process.stdout.write(`${usage}\n`)
    return
  }
  const config = toConfig(readEnv())
  if (command === 'serve') return serve(config)

  if (command === 'keys' && sub === 'rotate') {
    if (config.signingKeys) {
      // Keys from the environment cannot be written back: hand the operator the new value.
      const keys = [...parseSigningKeys(config.signingKeys), newSigningKey()]
      const added = keys[keys.length - 1]
      return print({ id: added?.id, SIGNING_KEYS: formatSigningKeys(keys) })
    }
    const { id } = Keyring.fromDataDir(config.dataDir).rotate()
    await withContext(config, (ctx) =>
      record(ctx, 'signing_key.added', { type: 'signing_key', id }),
    )
    return print({ id })
  }
  if (command === 'admin-key' && sub === 'create' && config.adminKeys !== undefined) {
    // As for SIGNING_KEYS: the environment cannot be written back; nothing is stored.
    const made = newAdminKey(Date.now())
    return print({ ...made, ADMIN_KEYS: `${config.adminKeys},${made.id}:${made.key}` })
  }

  const ctx = await createContext(config)
  try {
    if (command === 'migrate') return print({ migrated: true })
    if (command === 'admin-key' && sub === 'create' && arg === undefined) {
      const made = ctx.adminKeys.create(ctx.tokens.now(), values.note)
      await record(ctx, 'admin_key.created', { type: 'admin_key', id: made.id })
      return print(made)
    }
    if (command === 'admin-key' && sub === 'revoke' && arg !== undefined) {
      const revoked = ctx.adminKeys.revoke(arg, ctx.tokens.now())
      if (revoked === undefined) throw new CommandError(`no such admin key: ${arg}`)
      if (revoked.changed) await record(ctx, 'admin_key.revoked', { type: 'admin_key', id: arg })
      return print({ id: arg, revoked: revoked.revoked })
    }
    if (command === 'admin-key' && sub === 'list' && arg === undefined) {
      return print(ctx.adminKeys.list())
    }
    if (command === 'audit' && arg === undefined) {
      if (values.limit !== undefined && !/^0*([1-9][0-9]?|100)$/.test(values.limit)) {
        throw new ApiError('badLimit')
      }
      const limit = values.limit === undefined ? 100 : Number(values.limit)
      const { action, since, until, start } = values
      return print(
        await ctx.audit.list(auditFilter({ username: sub, action, since, until, start, limit })),
      )
    }
    if (command === 'webhook') {
      const done = await webhookCommand(ctx, sub, arg, values)
      if (done !== undefined) return print(done)
    }
    if (command === 'member') {
      const done = await memberCommand(ctx, config, positionals.slice(1), values.role)
      if (done !== undefined) return print(done)
    }
    const setupUrl = async (username: string) =>
      `${configuredOrigin(config.http)}/account/setup/${await ctx.holders.invite(username, cliActor)}`
    if (command === 'account' && sub === 'create' && arg !== undefined) {
      const account = await ctx.accounts.create(arg, values.plan, values.feature ?? [], cliActor)
      return print({ ...account, setupUrl: await setupUrl(account.username) })
    }
    if (command === 'account' && sub === 'invite' && arg !== undefined) {
      const account = await ctx.accounts.find(arg)
      if (account === undefined) throw new AccountError(`no such account: ${arg}`)
      return print({ username: account.username, setupUrl: await setupUrl(account.username) })
    }
    if (command === 'token' && sub === 'roll' && arg !== undefined && positionals[3]) {
      const account = await ctx.accounts.find(arg)
      if (account === undefined) throw new AccountError(`no such account: ${arg}`)
      const rolled = await ctx.tokens.roll(
        account,
        ctx.accounts.holder(account),
        positionals[3],
        { expires: values.expires },
        cliActor,
      )
      return print(rolled)
    }
    if (command === 'token' && sub === 'create' && arg !== undefined) {
      const account = await ctx.accounts.find(arg)
      if (account === undefined) throw new AccountError(`no such account: ${arg}`)
      const scopes =
        values.scopes
          ?.split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '') ?? []
      const token = await ctx.tokens.create(
        account,
        ctx.accounts.holder(account),
        {
          scopes,
          note: values.note,
          allowedUrls: values['allowed-url'] ?? null,
        },
        cliActor,
      )
      return print(token)
    }
    throw new UsageError(usage)
  } finally {
    await ctx.close()
  }
}

/** `limit` as the admin API takes it: 1-100, 100 when absent. */
function limitOption(limit: string | undefined) {
  if (limit !== undefined && !/^0*([1-9][0-9]?|100)$/.test(limit)) throw new ApiError('badLimit')
  return limit === undefined ? 100 : Number(limit)
}

/** `tessera webhook ...`: what it prints, or undefined for a command it does not know. */
async function webhookCommand(
  ctx: AppContext,
  sub: string | undefined,
  arg: string | undefined,
  values: { events?: string; limit?: string; start?: string },
): Promise<unknown> {
  const hooks = ctx.webhooks.service
  if (sub === 'list' && arg === undefined) {
    const all = []
    for (;;) {
      const page = await hooks.list(all.at(-1)?.id, 100)
      all.push(...page)
      if (page.length < 100) return all
    }
  }
  if (arg === undefined) return undefined
  if (sub === 'add') {
    const events = values.events
      ?.split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '')
    return hooks.create(arg, events, cliActor)
  }
  if (sub === 'remove') {
    await hooks.remove(arg, cliActor)
    return { id: arg, removed: true }
  }
  if (sub === 'ping') return hooks.ping(arg)
  if (sub === 'deliveries') return hooks.deliveries(arg, values.start, limitOption(values.limit))
  return undefined
}

/** `tessera member ...`: what it prints, or undefined for a command it does not know. */
async function memberCommand(
  ctx: AppContext,
  config: ReturnType<typeof toConfig>,
  [sub, account, a, b, ...rest]: string[],
  role: string | undefined,
): Promise<unknown> {
  if (account === undefined || rest.length > 0) return undefined
  const { members } = ctx
  if (sub === 'list' && a === undefined) return members.list(account)
  if (sub === 'add' && a !== undefined && b === undefined) {
    const made = await members.invite(account, { email: a, role: role ?? 'developer' }, cliActor)
    const origin = configuredOrigin(config.http)
    return {
      email: made.invitation.email,
      role: made.invitation.role,
      invitationUrl: `${origin}/account/invitations/${made.secret}`,
      expires: made.invitation.expires,
    }
  }
  if (sub === 'set-role' && a !== undefined && b !== undefined) {
    return members.setRole(account, a, b, cliActor)
  }
  if (sub === 'remove' && a !== undefined && b === undefined) {
    await members.remove(account, a, cliActor)
    return { account, login: a, removed: true }
  }
  return undefined
}

/** A change the CLI makes outside the services, written into the audit log. */
const record = (ctx: AppContext, action: AuditAction, target: AuditTarget) =>
  auditRepo.insert(ctx.db, auditEvent(ctx.tokens.now(), action, cliActor, target))

async function withContext(
  config: ReturnType<typeof toConfig>,
  use: (ctx: AppContext) => Promise<void>,
) {
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
      err instanceof UsageError ||
      err instanceof CommandError ||
      err instanceof AccountError ||
      err instanceof MemberError ||
      err instanceof ApiError ||
      (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    const text =
      err instanceof ApiError && err.details
        ? `${err.message}: ${err.details}`
        : (err as Error).message
    // Configuration and the world around (files, ports, the database): one line. A bug: its stack.
    const line = known ? text : (describeFailure(err) ?? (err as Error).stack)
    process.stderr.write(`tessera: ${line}\n`)
    return err instanceof UsageError ? 2 : 1
  }
}
