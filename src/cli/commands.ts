import type { AuditAction, AuditTarget } from '../audit/events.js'
import { auditEvent, cliActor } from '../audit/events.js'
import { auditFilter } from '../audit/query.js'
import { configuredOrigin, type toConfig } from '../config.js'
import type { AppContext } from '../context.js'
import { auditRepo } from '../db/audit.js'
import { ApiError } from '../errors.js'
import { CommandError } from './args.js'
import { endOption, inFlags } from './ends.js'
import { scopeOption } from './keys.js'
import type { Args } from './words.js'

export type Config = ReturnType<typeof toConfig>

/** A command group: what it prints, or undefined for a command it does not know. */
export type Group = (ctx: AppContext, config: Config, args: Args) => Promise<unknown>

/** A change the CLI makes outside the services, written into the audit log. */
export const record = (
  ctx: AppContext,
  action: AuditAction,
  target: AuditTarget,
  details?: Record<string, unknown>,
) =>
  auditRepo.insert(
    ctx.db,
    auditEvent(ctx.tokens.now(), action, cliActor, target, undefined, details),
  )

/** `limit` as the admin API takes it: 1-100, 100 when absent. */
export function limitOption(limit: string | undefined) {
  if (limit !== undefined && !/^0*([1-9][0-9]?|100)$/.test(limit)) throw new ApiError('badLimit')
  return limit === undefined ? 100 : Number(limit)
}

/** `tessera admin-key ...` with keys kept in DATA_DIR (ADMIN_KEYS: see main.ts). */
export const adminKeyCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, sub, arg] = positionals
  if (sub === 'create' && arg === undefined) {
    const made = ctx.adminKeys.create(ctx.tokens.now(), scopeOption(values.scope), values.note)
    await record(
      ctx,
      'admin_key.created',
      { type: 'admin_key', id: made.id },
      { scope: made.scope },
    )
    return made
  }
  if (sub === 'revoke' && arg !== undefined) {
    const revoked = ctx.adminKeys.revoke(arg, ctx.tokens.now())
    if (revoked === undefined) throw new CommandError(`no such admin key: ${arg}`)
    if (revoked.changed) await record(ctx, 'admin_key.revoked', { type: 'admin_key', id: arg })
    return { id: arg, revoked: revoked.revoked }
  }
  if (sub === 'list' && arg === undefined) return ctx.adminKeys.list()
  return undefined
}

/** `tessera audit [<username>] ...`: a page of audit events, newest first. */
export const auditCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, username, arg] = positionals
  if (arg !== undefined) return undefined
  const limit = limitOption(values.limit)
  const { action, since, until, start } = values
  return ctx.audit.list(auditFilter({ username, action, since, until, start, limit }))
}

/** The account a command names, which must exist. */
async function accountNamed(ctx: AppContext, username: string) {
  const account = await ctx.accounts.find(username)
  if (account === undefined) throw new ApiError('noSuchUser', `no such account: ${username}`)
  return account
}

const setupUrl = async (ctx: AppContext, config: Config, username: string) =>
  `${configuredOrigin(config.http)}/account/setup/${await ctx.holders.invite(username, cliActor)}`

/** `tessera account create|invite <username>`. */
export const accountCommand: Group = async (ctx, config, { positionals, values }) => {
  const [, sub, arg] = positionals
  if (arg === undefined) return undefined
  if (sub === 'create') {
    const account = await ctx.accounts.create(arg, values.plan, values.feature ?? [], cliActor)
    return { ...account, setupUrl: await setupUrl(ctx, config, account.username) }
  }
  if (sub === 'invite') {
    const account = await accountNamed(ctx, arg)
    return { username: account.username, setupUrl: await setupUrl(ctx, config, account.username) }
  }
  return undefined
}

/** Every token of the account, page by page, as the API lists them. */
async function everyToken(ctx: AppContext, username: string) {
  const account = await accountNamed(ctx, username)
  const all: unknown[] = []
  let start: string | undefined
  do {
    const page = await ctx.tokens.list(account, { limit: 100, sortby: 'created', start })
    all.push(...(JSON.parse(page.body) as unknown[]))
    start = page.next
  } while (start !== undefined)
  return all
}

/** `tessera token create|list|roll <username> ...`: the API's field names said as the flags. */
export const tokenCommand: Group = async (ctx, _config, { positionals, values }) => {
  const [, sub, arg, tokenId, extra] = positionals
  if (arg === undefined || extra !== undefined) return undefined
  if (sub === 'list') return tokenId === undefined ? everyToken(ctx, arg) : undefined
  const now = ctx.tokens.now()
  if (sub === 'roll' && tokenId) {
    const account = await accountNamed(ctx, arg)
    const holder = ctx.accounts.holder(account)
    const expires = endOption('--expires', values.expires, now)
    const roll = () => ctx.tokens.roll(account, holder, tokenId, { expires }, cliActor)
    return inFlags({ expires: '--expires' }, roll)
  }
  if (sub !== 'create' || tokenId !== undefined) return undefined
  const account = await accountNamed(ctx, arg)
  const scopes =
    values.scopes
      ?.split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '') ?? []
  const input = {
    scopes,
    note: values.note,
    allowedUrls: values['allowed-url'] ?? null,
    expiresAt: endOption('--expires-at', values['expires-at'], now),
  }
  const create = () => ctx.tokens.create(account, ctx.accounts.holder(account), input, cliActor)
  return inFlags({ expiresAt: '--expires-at' }, create)
}
