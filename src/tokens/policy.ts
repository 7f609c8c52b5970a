import type { AccountRecord } from '../db/repositories.js'
import type { TokenRecord } from '../db/token-document.js'
import { fail } from '../errors.js'
import type { ScopeCatalog } from '../scopes/catalog.js'
import { isoTime } from '../time.js'
import { isEmptyPolicy, strictest, type TokenPolicy } from '../token-policy.js'

const dayMs = 86_400_000
const hourMs = 3_600_000

/**
 * The policy that holds for the account's tokens: the stricter of its owner's and its plan's.
 * Most accounts have neither: then the plan's own (empty) object, without building one.
 */
export function policyOf(
  catalog: ScopeCatalog,
  account: Pick<AccountRecord, 'plan' | 'policy'>,
): TokenPolicy {
  const plan = catalog.planPolicy(account.plan)
  if (account.policy === undefined || isEmptyPolicy(account.policy)) return plan
  return isEmptyPolicy(plan) ? account.policy : strictest(account.policy, plan)
}

const refuse = (sentence: string): never =>
  fail('tokenPolicy', `the account's token policy ${sentence}`)

const lastEnd = (policy: TokenPolicy, now: number) =>
  policy.maxSkLifetimeDays === undefined ? undefined : now + policy.maxSkLifetimeDays * dayMs

/** A new token (create) against the policy: a refusal (422 tokenPolicy) if it breaks it. */
export function holdNew(policy: TokenPolicy, record: TokenRecord, now: number): void {
  if (record.usage === 'sk') {
    const last = lastEnd(policy, now)
    if (last !== undefined) {
      const days = policy.maxSkLifetimeDays
      if (record.expiresAt == null) {
        refuse(`requires a secret token to end within ${days} days: give expiresAt`)
      } else if (record.expiresAt > last) {
        refuse(`allows a secret token ${days} days at most: expiresAt ${isoTime(last)} or sooner`)
      }
    }
  } else if (policy.pkAllowedUrls === true && !record.allowedUrls?.length) {
    refuse('requires a public token to have allowed URLs')
  }
}

/**
 * A change (update) against the policy. Only what the change makes looser is refused: a token
 * made before the policy keeps what it had (an sk without an end, a pk without URLs) through
 * changes that leave those alone, such as a form sending every field unchanged.
 */
export function holdChange(
  policy: TokenPolicy,
  before: Pick<TokenRecord, 'expiresAt' | 'allowedUrls'>,
  after: TokenRecord,
  now: number,
): void {
  if (after.usage === 'sk') {
    const last = lastEnd(policy, now)
    const end = after.expiresAt ?? null
    if (last === undefined || end === (before.expiresAt ?? null)) return
    const days = policy.maxSkLifetimeDays
    if (end === null) refuse(`requires a secret token to end within ${days} days: expiresAt stays`)
    else if (end > last) {
      refuse(`allows a secret token ${days} days at most: expiresAt ${isoTime(last)} or sooner`)
    }
  } else if (
    policy.pkAllowedUrls === true &&
    !after.allowedUrls?.length &&
    (before.allowedUrls?.length ?? 0) > 0
  ) {
    refuse('requires a public token to have allowed URLs')
  }
}

/** A roll's grace against the policy: its old string may work `rollGraceMaxHours` at most. */
export function holdGrace(policy: TokenPolicy, endsAt: number, now: number): void {
  const hours = policy.rollGraceMaxHours
  if (hours !== undefined && endsAt > now + hours * hourMs) {
    refuse(
      `allows a rolled token ${hours} hours of grace at most: expires ${isoTime(now + hours * hourMs)} or sooner`,
    )
  }
}

/**
 * The end of life of a roll's new token: its predecessor's, within the policy's longest for an
 * sk (a roll makes a new token, and a token without an end gets the longest the policy allows).
 */
export function rolledEnd(
  policy: TokenPolicy,
  old: Pick<TokenRecord, 'usage' | 'expiresAt'>,
  now: number,
): number | null {
  const end = old.expiresAt ?? null
  const last = old.usage === 'sk' ? lastEnd(policy, now) : undefined
  if (last === undefined) return end
  return end === null ? last : Math.min(end, last)
}
