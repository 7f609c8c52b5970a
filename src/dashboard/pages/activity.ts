import type { FastifyInstance } from 'fastify'
import type { AccountRecord } from '../../accounts/service.js'
import { ApiError } from '../../errors.js'
import type { TokenView } from '../../tokens/service.js'
import type { DashboardDeps } from '../deps.js'
import { holderOf, sendPage } from '../reply.js'
import { activityView } from '../views/activity.js'
import { messageView } from '../views/auth.js'

export const activityPageSize = 50
/** An event id: the only thing `before` may be. */
const eventIdPattern = /^[0-9a-z]{1,32}$/

/** The Activity page: the account's audit events, newest first, 50 a page. */
export function activityPages(app: FastifyInstance, { ctx }: DashboardDeps) {
  /** The tokens the events name, as they are now; a deleted one is simply absent. */
  const tokensNamed = async (account: AccountRecord, ids: Set<string>) => {
    const found = await Promise.all(
      [...ids].map((id) =>
        ctx.tokens.get(account, id).catch((err: unknown) => {
          if (err instanceof ApiError && err.statusCode === 404) return undefined
          throw err
        }),
      ),
    )
    return new Map(found.filter((t): t is TokenView => t !== undefined).map((t) => [t.id, t]))
  }

  app.get('/activity', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const { before } = request.query as { before?: unknown }
    if (before !== undefined && (typeof before !== 'string' || !eventIdPattern.test(before))) {
      const lines = ['This is not the address of a page of your activity.']
      const back = { href: '/account/activity', text: 'Newest events' }
      return sendPage(reply, messageView('Request refused', lines, back), 422)
    }
    const found = await ctx.audit.list({
      username: account.username,
      // A username freed by a deleted account may be taken again: its history is not this one's.
      since: account.created,
      before,
      limit: activityPageSize + 1,
    })
    const events = found.slice(0, activityPageSize)
    const ids = new Set<string>()
    for (const e of events) if (e.target.type === 'token' && e.target.id) ids.add(e.target.id)
    const view = activityView({
      signedIn,
      events,
      tokens: await tokensNamed(account, ids),
      next: found.length > activityPageSize ? events.at(-1)?.id : undefined,
      older: before !== undefined,
      retentionDays: ctx.config.auditRetentionDays,
    })
    return sendPage(reply, view)
  })
}
