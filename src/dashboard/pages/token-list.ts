import type { FastifyInstance } from 'fastify'
import type { DashboardDeps } from '../deps.js'
import { holderOf, sendPage, textOf } from '../reply.js'
import { messageView } from '../views/auth.js'
import { type TokenFilter, tokensView } from '../views/token-list.js'
import { noticesOf } from './hygiene-data.js'

const listNotices: Record<string, string> = {
  deleted: 'Token deleted.',
  extended: 'Token extended.',
}

/** A note's longest: a longer search could match no token. */
const longestSearch = 1024

interface Cursors {
  start?: string
  before?: string
}

/**
 * The list's query (one string a name: the app's parser keeps the first): the page (`start`,
 * `before`: cursors of the listing) and the filter the search form sends (`q`, `usage`);
 * undefined for a filter no form of the page makes.
 */
export function listQuery(
  query: unknown,
): (Cursors & { done?: string; filter: TokenFilter }) | undefined {
  const { start, before, done, q, usage } = query as Partial<Record<string, string>>
  const search = (q ?? '').trim()
  if (search.length > longestSearch) return undefined
  if (usage !== undefined && usage !== '' && usage !== 'pk' && usage !== 'sk') return undefined
  const filter: TokenFilter = { search, ...(usage === 'pk' || usage === 'sk' ? { usage } : {}) }
  return { start, before, done, filter }
}

/** The tokens page: the account's tokens, 100 a page, searched by note or id, pk or sk. */
export function tokenListPage(app: FastifyInstance, { ctx }: DashboardDeps) {
  const { tokens } = ctx

  app.get('/', async (request, reply) => {
    const { account, signedIn } = holderOf(request)
    const asked = listQuery(request.query)
    if (asked === undefined) {
      const lines = ['This is not the address of a page of your tokens.']
      const back = { href: '/account', text: 'Access tokens' }
      return sendPage(reply, messageView('Request refused', lines, back), 422)
    }
    const { start, before, filter } = asked
    const page = await tokens.browse(account, {
      start,
      before,
      usage: filter.usage,
      search: filter.search === '' ? undefined : filter.search,
    })
    if (start === undefined && before === undefined) {
      // Created with the account, the default token is first anyway, unless clocks disagreed.
      const at = page.tokens.findIndex((t) => t.default)
      if (at > 0) page.tokens.unshift(...page.tokens.splice(at, 1))
    }
    const notice = textOf(listNotices, asked.done)
    const [lastUsed, leaked, notices] = await Promise.all([
      ctx.usage.lastUsed(page.tokens.map((t) => t.id)),
      ctx.leaks.kept(account),
      noticesOf(ctx, account),
    ])
    const now = tokens.now()
    const view = tokensView({ signedIn, ...page, lastUsed, now, notice, leaked, notices, filter })
    return sendPage(reply, view)
  })
}
