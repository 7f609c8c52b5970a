import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, accountsRepo } from '../db/repositories.js'
import { fail } from '../errors.js'
import { type NamedLimit, readNamedLimits } from '../ratelimit/named.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import type { TokenService } from '../tokens/service.js'

/** An account's named rate limits: its own, its plan's, and those in force (docs/ratelimits.md). */
export interface RatelimitView {
  own: NamedLimit[]
  plan: NamedLimit[]
  effective: NamedLimit[]
}

/**
 * What resolves the limits in force (the checkpoint's LimitBook): the view shows what is
 * enforced, the service's `requests` replaced by the plan's, replaced by the account's own.
 */
export interface LimitResolver {
  effective(account: AccountRecord): NamedLimit[]
}

export function ratelimitView(
  catalog: ScopeCatalog,
  book: LimitResolver,
  account: AccountRecord,
): RatelimitView {
  const own = account.ratelimits ?? []
  return { own, plan: [...catalog.planLimits(account.plan)], effective: book.effective(account) }
}

/** `{"limits": [...]}`, or the sentence that says what is wrong with it. */
function readBody(input: unknown): NamedLimit[] | string {
  const body = typeof input === 'object' && !Array.isArray(input) ? input : null
  if (body === null || Object.keys(body).some((k) => k !== 'limits')) {
    return 'the body must be {"limits": [...]}'
  }
  return readNamedLimits((body as { limits?: unknown }).limits)
}

/**
 * Replaces the account's own limits as a whole (an empty list: none of its own, its plan's
 * hold), audited and sent as `ratelimits.changed`; every instance applies them from its next
 * request once the change feed tells it (the account record is read anew). Refused, changing
 * nothing, with a sentence that names the field (422).
 */
export async function setRatelimits(
  deps: { db: Db; catalog: ScopeCatalog; tokens: TokenService; book: LimitResolver },
  account: AccountRecord,
  input: unknown,
  actor: Actor,
  changeName: string,
): Promise<RatelimitView> {
  const limits = readBody(input)
  if (typeof limits === 'string') return fail('invalidResources', limits)
  const { username } = account
  const details = { limits, before: account.ratelimits ?? [] }
  const target = { type: 'account' as const, id: username }
  const now = deps.tokens.now()
  const event = auditEvent(now, 'ratelimits.changed', actor, target, username, details)
  const stored = limits.length === 0 ? null : limits
  await deps.db.transaction().execute(async (trx) => {
    await accountsRepo.setRatelimits(trx, username, stored)
    await auditRepo.insert(trx, event)
    await deps.tokens.notifyChanged(trx, [changeName])
  })
  deps.tokens.directory.invalidate(username)
  const changed: AccountRecord = { ...account }
  if (stored === null) delete changed.ratelimits
  else changed.ratelimits = stored
  return ratelimitView(deps.catalog, deps.book, changed)
}
