import type { EntryCache } from './entry-cache.js'
import type { SseEvent } from './sse.js'

/**
 * Events after which cached answers of a token (target.id; for token.rolled the old token,
 * details.previous) or an account are dropped.
 */
const tokenActions = new Set(['token.updated', 'token.deleted', 'token.rolled'])
const accountActions = new Set([
  'account.changed',
  'account.disabled',
  'account.enabled',
  'account.deleted',
  // An account's own named rate limits: its answers list other limits now.
  'ratelimits.changed',
])

/**
 * Drops what an event of Tessera's stream makes outdated: a token's answers (token.updated,
 * token.deleted: target.id), an account's (account.*, ratelimits.changed: account), those
 * credits.changed names, or everything (reset, or an event of those kinds that cannot be read).
 * Other events change no answer.
 */
export function invalidate(
  cache: EntryCache,
  event: SseEvent,
  onCredits?: (account: string, token: string | undefined) => void,
): void {
  if (event.event === 'credits.changed') {
    creditsChanged(cache, event.data, onCredits)
    return
  }
  const isToken = tokenActions.has(event.event)
  if (!isToken && !accountActions.has(event.event)) {
    if (event.event === 'reset') cache.clear()
    return
  }
  const key = keyOf(event.data, isToken, event.event === 'token.rolled')
  if (key === undefined) cache.clear()
  else if (isToken) cache.dropToken(key)
  else cache.dropAccount(key)
}

/** The token id (target.id) or the account an event names; undefined if it names none. */
function keyOf(json: string, isToken: boolean, rolled: boolean): string | undefined {
  let data: { target?: { id?: unknown }; account?: unknown; details?: { previous?: unknown } }
  try {
    data = JSON.parse(json)
  } catch {
    return undefined
  }
  const key = rolled
    ? data?.details?.previous
    : isToken
      ? data?.target?.id
      : (data?.account ?? data?.target?.id)
  return typeof key === 'string' ? key : undefined
}

/**
 * `credits.changed`, an audit event `{action, target: {type: 'token' | 'account', id}, account,
 * details, ...}`: a metered answer (whether credits apply) may be outdated, and a balance known
 * empty may not be any more. A token's balance names the token (target.id); an account's, all
 * of the account.
 */
function creditsChanged(
  cache: EntryCache,
  json: string,
  onCredits?: (account: string, token: string | undefined) => void,
): void {
  let data: { account?: unknown; target?: { type?: unknown; id?: unknown } }
  try {
    data = JSON.parse(json)
  } catch {
    data = {}
  }
  const account = data?.account
  const id = data?.target?.type === 'token' ? data.target.id : undefined
  if (typeof account !== 'string' || (id !== undefined && typeof id !== 'string')) {
    cache.clear()
    return
  }
  const token = id as string | undefined
  if (token === undefined) cache.dropAccount(account)
  else cache.dropToken(token)
  onCredits?.(account, token)
}
