import type { AccountRecord } from '../../accounts/service.js'
import type { AppContext } from '../../context.js'
import type { Notice } from '../../hygiene/hygiene.js'
import type { TokenPolicy } from '../../token-policy.js'
import type { TokenView } from '../../tokens/service.js'
import type { NoticeShown } from '../views/notices.js'

const minuteMs = 60_000
const dayMs = 24 * 60 * minuteMs
/** What Extend gives a token the policy sets no longest life for. */
export const extendDays = 30

/**
 * The end Extend sets: now and the policy's longest life of an sk, else 30 days, to the minute
 * (within the policy however it rounds); none when that is no later than the token's end.
 */
export function extendTo(token: TokenView, policy: TokenPolicy, now: number): string | undefined {
  if (token.expiresAt === undefined) return undefined
  const days =
    token.usage === 'sk' && policy.maxSkLifetimeDays !== undefined
      ? policy.maxSkLifetimeDays
      : extendDays
  const to = Math.floor((now + days * dayMs) / minuteMs) * minuteMs
  return to > Date.parse(token.expiresAt) ? new Date(to).toISOString() : undefined
}

const byTime = (a: Notice, b: Notice) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)

/**
 * One notice a token, its soonest. A rolled token's old string ends at its retiring end (or its
 * own end of life, if sooner): that is its notice, never Extend (its successor carries the end
 * of life on, and is told and extended on its own line).
 */
export function oneEach(notices: readonly Notice[]): Notice[] {
  const of = new Map<string, Notice[]>()
  for (const n of notices) of.set(n.token.id, [...(of.get(n.token.id) ?? []), n])
  const one = [...of.values()].map((list) => {
    const [soonest, ...rest] = [...list].sort(byTime) as [Notice, ...Notice[]]
    const retiring = [soonest, ...rest].find((n) => n.kind === 'retiring')
    return retiring === undefined ? soonest : { ...retiring, at: soonest.at }
  })
  return one.sort(byTime)
}

/** What needs the account's attention soon (of one token, when given), with Extend's ends. */
export async function noticesOf(
  ctx: AppContext,
  account: AccountRecord,
  tokenId?: string,
): Promise<NoticeShown[]> {
  const upcoming = oneEach(await ctx.hygiene.upcoming(account.username))
  const { effective } = ctx.accounts.tokenPolicy(account)
  const now = ctx.tokens.now()
  return upcoming
    .filter((n) => tokenId === undefined || n.token.id === tokenId)
    .map((n) => {
      const to = n.kind === 'expiring' ? extendTo(n.token, effective, now) : undefined
      return to === undefined ? n : { ...n, extendTo: to }
    })
}
