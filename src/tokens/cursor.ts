import type { SortBy } from '../db/token-pages.js'
import { tokenIdPattern } from './ids.js'

/**
 * The opaque `start` cursor of list: the (timestamp, id) position of the last token of a page,
 * bound to the account and the sort order. It names a position, not a row, so it stays valid
 * when that token is deleted.
 */
export interface Cursor {
  username: string
  sortby: SortBy
  at: string
  id: string
}

const isoShape = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.username, c.sortby, c.at, c.id])).toString('base64url')
}

/** The cursor, or undefined when `start` was not issued for this listing. */
export function decodeCursor(start: string, username: string, sortby: SortBy): Cursor | undefined {
  if (start.length > 512 || !/^[A-Za-z0-9_-]+$/.test(start)) return undefined
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(start, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length !== 4) return undefined
  const [u, s, at, id] = value
  if (u !== username || s !== sortby) return undefined
  if (typeof at !== 'string' || !isoShape.test(at)) return undefined
  if (typeof id !== 'string' || !tokenIdPattern.test(id)) return undefined
  return { username, sortby, at, id }
}
