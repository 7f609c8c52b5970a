import type { AccountRecord } from '../db/repositories.js'
import { type TokenRecord, type TokenView, withToken } from '../db/token-document.js'
import { type SortBy, tokenPagesRepo } from '../db/token-pages.js'
import { fail } from '../errors.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import type { TokenRecords } from './records.js'

export interface ListQuery {
  usage?: 'pk' | 'sk'
  isDefault?: boolean
  limit: number
  sortby: SortBy
  start?: string
  /** Tessera: only this token's children. */
  parent?: string
}

/**
 * A page of the listing as the JSON array of the response, built from the stored documents:
 * `sk` entries as stored, `pk` entries with their token string added.
 */
export async function listPage(
  records: TokenRecords,
  account: AccountRecord,
  q: ListQuery,
): Promise<{ body: string; next?: string }> {
  const { username } = account
  let after: { at: string; id: string } | undefined
  if (q.start !== undefined) {
    const cursor = decodeCursor(q.start, username, q.sortby)
    if (cursor === undefined) return fail('badStart')
    after = cursor
  }
  const rows = await tokenPagesRepo.list(records.db, {
    username,
    usage: q.usage,
    isDefault: q.isDefault,
    sortby: q.sortby,
    after,
    limit: q.limit + 1,
    parent: q.parent,
  })
  const page = rows.slice(0, q.limit)
  // Entries as tokenPagesRepo.list makes them (see ListedEntry). Read in place: an object per
  // row here doubled the cost of a page.
  let document = ''
  const entries = page.map((entry) => {
    if (entry.startsWith('{')) {
      document = entry
      return entry
    }
    const keyEnd = entry.indexOf(' ')
    const idEnd = entry.indexOf(' ', keyEnd + 1)
    const id = entry.slice(keyEnd + 1, idEnd)
    const keyId = entry.slice(0, keyEnd)
    document = entry.slice(idEnd + 1)
    const token = records.tokenString({ id, usage: 'pk', username, keyId })
    return token === undefined ? document : withToken(document, token)
  })
  let next: string | undefined
  if (rows.length > q.limit && document !== '') {
    const last = JSON.parse(document) as TokenView
    next = encodeCursor({ username, sortby: q.sortby, at: last[q.sortby], id: last.id })
  }
  return { body: `[${entries.join(',')}]`, next }
}

/** Which page of the dashboard's listing, and of which tokens: one usage, a text in the note or id. */
export interface BrowseQuery {
  start?: string
  before?: string
  usage?: 'pk' | 'sk'
  search?: string
}

/**
 * A page of the account's tokens in created order, for people rather than clients: whole
 * objects, and cursors both ways. `start` and `before` are cursors of this listing; the same
 * cursors serve a listing narrowed by `usage` and `search`.
 */
export async function browsePage(
  records: TokenRecords,
  account: AccountRecord,
  page: BrowseQuery,
  limit: number,
): Promise<{ tokens: TokenView[]; next?: string; previous?: string }> {
  const { username } = account
  const position = (cursor: string | undefined) => {
    if (cursor === undefined) return undefined
    return decodeCursor(cursor, username, 'created') ?? fail('badStart')
  }
  const before = position(page.before)
  const after = before === undefined ? position(page.start) : undefined
  const { rows } = await tokenPagesRepo.browse(records.db, {
    username,
    after,
    before,
    usage: page.usage,
    search: page.search,
    limit: limit + 1,
  })
  const more = rows.length > limit
  const list = rows.slice(0, limit)
  if (before !== undefined) list.reverse()
  const cursor = (r: TokenRecord | undefined) =>
    r && encodeCursor({ username, sortby: 'created', at: r.created, id: r.id })
  return {
    tokens: list.map((r) => records.listed(r)),
    next: before !== undefined || more ? cursor(list.at(-1)) : undefined,
    previous: (before !== undefined ? more : after !== undefined) ? cursor(list[0]) : undefined,
  }
}
