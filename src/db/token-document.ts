import { jsonString } from '../json.js'
import type { NamedLimit } from '../ratelimit/named.js'
import { isoTime } from '../time.js'

/** A stored permanent token (pk or sk); its string is derived, never stored. */
export interface TokenRecord {
  id: string
  username: string
  usage: 'pk' | 'sk'
  isDefault: boolean
  note: string
  scopes: string[]
  allowedUrls: string[] | null
  /** IP ranges it may be used from (Tessera); absent or null: anywhere. */
  allowedIps?: string[] | null
  /** Tessera: its end of life, epoch ms (TokenExpired from then on); absent or null: none. */
  expiresAt?: number | null
  /** Tessera: its own named rate limits (docs/ratelimits.md); absent or null: none. */
  ratelimits?: NamedLimit[] | null
  scopeless: boolean
  keyId: string
  created: string
  modified: string
  /** A rolled token's end, epoch ms: refused from then on (the wire object does not show it). */
  retiresAt?: number
  /** When it was reported leaked and kept (flagged), ISO 8601. */
  leaked?: string
  /** Made by a roll: the id of the first token of its line of rolls (see rollToken). */
  lineage?: string
  /** Tessera: a child token's parent (docs/machines.md); absent for any other token. */
  parent?: string
}

/** The token metadata object of the wire (specification 2.2). */
export interface TokenView {
  id: string
  usage: 'pk' | 'sk'
  client: 'api'
  default: boolean
  scopes: string[]
  note: string
  created: string
  modified: string
  allowedUrls?: string[]
  /** Tessera: the IP ranges it may be used from; absent when not restricted. */
  allowedIps?: string[]
  /** Tessera: its end of life, ISO 8601; absent when it has none. */
  expiresAt?: string
  /** Tessera: its own named rate limits; absent when it has none. */
  ratelimits?: NamedLimit[]
  /** Tessera: the id of the token it was made under (a child token); absent otherwise. */
  parent?: string
  token?: string
}

/** The wire object of a record, without its token string; `allowedUrls` only when restricted. */
export function tokenView(record: TokenRecord): TokenView {
  const view: TokenView = {
    id: record.id,
    usage: record.usage,
    client: 'api',
    default: record.isDefault,
    scopes: record.scopes,
    note: record.note,
    created: record.created,
    modified: record.modified,
  }
  if (record.allowedUrls !== null) view.allowedUrls = record.allowedUrls
  if (record.allowedIps != null) view.allowedIps = record.allowedIps
  if (record.expiresAt != null) view.expiresAt = isoTime(record.expiresAt)
  if (record.ratelimits != null) view.ratelimits = record.ratelimits
  if (record.parent !== undefined) view.parent = record.parent
  return view
}

/**
 * `JSON.stringify(tokenView(record))`, written by hand (see jsonString): the document a create
 * stores and answers with. Keys in tokenView's order; test/unit/creates-json.test.ts checks that
 * the texts are the same, test/http/answer-schemas.test.ts that they fit the response schema.
 */
export function tokenDocument(r: TokenRecord): string {
  let text = `{"id":${jsonString(r.id)},"usage":${jsonString(r.usage)},"client":"api","default":${r.isDefault},"scopes":${jsonArray(r.scopes)},"note":${jsonString(r.note)},"created":${jsonString(r.created)},"modified":${jsonString(r.modified)}`
  if (r.allowedUrls !== null) text += `,"allowedUrls":${jsonArray(r.allowedUrls)}`
  if (r.allowedIps != null) text += `,"allowedIps":${jsonArray(r.allowedIps)}`
  if (r.expiresAt != null) text += `,"expiresAt":${jsonString(isoTime(r.expiresAt))}`
  if (r.ratelimits != null) text += `,"ratelimits":${JSON.stringify(r.ratelimits)}`
  if (r.parent !== undefined) text += `,"parent":${jsonString(r.parent)}`
  return `${text}}`
}

function jsonArray(list: string[]): string {
  let text = '['
  for (let i = 0; i < list.length; i++) {
    text += `${i === 0 ? '' : ','}${jsonString(list[i] as string)}`
  }
  return `${text}]`
}

/** Adds `token` to a stored document (a JSON object) without parsing it again. */
export const withToken = (document: string, token: string) =>
  `${document.slice(0, -1)},"token":${jsonString(token)}}`
