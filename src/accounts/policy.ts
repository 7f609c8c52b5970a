import { type Actor, auditEvent } from '../audit/events.js'
import { auditRepo } from '../db/audit.js'
import type { Db } from '../db/database.js'
import { type AccountRecord, accountsRepo } from '../db/repositories.js'
import { fail } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import {
  isEmptyPolicy,
  looserThan,
  readTokenPolicy,
  strictest,
  type TokenPolicy,
} from '../token-policy.js'
import type { TokenService } from '../tokens/service.js'

/** An account's token policy: its owner's, its plan's, and what holds (the stricter). */
export interface PolicyView {
  own: TokenPolicy
  plan: TokenPolicy
  effective: TokenPolicy
}

export function policyView(catalog: ScopeCatalog, account: AccountRecord): PolicyView {
  const own = account.policy ?? {}
  const plan = catalog.planPolicy(account.plan)
  return { own, plan: { ...plan }, effective: strictest(own, plan) }
}

/**
 * Sets the owner's token policy (the whole of it: a key left out has no rule of the owner's),
 * audited as `token_policy.changed` and told to every instance, which check creates against it
 * from then on. Refused (422 tokenPolicy) when it is not a policy, or sets a key looser than
 * the plan does (it would have no effect). Tokens made before keep working (docs/token-policy.md).
 */
export async function setPolicy(
  deps: { db: Db; catalog: ScopeCatalog; tokens: TokenService },
  account: AccountRecord,
  input: unknown,
  actor: Actor,
  changeName: string,
): Promise<PolicyView> {
  const own = readTokenPolicy(input)
  if (typeof own === 'string') return fail('tokenPolicy', own)
  const looser = looserThan(own, deps.catalog.planPolicy(account.plan))
  if (looser.length > 0) fail('tokenPolicy', looser.join('; '))
  const { username } = account
  const stored = isEmptyPolicy(own) ? null : own
  const details = { policy: own, before: account.policy ?? {} }
  const target = { type: 'account' as const, id: username }
  const event = auditEvent(
    deps.tokens.now(),
    'token_policy.changed',
    actor,
    target,
    username,
    details,
  )
  await deps.db.transaction().execute(async (trx) => {
    await accountsRepo.setPolicy(trx, username, stored)
    await auditRepo.insert(trx, event)
    await deps.tokens.notifyChanged(trx, [changeName])
  })
  deps.tokens.directory.invalidate(username)
  const changed: AccountRecord = { ...account }
  if (stored === null) delete changed.policy
  else changed.policy = stored
  return policyView(deps.catalog, changed)
}
