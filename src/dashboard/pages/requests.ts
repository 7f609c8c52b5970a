import type { FastifyInstance } from 'fastify'
import type { AccountRecord } from '../../accounts/service.js'
import type { AppContext } from '../../context.js'
import { ApiError } from '../../errors.js'
import { tokenIdPattern } from '../../tokens/ids.js'
import { type Outcome, outcomes } from '../../usage/outcomes.js'
import type { DashboardDeps } from '../deps.js'
import { holderOf, sendPage } from '../reply.js'
import {
  decodeVerificationCursor,
  encodeVerificationCursor,
  type VerificationCursor,
} from '../verification-cursor.js'
import { messageView } from '../views/auth.js'
import {
  defaultRequestTime,
  type RequestsFilter,
  type RequestTime,
  requestsView,
  requestTimes,
} from '../views/requests.js'
import { tokenName } from '../views/token-name.js'

export const requestsPageSize = 50
/**
 * The Token filter's choices: the account's first tokens by creation. A list longer than this
 * is no use as a select; a token past it is still offered when it is the one asked for.
 */
const selectableTokens = 500
const refusals = outcomes.filter((o) => o !== 'valid')

/** The filter and cursor of the query (the parser keeps one string a name), or undefined. */
export function requestsQuery(
  query: unknown,
): { filter: RequestsFilter; start?: VerificationCursor } | undefined {
  const q = query as Partial<Record<string, string>>
  const token = q.token ?? ''
  const outcome = q.outcome ?? ''
  const time = q.time ?? defaultRequestTime
  if (token !== '' && !tokenIdPattern.test(token)) return undefined
  if (outcome !== '' && outcome !== 'refused' && !outcomes.includes(outcome as Outcome)) {
    return undefined
  }
  if (!Object.hasOwn(requestTimes, time)) return undefined
  const start = q.start === undefined ? undefined : decodeVerificationCursor(q.start)
  if (q.start !== undefined && start === undefined) return undefined
  const filter = { token, outcome: outcome as RequestsFilter['outcome'], time: time as RequestTime }
  return { filter, ...(start === undefined ? {} : { start }) }
}

/** The tokens the filter offers, and the one asked for (404 when it is not the account's). */
async function tokenChoices(ctx: AppContext, account: AccountRecord, asked: string) {
  const { tokens } = await ctx.tokens.browse(account, {}, selectableTokens)
  if (asked !== '' && !tokens.some((t) => t.id === asked)) {
    tokens.push(await ctx.tokens.get(account, asked))
  }
  return tokens.map((t) => ({ id: t.id, name: tokenName(t) }))
}

/** The names of the tokens the rows name: those offered, else as they are now, if still there. */
async function namesOf(
  ctx: AppContext,
  account: AccountRecord,
  ids: Iterable<string>,
  known: readonly { id: string; name: string }[],
) {
  const names = new Map(known.map((t) => [t.id, t.name]))
  const missing = [...new Set(ids)].filter((id) => id !== '' && !names.has(id))
  const found = await Promise.all(
    missing.map((id) =>
      ctx.tokens.get(account, id).catch((err: unknown) => {
        if (err instanceof ApiError && err.statusCode === 404) return undefined
        throw err
      }),
    ),
  )
  for (const t of found) if (t !== undefined) names.set(t.id, tokenName(t))
  return names
}

/** The Requests page: the account's verification log, filtered, newest first, 50 a page. */
export function requestsPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  app.get('/requests', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const asked = requestsQuery(request.query)
    if (asked === undefined) {
      const lines = ['This is not the address of a page of your requests.']
      const back = { href: '/account/requests', text: 'Newest requests' }
      return sendPage(reply, messageView('Request refused', lines, back), 422)
    }
    const { filter, start } = asked
    const to = ctx.tokens.now()
    // Nothing of a former account of the same name (a deleted account's name is free again).
    const from = Math.max(to - requestTimes[filter.time].ms, Date.parse(account.created))
    const tokens = await tokenChoices(ctx, account, filter.token)
    const [found, dropped] = await Promise.all([
      ctx.verifications.list({
        account: account.username,
        from,
        to,
        ...(filter.token === '' ? {} : { token: filter.token }),
        ...(filter.outcome === '' ? {} : { outcomes: outcomeList(filter.outcome) }),
        ...(start === undefined ? {} : { before: start }),
        limit: requestsPageSize + 1,
      }),
      ctx.verifications.drops(from, to),
    ])
    const rows = found.slice(0, requestsPageSize)
    const last = rows.at(-1)
    const names = await namesOf(
      ctx,
      account,
      rows.map((r) => r.tokenId),
      tokens,
    )
    const view = requestsView({
      signedIn,
      filter,
      tokens,
      rows,
      names,
      ...(found.length > requestsPageSize && last !== undefined
        ? { next: encodeVerificationCursor(last) }
        : {}),
      older: start !== undefined,
      mode: ctx.config.usage.log.mode,
      dropped,
      retentionDays: ctx.config.usage.log.retentionDays,
    })
    return sendPage(reply, view)
  })
}

const outcomeList = (o: Exclude<RequestsFilter['outcome'], ''>): readonly string[] =>
  o === 'refused' ? refusals : [o]
