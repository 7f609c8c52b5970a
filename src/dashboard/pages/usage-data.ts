import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AccountRecord } from '../../accounts/service.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import type { TokenView } from '../../tokens/service.js'
import { sendPage } from '../reply.js'
import { messageView } from '../views/auth.js'
import type { CreditFormValues } from '../views/credits.js'
import type { FormError } from '../views/forms.js'
import {
  type Bucket,
  countsOf,
  defaultPeriod,
  fill,
  isPeriodName,
  type Period,
  periodOf,
} from '../views/periods.js'
import { tokenName } from '../views/token-name.js'
import type { LimitedUse } from '../views/usage-limited.js'
import { rankTokens, type TokenUse } from '../views/usage-page.js'

/** The period a page's `?period=` asks for; undefined when it names none (a 422 page). */
export function periodAsked(request: FastifyRequest, now: number): Period | undefined {
  const asked = (request.query as { period?: unknown }).period ?? defaultPeriod
  return isPeriodName(asked) ? periodOf(asked, now) : undefined
}

/** The answer to a `?period=` that names no period: 422, and the way back. */
export const noSuchPeriod = (reply: FastifyReply, back: string) =>
  sendPage(
    reply,
    messageView(
      'Request refused',
      ['There is no such period: choose the last 24 hours or the last 30 days.'],
      { href: back, text: 'Back' },
    ),
    422,
  )

const rangeOf = (period: Period) => ({
  from: Date.parse(period.from),
  to: Date.parse(period.to),
  resolution: period.resolution,
})

/** Every bucket of the period for the account, or one of its tokens (zeros where none). */
export async function bucketsOf(
  ctx: AppContext,
  account: AccountRecord,
  period: Period,
  token?: string,
): Promise<Bucket[]> {
  // 24 or 30 buckets: one page of the series; none from a former account of the same name.
  const since = Date.parse(account.created)
  const range = { ...rangeOf(period), since, token, limit: 100 }
  const found = await ctx.usage.series(account.username, range)
  return fill(period, found.series)
}

/**
 * p50 and p99 of the request log's durations per bucket of the period (the outcome chart's
 * buckets), none before the account was created.
 */
export function latencyOf(ctx: AppContext, account: AccountRecord, period: Period) {
  const { from, to, resolution } = rangeOf(period)
  return ctx.verifications.latency({
    account: account.username,
    from: Math.max(from, Date.parse(account.created)),
    to,
    bucketMs: resolution === 'day' ? 86_400_000 : 3_600_000,
  })
}

/** The token of each id as it is now; a deleted one is simply absent. */
async function tokensNamed(ctx: AppContext, account: AccountRecord, ids: readonly string[]) {
  const found = await Promise.all(
    ids.map((id) =>
      ctx.tokens.get(account, id).catch((err: unknown) => {
        if (err instanceof ApiError && err.statusCode === 404) return undefined
        throw err
      }),
    ),
  )
  return new Map(found.filter((t): t is TokenView => t !== undefined).map((t) => [t.id, t]))
}

/**
 * The most used and the most refused tokens of the period, named as they are now, and what each
 * named limit refused (from the same sums: no other read).
 */
export async function topTokensOf(ctx: AppContext, account: AccountRecord, period: Period) {
  const since = Date.parse(account.created)
  const all = await ctx.usage.byToken(account.username, { ...rangeOf(period), since })
  const ranked = rankTokens(all.map((t) => ({ id: t.token, counts: countsOf(t.outcomes) })))
  const ids = [...new Set([...ranked.used, ...ranked.refused].map((t) => t.id))]
  const named = await tokensNamed(
    ctx,
    account,
    ids.filter((id) => id !== ''),
  )
  const name = (t: TokenUse): TokenUse => {
    const token = named.get(t.id)
    return token === undefined ? t : { ...t, name: tokenName(token) }
  }
  return {
    used: ranked.used.map(name),
    refused: ranked.refused.map(name),
    limited: limitedOf(all),
  }
}

/** The tokens' rate_limited by limit name, summed: the account's, the most refused first. */
function limitedOf(tokens: readonly { rate_limited_by?: Record<string, number> }[]): LimitedUse[] {
  const sums = new Map<string, number>()
  for (const t of tokens) {
    for (const [name, n] of Object.entries(t.rate_limited_by ?? {})) {
      sums.set(name, (sums.get(name) ?? 0) + n)
    }
  }
  return [...sums]
    .map(([name, count]) => ({ name, count }))
    .sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** The credits form as typed. */
export const creditForm = (f: URLSearchParams): CreditFormValues => ({
  remaining: (f.get('remaining') ?? '').trim(),
  refill: f.get('refill') ?? 'none',
  amount: (f.get('amount') ?? '').trim(),
  day: (f.get('day') ?? '').trim(),
})

export interface CreditChange {
  remaining: number
  refill: { interval: 'daily' | 'monthly'; amount: number; day?: number } | null
}

const whole = (text: string, least: number, most = Number.MAX_SAFE_INTEGER) =>
  /^\d{1,16}$/.test(text) && Number(text) >= least && Number(text) <= most
    ? Number(text)
    : undefined

/** The change the form asks for, or what is wrong with it (shown next to the form, 422). */
export function readCredits(v: CreditFormValues): CreditChange | FormError {
  const remaining = whole(v.remaining, 0)
  if (remaining === undefined) {
    return { message: 'Credits remaining must be a whole number, 0 or more.' }
  }
  if (v.refill === 'none') return { remaining, refill: null }
  if (v.refill !== 'daily' && v.refill !== 'monthly') {
    return { message: 'Refill must be No refill, Daily or Monthly.' }
  }
  const amount = whole(v.amount, 1)
  if (amount === undefined) {
    return { message: 'Refill amount must be a whole number, 1 or more.' }
  }
  if (v.refill === 'daily') return { remaining, refill: { interval: 'daily', amount } }
  const day = whole(v.day, 1, 28)
  if (day === undefined) {
    return { message: 'Refill day must be a day of the month from 1 to 28.' }
  }
  return { remaining, refill: { interval: 'monthly', amount, day } }
}

export const isFormError = (v: CreditChange | FormError): v is FormError => 'message' in v
